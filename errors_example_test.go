package wgdelegate_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/wgdelegate/wgdelegate"
)

// classify sorts an error from Load or Execute with the root package's
// error values and types alone.
func classify(err error) string {
	var (
		fe *wgdelegate.FormatError
		nd *wgdelegate.NoDelegateError
		pe *wgdelegate.PlanError
		ue *wgdelegate.UnsupportedError
		ie *wgdelegate.InputError
	)
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, wgdelegate.ErrUnknownFormat):
		return "not a model file"
	case errors.As(err, &fe):
		return fmt.Sprintf("malformed file at byte %d: %v (truncated: %t)", fe.Off, fe.Err, errors.Is(err, wgdelegate.ErrTruncated))
	case errors.As(err, &nd):
		return fmt.Sprintf("exported for another backend: %v", nd.Have)
	case errors.As(err, &pe):
		return "needs the ExecuTorch runtime: " + pe.Kind
	case errors.As(err, &ue):
		return fmt.Sprintf("ops not implemented yet: %v", ue.Ops)
	case errors.As(err, &ie):
		return "bad input: " + ie.Msg
	case errors.Is(err, wgdelegate.ErrClosed):
		return "model closed"
	}
	return "other: " + err.Error()
}

// Errors from every layer (file format, plan, graph, device) are
// re-exported by the root package, so one import is enough to tell them
// apart with errors.Is and errors.As.
func Example_errors() {
	ctx := context.Background()
	for _, file := range []string{
		"GGUF\x03\x00\x00\x00",                     // another format
		"\x00\x00\x00\x00ET12eh00\x10\x00\x00\x00", // eh00 header length 16, below 24
		"\x00\x00\x00\x00ET12eh00\x20\x00\x00\x00", // a 32-byte eh00 header cut short
	} {
		_, err := wgdelegate.Load(ctx, []byte(file))
		fmt.Println(classify(err))
	}

	pte, ptd := transposeModel()
	m, err := wgdelegate.Load(ctx, pte, wgdelegate.WithData(ptd))
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.Execute(ctx)
	fmt.Println(classify(err))
	m.Close()
	_, err = m.Execute(ctx, wgdelegate.FromFloat32([]int64{2, 3}, make([]float32, 6)))
	fmt.Println(classify(err))
	// Output:
	// not a model file
	// malformed file at byte 12: bad header (truncated: false)
	// malformed file at byte 8: truncated data (truncated: true)
	// bad input: the model takes 1 input(s) (float32 [2 3]), got 0
	// model closed
}

package serialization_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// A graph computing out = x + w with a named constant w, packed into a
// .pte next to its named data, then found and decoded again the way a
// runtime loads a model.
func Example() {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{2}, 0)
	w, key := b.NamedConst(serialization.Float32, []uint32{2}, []byte{0, 0, 128, 63, 0, 0, 0, 64}) // 1.0, 2.0
	alpha := b.Int(1)
	out := b.Tensor(serialization.Float32, []uint32{2}, 1)
	b.Op("aten.add.Tensor", x, w, alpha, out)
	b.Inputs(x)
	b.Outputs(out)
	blob, err := b.Blob()
	if err != nil {
		log.Fatal(err)
	}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{
		Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}},
		NamedData: b.NamedBlobs(),
	})
	if err != nil {
		log.Fatal(err)
	}

	prog, err := serialization.ParseProgram(pte)
	if err != nil {
		log.Fatal(err)
	}
	raw, err := prog.DelegateBlob(serialization.VulkanBackendID)
	if err != nil {
		log.Fatal(err)
	}
	dec, err := serialization.DecodeBlob(raw)
	if err != nil {
		log.Fatal(err)
	}
	g := dec.Graph
	fmt.Println(g.Chain[0].Name, g.Chain[0].Args)
	wt := g.Values[g.Chain[0].Args[1]].Tensor
	data, err := dec.ResolveConstant(wt, prog.NamedData)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Constants[wt.ConstantID].NamedKey == key, data)
	// Output:
	// aten.add.Tensor [0 1 2 3]
	// true [0 0 128 63 0 0 0 64]
}

// Loading a model exported for another backend fails with an error that
// says what the file holds instead.
func ExampleProgram_DelegateBlob() {
	pte, err := serialization.EncodePTE(serialization.PTEOptions{
		Delegates: []serialization.DelegateSpec{{ID: "QnnBackend", Blob: []byte("...")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	prog, err := serialization.ParseProgram(pte)
	if err != nil {
		log.Fatal(err)
	}
	_, err = prog.DelegateBlob(serialization.VulkanBackendID)
	var nd *serialization.NoDelegateError
	fmt.Println(errors.Is(err, serialization.ErrNoDelegate), errors.As(err, &nd), nd.Have)
	fmt.Println(err)
	// Output:
	// true true [QnnBackend]
	// serialization: no VulkanBackend delegate; program has delegates: [QnnBackend]
}

// Malformed input yields a *FormatError with the offending offset.
func ExampleFormatError() {
	_, err := serialization.ParseHeader([]byte("\x00\x00\x00\x00VH00\x1d\x00" + string(make([]byte, 20))))
	var fe *serialization.FormatError
	fmt.Println(errors.As(err, &fe), fe.Off, errors.Is(err, serialization.ErrBadHeader))
	fmt.Println(err)
	// Output:
	// true 8 true
	// serialization: header_size below 30 (29) at offset 8
}

package wgdelegate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/wgdelegate/wgdelegate"
)

// ExampleWithVerifyData loads a model whose .ptd has one flipped bit in a
// weight: with WithVerifyData the load fails naming the weight's key,
// where without it the model would compute with the wrong weight.
func ExampleWithVerifyData() {
	pte, ptd := transposeModel()
	ctx := context.Background()
	m, err := wgdelegate.Load(ctx, pte, wgdelegate.WithData(ptd), wgdelegate.WithVerifyData())
	if err != nil {
		log.Fatal(err)
	}
	st := m.VerifyStats()
	m.Close()
	fmt.Printf("verified %d tensor(s), %d bytes\n", st.Tensors, st.Bytes)

	bad := bytes.Clone(ptd)
	bad[len(bad)-1] ^= 0x80 // the sign of the last weight, 60
	_, err = wgdelegate.Load(ctx, pte, wgdelegate.WithData(bad), wgdelegate.WithVerifyData())
	var de *wgdelegate.DataMismatchError
	if errors.As(err, &de) {
		fmt.Printf("corrupt: constant %d, key %.12s..., %d bytes\n", de.ConstantID, de.Key, de.Bytes)
	}
	// Output:
	// verified 1 tensor(s), 24 bytes
	// corrupt: constant 0, key aa9c8a1b10e8..., 24 bytes
}

// ExampleModel_ClaimState: whoever keeps a sequence in a model's KV
// caches claims them first, so that a second user is refused rather than
// silently interleaved (llm.New does this).
func ExampleModel_ClaimState() {
	pte, ptd := transposeModel()
	m, err := wgdelegate.Load(context.Background(), pte, wgdelegate.WithData(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	first, err := m.ClaimState("session 1")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.ClaimState("session 2"); errors.Is(err, wgdelegate.ErrStateClaimed) {
		fmt.Println("refused; held by", m.StateOwner())
	}
	first.Release()
	second, err := m.ClaimState("session 2")
	if err != nil {
		log.Fatal(err)
	}
	defer second.Release()
	fmt.Println("now held by", m.StateOwner())
	// Output:
	// refused; held by session 1
	// now held by session 2
}

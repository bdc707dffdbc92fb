package wgdelegate_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// ExampleStateClaim_Save runs two sequences in one loaded decoder: the
// holder of the state claim saves the running sequence's KV caches into
// its StateStore and restores the other's, copying only the positions
// filled (the llm package's sessions do this between turns).
func ExampleStateClaim_Save() {
	l, err := models.NewLlama(swapCfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	f, err := models.Encode(l.B, false)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m, err := wgdelegate.Load(ctx, f.PTE)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	claim, err := m.ClaimState("two sequences")
	if err != nil {
		log.Fatal(err)
	}
	defer claim.Release()
	a, err := claim.NewStore()
	if err != nil {
		log.Fatal(err)
	}
	defer a.Release()
	fmt.Println("one sequence's state:", m.StateBytes(), "bytes")

	step := func(tokens []int32, pos int64) []byte {
		out, err := m.Execute(ctx, l.Inputs(tokens, pos)...)
		if err != nil {
			log.Fatal(err)
		}
		return out[0].Data
	}
	step([]int32{1, 7, 3}, 0) // sequence A: positions 0..2
	n, err := claim.Save(a, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("saved A:", n, "bytes")
	step([]int32{1, 9, 9, 2}, 0) // sequence B overwrites positions 0..3
	if _, err := claim.Restore(a, 3); err != nil {
		log.Fatal(err)
	}
	got := step([]int32{4}, 3) // A goes on at position 3

	alone, err := wgdelegate.Load(ctx, f.PTE)
	if err != nil {
		log.Fatal(err)
	}
	defer alone.Close()
	if _, err := alone.Execute(ctx, l.Inputs([]int32{1, 7, 3}, 0)...); err != nil {
		log.Fatal(err)
	}
	want, err := alone.Execute(ctx, l.Inputs([]int32{4}, 3)...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("A's logits as if run alone:", bytes.Equal(got, want[0].Data))
	// Output:
	// one sequence's state: 4096 bytes
	// saved A: 768 bytes
	// A's logits as if run alone: true
}

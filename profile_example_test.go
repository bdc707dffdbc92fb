package wgdelegate_test

import (
	"context"
	"fmt"
	"log"

	"github.com/wgdelegate/wgdelegate"
)

// ExampleModel_Profile times every GPU dispatch of a model and sums the
// time per op. Source says whether GPU timestamps or CPU timing was used.
func ExampleModel_Profile() {
	ctx := context.Background()
	pte, ptd := transposeModel()
	m, err := wgdelegate.Load(ctx, pte, wgdelegate.WithData(ptd))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	p, err := m.Profile(ctx, wgdelegate.FromFloat32([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}))
	if err != nil {
		log.Fatal(err)
	}
	perOp := map[string]int{}
	for _, g := range p.Graphs {
		for _, d := range g.Dispatches {
			if d.Duration > 0 {
				perOp[d.OpName]++
			}
		}
	}
	fmt.Println(p.Source == "gpu-timestamp" || p.Source == "cpu", perOp)
	// Output:
	// true map[aten.add.Tensor:1]
}

package opstest

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestQ8taMutations mutates the int8 cases' graphs the way graph's
// FuzzOpArgs does (an op argument pointing at another value, a tensor dim
// in 0..8, a dtype) with a fixed seed: every build must return an error or
// a graph that executes; no op may panic.
func TestQ8taMutations(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	r := rand.New(rand.NewPCG(19, 0x5eed))
	built, failed := 0, 0
	for _, c := range Cases {
		if !strings.Contains(c.Name, "q8ta") && !strings.Contains(c.Name, "quantize") && !strings.Contains(c.Name, "q8csw") {
			continue
		}
		for range rounds {
			b := serialization.NewBuilder()
			c.Build(b, rand.New(rand.NewPCG(1, 2)))
			memplan.PlanDedicated(b.Graph())
			g := b.Graph()
			switch r.IntN(3) {
			case 0:
				o := &g.Chain[r.IntN(len(g.Chain))]
				o.Args[r.IntN(len(o.Args))] = int32(r.IntN(len(g.Values)))
			case 1, 2:
				v := &g.Values[r.IntN(len(g.Values))]
				if v.Kind != serialization.KindTensor {
					continue
				}
				if len(v.Tensor.Dims) > 0 && r.IntN(2) == 0 {
					v.Tensor.Dims[r.IntN(len(v.Tensor.Dims))] = uint32(r.IntN(9))
				} else {
					v.Tensor.DataType = serialization.DataType(r.IntN(8))
				}
			}
			gr, _, err := Load(dev, b, graph.Options{MemoryLimit: 64 << 20})
			if err != nil {
				if strings.Contains(err.Error(), "panic") {
					t.Fatalf("%s: an op panicked: %v", c.Name, err)
				}
				failed++
				continue
			}
			in := make([]graph.Tensor, gr.NumInputs())
			for i := range in {
				dt, shape := gr.InputInfo(i)
				in[i] = graph.Tensor{DType: dt, Shape: shape, Data: make([]byte, graph.Numel(shape)*int64(dt.Size()))}
			}
			if _, err := gr.Execute(context.Background(), in); err != nil {
				t.Errorf("%s: a mutated graph built but failed to execute: %v", c.Name, err)
			}
			gr.Close()
			built++
		}
	}
	t.Logf("%d mutated graphs built and ran, %d rejected", built, failed)
}

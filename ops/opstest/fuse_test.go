package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// fuseDispatches is how many dispatches each fuse/ case records with
// fusion on; with it off, every op of a non-empty case records one.
var fuseDispatches = map[string]int{
	"fuse/unary_chain_odd":            1,
	"fuse/unary_chain_vec4":           1,
	"fuse/scalar_ops":                 1,
	"fuse/broadcast_operands":         1,
	"fuse/binary_head_broadcast_self": 1,
	"fuse/square_head":                1,
	"fuse/middle_is_output":           2, // relu writes a graph output
	"fuse/two_consumers":              2, // relu's output has two readers
	"fuse/shared_buffer":              2, // clone, relu..neg: the buffers are re-bound, not the chain cut
	"fuse/rank0":                      1,
	"fuse/rank6_broadcast":            1,
	"fuse/row_vec4_walk":              1,
	"fuse/empty":                      0,
	"fuse/big_grid":                   1,
	"dynamic/fuse_decision":           1,
}

// buildCase builds case c's graph for seed 1 with kernel choices cfg, with
// the exporter's memory plan when exporter is set, and returns it with the
// number of ops in its chain.
func buildCase(t *testing.T, dev *gpu.Device, c Case, cfg ops.Config, exporter bool) (*graph.WebGPUGraph, *serialization.Blob, int) {
	t.Helper()
	b := serialization.NewBuilder()
	c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
	if exporter {
		memplan.PlanLikeExporter(b.Graph())
	}
	g, blob, err := Load(dev, b, graph.Options{SkipWarmup: true, Kernels: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return g, blob, len(blob.Graph.Chain)
}

// TestFuseDecisions checks which fuse/ cases record one fused kernel, and
// that with fusion off the same cases record one dispatch per op and still
// match the reference (the unfused form of every chain).
func TestFuseDecisions(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	for _, c := range Cases {
		want, ok := fuseDispatches[c.Name]
		if !ok {
			if strings.HasPrefix(c.Name, "fuse/") {
				t.Errorf("%s: no expected dispatch count", c.Name)
			}
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			// Views share buffers instead of copying unless told not to;
			// these counts are about fusion, so every op records.
			g, _, nops := buildCase(t, dev, c, ops.Config{NoViewAliasing: true}, false)
			got := len(g.Dispatches())
			g.Close()
			if got != want {
				t.Errorf("fused: %d dispatches, want %d", got, want)
			}
			unfused := ops.Config{NoElementwiseFusion: true, NoViewAliasing: true}
			g, _, _ = buildCase(t, dev, c, unfused, false)
			got = len(g.Dispatches())
			g.Close()
			if want > 0 && got != nops {
				t.Errorf("unfused: %d dispatches, want one per op (%d)", got, nops)
			}
			if c.Name == "fuse/big_grid" {
				return // covered with fusion on; too slow to repeat
			}
			if err := RunCase(GPU{Dev: dev, Kernels: unfused}, c, 2); err != nil {
				t.Errorf("unfused: %v", err)
			}
		})
	}
}

// TestFuseReexecute runs one graph over changing live shapes: relu(x) * z
// + 1 fuses into one kernel while z broadcasts to x's shape, splits when z
// is larger, and fuses again after; each result matches the reference.
// Under the exporter's plan every re-recording binds the transient tensors
// again for its own lifetimes.
func TestFuseReexecute(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	var c Case
	for _, x := range Cases {
		if x.Name == "dynamic/fuse_decision" {
			c = x
		}
	}
	for _, exporter := range []bool{false, true} {
		t.Run(fmt.Sprintf("exporter_plan=%v", exporter), func(t *testing.T) { fuseReexecute(t, dev, c, exporter) })
	}
}

func fuseReexecute(t *testing.T, dev *gpu.Device, c Case, exporter bool) {
	g, blob, _ := buildCase(t, dev, c, ops.Config{}, exporter)
	defer g.Close()
	r := rand.New(rand.NewPCG(7, 7))
	f := serialization.Float32
	for k, tc := range []struct {
		x, z []int64
		want int
	}{
		{[]int64{4, 6}, []int64{4, 6}, 1},
		{[]int64{1, 6}, []int64{3, 6}, 2},
		{[]int64{3, 5}, []int64{1, 5}, 1},
		{[]int64{1, 2}, []int64{4, 2}, 2},
		{[]int64{0, 6}, []int64{0, 6}, 0},
		{[]int64{2, 6}, []int64{2, 6}, 1},
	} {
		inputs := []*reference.Tensor{RandTensor(r, f, tc.x, -3, 3), RandTensor(r, f, tc.z, -3, 3)}
		want, err := reference.Run(blob, nil, inputs)
		if err != nil {
			t.Fatal(err)
		}
		host := []graph.Tensor{{DType: f, Shape: tc.x, Data: inputs[0].Encode()}, {DType: f, Shape: tc.z, Data: inputs[1].Encode()}}
		got, err := g.Execute(context.Background(), host)
		if err != nil {
			t.Fatalf("execute %d: %v", k, err)
		}
		gt, err := reference.Decode(got[0].DType, got[0].Shape, got[0].Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := Compare(gt, want[0], DefaultTolerance[f]); err != nil {
			t.Errorf("execute %d (x %v, z %v): %v", k, tc.x, tc.z, err)
		}
		if n := len(g.Dispatches()); n != tc.want {
			t.Errorf("execute %d (x %v, z %v): %d dispatches, want %d", k, tc.x, tc.z, n, tc.want)
		}
	}
}

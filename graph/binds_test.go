package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// loadBuilder loads b's graph with opts on the test device.
func loadBuilder(t testing.TB, b *serialization.Builder, opts graph.Options) *graph.WebGPUGraph {
	t.Helper()
	blob, named := graph.BuiltBlob(t, b)
	opts.NamedData = named
	g, err := graph.Load(context.Background(), graph.OpenTestDevice(t), blob, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// wantBinds is what a step's pass sets for ds (and the head's kernels
// after them): a pipeline where the kernel changes, a bind group for
// every dispatch that runs (each has its own).
func wantBinds(ds []graph.DispatchInfo, head ...string) (pipelines, groups int) {
	prev := ""
	kernel := func(k string) {
		if k != prev {
			pipelines++
		}
		prev = k
		groups++
	}
	for _, d := range ds {
		if d.Groups[0] > 0 && d.Groups[1] > 0 && d.Groups[2] > 0 {
			kernel(d.Kernel)
		}
	}
	for _, k := range head {
		kernel(k)
	}
	return pipelines, groups
}

// TestStepBinds counts the pipelines and bind groups a step sets: three
// unfused negs in a row set their pipeline once; a llama decode step,
// whose consecutive dispatches all differ in kernel, sets one of each per
// dispatch, through Execute and through a Head (its argmax after them).
func TestStepBinds(t *testing.T) {
	ctx := context.Background()
	t.Run("neg chain", func(t *testing.T) {
		f := serialization.Float32
		b := serialization.NewBuilder()
		x := b.Tensor(f, []uint32{64}, -1)
		b.Inputs(x)
		y := x
		for range 3 {
			z := b.Tensor(f, []uint32{64}, -1)
			b.Op("aten.neg.default", y, z)
			y = z
		}
		b.Outputs(y)
		g := loadBuilder(t, b, graph.Options{Kernels: ops.Config{NoElementwiseFusion: true}})
		in := make([]float32, 64)
		for i := range in {
			in[i] = float32(i)
		}
		outs, err := g.Execute(ctx, []graph.Tensor{graph.Float32Tensor([]int64{64}, in)})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := outs[0].Float32s()
		for i, v := range got {
			if v != -float32(i) {
				t.Fatalf("out[%d] = %v, want %v", i, v, -float32(i))
			}
		}
		if n := len(g.Dispatches()); n != 3 {
			t.Fatalf("%d dispatches, want 3", n)
		}
		if p, gr := g.StepBinds(); p != 1 || gr != 3 {
			t.Errorf("%d pipelines and %d bind groups set, want 1 and 3", p, gr)
		}
	})
	t.Run("llama", func(t *testing.T) {
		l, err := models.NewLlama(models.Stories260K, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := loadBuilder(t, l.B, graph.Options{})
		in := func(tok int32, pos int64) []graph.Tensor {
			return []graph.Tensor{graph.Int32Tensor([]int64{1, 1}, []int32{tok}), graph.Int64Tensor([]int64{1}, []int64{pos})}
		}
		if _, err := g.Execute(ctx, in(1, 0)); err != nil {
			t.Fatal(err)
		}
		wp, wg := wantBinds(g.Dispatches())
		if p, gr := g.StepBinds(); p != wp || gr != wg {
			t.Errorf("Execute: %d pipelines and %d bind groups set, want %d and %d", p, gr, wp, wg)
		}
		h, err := g.NewHead(graph.HeadOptions{Logits: 0, Token: 0})
		if err != nil {
			t.Fatal(err)
		}
		st, err := h.Submit(ctx, in(2, 1), graph.StepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Wait(ctx, st); err != nil {
			t.Fatal(err)
		}
		wp, wg = wantBinds(g.Dispatches(), "argmax")
		if p, gr := g.StepBinds(); p != wp || gr != wg {
			t.Errorf("head step: %d pipelines and %d bind groups set, want %d and %d (%s)", p, gr, wp, wg, fmt.Sprint(len(g.Dispatches())))
		}
	})
}

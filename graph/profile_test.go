package graph

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestProfile(t *testing.T) {
	// One dispatch per op: elementwise fusion would run add and mul as one
	// kernel.
	const n = 4096
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{n}, -1)
	y := b.Tensor(f, []uint32{n}, -1)
	s := b.Tensor(f, []uint32{n}, -1)
	b.Op("aten.add.Tensor", x, y, b.Int(1), s)
	p := b.Tensor(f, []uint32{n}, -1)
	b.Op("aten.mul.Tensor", s, x, p)
	b.Inputs(x, y)
	b.Outputs(p)
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := Load(ctx, device(t), blob, Options{Kernels: ops.Config{NoElementwiseFusion: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i)
	}
	prof, err := g.Profile(ctx, []Tensor{Float32Tensor([]int64{n}, in), Float32Tensor([]int64{n}, in)})
	if err != nil {
		t.Fatal(err)
	}
	if prof.Source != "gpu-timestamp" && prof.Source != "cpu" {
		t.Errorf("source %q", prof.Source)
	}
	want := g.Dispatches()
	if len(prof.Dispatches) != len(want) || len(want) == 0 {
		t.Fatalf("%d timings for %d dispatches", len(prof.Dispatches), len(want))
	}
	for i, d := range prof.Dispatches {
		if d.DispatchInfo != want[i] {
			t.Errorf("dispatch %d: %+v, want %+v", i, d.DispatchInfo, want[i])
		}
		if d.Duration <= 0 {
			t.Errorf("dispatch %d (%s): %v", i, d.OpName, d.Duration)
		}
	}
	if prof.Dispatches[0].OpName != "aten.add.Tensor" || prof.Dispatches[len(want)-1].OpName != "aten.mul.Tensor" {
		t.Errorf("op names %+v", prof.Dispatches)
	}
	if prof.Total() <= 0 {
		t.Errorf("total %v", prof.Total())
	}
	if prof.Pass <= 0 {
		t.Errorf("one pass %v", prof.Pass)
	}
	t.Logf("%s: %+v; one pass %v", prof.Source, prof.Dispatches, prof.Pass)
	// The graph still executes correctly afterwards.
	outs, err := g.Execute(ctx, []Tensor{Float32Tensor([]int64{n}, in), Float32Tensor([]int64{n}, in)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outs[0].Float32s()
	if got[3] != 18 {
		t.Errorf("out[3] = %v, want 18", got[3])
	}
	g.Close()
	if _, err := g.ProfileReplay(ctx); err == nil {
		t.Error("no error profiling a closed graph")
	}
}

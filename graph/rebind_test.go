package graph

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestRerecordReusesBindGroups: re-recording for new input shapes keeps
// every bind group whose bindings (pipeline, buffers, uniform slice) did
// not change, and the results stay right.
func TestRerecordReusesBindGroups(t *testing.T) {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{8}, -1)
	y := b.Tensor(f, []uint32{8}, -1)
	b.Op("aten.add.Tensor", x, x, b.Int(1), y)
	z := b.Tensor(f, []uint32{8}, -1)
	b.Op("aten.neg.default", y, z)
	b.Inputs(x)
	b.Outputs(z)
	g := loadBuilt(t, b, Options{Kernels: ops.Config{NoElementwiseFusion: true}})
	defer g.Close()
	first := append([]*gpu.BindGroup(nil), g.groups...)
	for k, n := range []int64{4, 8, 4} { // multiples of 4: the same kernel variants
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i) + 0.5
		}
		out, err := g.Execute(context.Background(), []Tensor{Float32Tensor([]int64{n}, in)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := out[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if got[i] != -2*in[i] {
				t.Fatalf("execute %d: element %d = %v, want %v", k, i, got[i], -2*in[i])
			}
		}
		if len(g.groups) != len(first) {
			t.Fatalf("execute %d: %d bind groups, was %d", k, len(g.groups), len(first))
		}
		for i := range first {
			if g.groups[i] != first[i] {
				t.Errorf("execute %d: bind group %d was created again", k, i)
			}
		}
	}
	if g.Rerecords() != 3 {
		t.Errorf("%d re-recordings, want 3", g.Rerecords())
	}
}

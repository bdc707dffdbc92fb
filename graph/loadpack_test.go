package graph

import (
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestLoadPackedByFamily: the analysis asks the ops which weights they
// read only packed (ops.LoadPackFor), for the load's device and choices: a
// FLOAT16 linear weight (a constant, or a prepack output) as halves under either family and on either device class; not
// with NoHalfWeights, K % 8 != 0, or a use that reads the weight as
// exported.
func TestLoadPackedByFamily(t *testing.T) {
	h, f := serialization.Float16, serialization.Float32
	for _, c := range []struct {
		name     string
		k        uint32
		prepack  bool
		alsoRead bool // an add reads the weight as exported too
		cfg      ops.Config
		device   ops.DeviceClass
		want     bool
	}{
		{name: "cpu", k: 16, cfg: ops.Config{Family: ops.FamilyCPU}, want: true},
		{name: "gpu", k: 16, cfg: ops.Config{Family: ops.FamilyGPU}, want: true},
		{name: "auto on a discrete GPU", k: 16, device: ops.ClassDiscrete, want: true},
		{name: "auto on lavapipe", k: 16, device: ops.ClassCPU, want: true},
		{name: "gpu prepacked", k: 16, prepack: true, cfg: ops.Config{Family: ops.FamilyGPU}, want: true},
		{name: "gpu NoMatmulGEMV", k: 16, cfg: ops.Config{Family: ops.FamilyGPU, Matmul: ops.MatmulNoGEMV}, want: true},
		{name: "NoHalfWeights", k: 16, cfg: ops.Config{Family: ops.FamilyGPU, NoHalfWeights: true}},
		{name: "K%8", k: 12, cfg: ops.Config{Family: ops.FamilyGPU}},
		{name: "read as exported too", k: 16, alsoRead: true, cfg: ops.Config{Family: ops.FamilyGPU}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := serialization.NewBuilder()
			x := b.Tensor(f, []uint32{1, c.k}, -1)
			src, _ := b.NamedConst(h, []uint32{4, c.k}, make([]byte, 2*4*int(c.k)))
			w := src
			if c.prepack {
				w = b.Tensor(h, []uint32{4, c.k}, -1)
				b.Op("et_vk.prepack.default", src, w)
			}
			y := b.Tensor(f, []uint32{1, 4}, -1)
			b.Op("aten.linear.default", x, w, b.Null(), y)
			outs := []int32{y}
			if c.alsoRead {
				z := b.Tensor(h, []uint32{4, c.k}, -1)
				b.Op("aten.add.Tensor", w, w, b.Int(1), z)
				outs = append(outs, z)
			}
			b.Inputs(x)
			b.Outputs(outs...)
			blob, named, err := b.Decode()
			if err != nil {
				t.Fatal(err)
			}
			a, err := Analyze(blob, named, Limits{Device: ops.DeviceProfile{Class: c.device}, Kernels: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			for _, lp := range a.LoadPacked {
				ids = append(ids, lp.ID)
				if lp.Pack.Name != "half" || lp.Op != "aten.linear.default" {
					t.Errorf("value %d: packing %q for %s", lp.ID, lp.Pack.Name, lp.Op)
				}
			}
			var want []int32
			if c.want {
				// A constant only et_vk.prepack reads is deferred
				// anyway; its output is what the packing replaces.
				want = []int32{w}
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("LoadPacked %v, want %v", ids, want)
			}
			if c.want && !a.Deferred[w] {
				t.Error("the weight is not deferred")
			}
			if !c.want && a.Deferred[w] {
				t.Error("the weight is deferred")
			}
		})
	}
}

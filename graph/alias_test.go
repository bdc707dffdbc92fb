package graph

import (
	"context"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// aliasChain is x -> relu -> view_copy [2, 6] -> unsqueeze -> neg -> view
// [12] -> add(., relu's output viewed back): two views of one value, a view
// of a view, and the root read after its views (so their lifetimes join),
// each tensor in the exporter's shared objects when planned.
func aliasChain(exporter bool) (*serialization.Builder, int32) {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{12}, -1)
	r := b.Tensor(f, []uint32{12}, -1)
	b.Op("aten.relu.default", x, r)
	v := b.Tensor(f, []uint32{2, 6}, -1)
	b.Op("aten.view_copy.default", r, b.IntList(2, 6), v)
	u := b.Tensor(f, []uint32{1, 2, 6}, -1)
	b.Op("aten.unsqueeze_copy.default", v, b.Int(0), u)
	n := b.Tensor(f, []uint32{1, 2, 6}, -1)
	b.Op("aten.neg.default", u, n)
	w := b.Tensor(f, []uint32{12}, -1)
	b.Op("aten.view_copy.default", n, b.IntList(12), w)
	s := b.Tensor(f, []uint32{12}, -1)
	b.Op("aten.add.Tensor", w, r, b.Int(3), s)
	b.Inputs(x)
	b.Outputs(s, u)
	if exporter {
		memplan.PlanLikeExporter(b.Graph())
	}
	return b, v
}

// TestViewAliasing: view-like ops share their input's buffer and record no
// dispatch, under dedicated buffers and under the exporter's plan, and the
// results are those of the copies (checked against the closed form and
// against the same graph with aliasing off).
func TestViewAliasing(t *testing.T) {
	in := []float32{-3, -2.5, -1, 0, 0.5, 1, 1.5, 2, 4, -7, 9, 11}
	want := make([]float32, len(in))
	wantU := make([]float32, len(in))
	for i, v := range in {
		r := max(v, 0)
		want[i] = -r + 3*r
		wantU[i] = r
	}
	for _, exporter := range []bool{false, true} {
		for _, noAlias := range []bool{false, true} {
			b, _ := aliasChain(exporter)
			g := loadBuilt(t, b, Options{Kernels: ops.Config{NoElementwiseFusion: true, NoViewAliasing: noAlias}})
			wantDispatches := 3 // relu, neg, add
			if noAlias {
				wantDispatches = 6
			}
			if n := len(g.Dispatches()); n != wantDispatches {
				t.Errorf("exporter=%v noAlias=%v: %d dispatches, want %d", exporter, noAlias, n, wantDispatches)
			}
			if st := g.MemoryStats(); st.AddedSharedBytes != 0 {
				t.Errorf("exporter=%v noAlias=%v: %d shared bytes added beyond the plan", exporter, noAlias, st.AddedSharedBytes)
			}
			for k := range 2 { // the second Execute replays the same records
				out, err := g.Execute(context.Background(), []Tensor{Float32Tensor([]int64{12}, in)})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := out[0].Float32s()
				gotU, _ := out[1].Float32s()
				if !slices.Equal(got, want) || !slices.Equal(gotU, wantU) || !slices.Equal(out[1].Shape, []int64{1, 2, 6}) {
					t.Errorf("exporter=%v noAlias=%v execute %d: got %v %v %v, want %v %v [1 2 6]", exporter, noAlias, k, got, gotU, out[1].Shape, want, wantU)
				}
			}
			g.Close()
		}
	}
}

// TestViewAliasRefusedForInPlaceWrites: a view of a KV cache that
// update_cache later writes in place keeps the values from before the
// update, so it is a copy, not an alias.
func TestViewAliasRefusedForInPlaceWrites(t *testing.T) {
	f := serialization.Float32
	for _, exporter := range []bool{false, true} {
		b := serialization.NewBuilder()
		cache := b.Tensor(f, []uint32{1, 4, 1, 2}, -1)
		val := b.Tensor(f, []uint32{1, 1, 1, 2}, -1)
		snap := b.Tensor(f, []uint32{8}, -1)
		b.Op("aten.view_copy.default", cache, b.IntList(8), snap)
		done := b.Tensor(f, []uint32{1}, -1)
		b.Op("update_cache.default", val, cache, b.Int(1), done)
		after := b.Tensor(f, []uint32{8}, -1)
		b.Op("aten.clone.default", cache, b.Null(), after)
		b.Inputs(cache, val)
		b.Outputs(snap, after)
		if exporter {
			memplan.PlanLikeExporter(b.Graph())
		}
		g := loadBuilt(t, b, Options{})
		c := []float32{1, 2, 3, 4, 5, 6, 7, 8}
		out, err := g.Execute(context.Background(), []Tensor{Float32Tensor([]int64{1, 4, 1, 2}, c), Float32Tensor([]int64{1, 1, 1, 2}, []float32{-1, -2})})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := out[0].Float32s()
		if !slices.Equal(got, c) {
			t.Errorf("exporter=%v: the view taken before update_cache is %v, want %v", exporter, got, c)
		}
		got, _ = out[1].Float32s()
		if w := []float32{1, 2, -1, -2, 5, 6, 7, 8}; !slices.Equal(got, w) {
			t.Errorf("exporter=%v: the clone taken after update_cache is %v, want %v", exporter, got, w)
		}
		g.Close()
	}
}

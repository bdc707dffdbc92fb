package lower

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestViewsPass: the views pass and what stops it (the cases of graph's
// alias tests, and more).
func TestViewsPass(t *testing.T) {
	// x -> relu -> view [2, 6] -> unsqueeze -> neg -> view [12] -> add:
	// two views of one value and a view of a view.
	chain := func(greedy bool) func(b *serialization.Builder) {
		return func(b *serialization.Builder) {
			act := activations(b, greedy, 2)
			x := b.Tensor(f32, []uint32{12}, -1)
			r := act(12)
			b.Op("aten.relu.default", x, r)
			v := act(2, 6)
			b.Op("aten.view_copy.default", r, b.IntList(2, 6), v)
			u := act(1, 2, 6)
			b.Op("aten.unsqueeze_copy.default", v, b.Int(0), u)
			n := act(1, 2, 6)
			b.Op("aten.neg.default", u, n)
			w := act(12)
			b.Op("aten.view_copy.default", n, b.IntList(12), w)
			s := act(12)
			b.Op("aten.add.Tensor", w, r, b.Int(3), s)
			b.Inputs(x)
			b.Outputs(s, u)
		}
	}
	// A cache read through a view, then updated in place.
	cache := func(b *serialization.Builder, prepacked bool) {
		c := b.Tensor(f32, []uint32{1, 4, 1, 2}, -1)
		val := b.Tensor(f32, []uint32{1, 1, 1, 2}, -1)
		b.Inputs(val)
		if prepacked {
			w := b.InlineConst(f32, []uint32{1, 4, 1, 2}, make([]byte, 32))
			b.Op("et_vk.prepack.default", w, c)
		} else {
			b.Inputs(c)
		}
		snap := b.Tensor(f32, []uint32{8}, -1)
		b.Op("aten.view_copy.default", c, b.IntList(8), snap)
		if !prepacked {
			done := b.Tensor(f32, []uint32{1}, -1)
			b.Op("update_cache.default", val, c, b.Int(1), done)
		}
		b.Outputs(snap)
	}
	runPlanCases(t, []planCase{
		{name: "views", build: chain(false), want: "0 view[1] view[2] 3 view[4] 5"},
		{name: "views/greedy_plan", build: chain(true), want: "0 view[1] view[2] 3 view[4] 5"},
		{name: "aliasing_off", opts: Options{NoViewAliasing: true}, build: chain(false), want: "0 1 2 3 4 5"},
		{name: "written_in_place_later", build: func(b *serialization.Builder) { cache(b, false) }, want: "0 1"},
		{name: "prepacked_root", build: func(b *serialization.Builder) { cache(b, true) }, want: "0 1"},
		{name: "select", build: func(b *serialization.Builder) {
			x := b.Tensor(f32, []uint32{1, 1, 8}, -1)
			y := b.Tensor(f32, []uint32{1, 8}, -1)
			b.Inputs(x)
			b.Op("aten.select_copy.int", x, b.Int(1), b.Int(-1), y)
			b.Outputs(y)
		}, want: "view[0]"},
		{name: "output_larger", build: func(b *serialization.Builder) {
			x := b.Tensor(f32, []uint32{4}, -1)
			y := b.Tensor(f32, []uint32{8}, -1)
			b.Inputs(x)
			b.Op("aten.clone.default", x, b.Null(), y)
			b.Outputs(y)
		}, want: "0"},
		{name: "view_of_constant", build: func(b *serialization.Builder) {
			c := b.InlineConst(f32, []uint32{4}, make([]byte, 16))
			y := b.Tensor(f32, []uint32{2, 2}, -1)
			b.Op("aten.view_copy.default", c, b.IntList(2, 2), y)
			b.Outputs(y)
		}, want: "view[0]"},
	})
}

package ops

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestPlanReduce checks the coalescing of kept and reduced runs.
func TestPlanReduce(t *testing.T) {
	for i, c := range []struct {
		dims         []int64
		red          []int
		ks, kst      []int64
		rs, rst      []int64
		rows, extent int64
	}{
		{[]int64{7}, []int{0}, nil, nil, []int64{7}, []int64{1}, 1, 7},
		{[]int64{3, 5}, []int{1}, []int64{3}, []int64{5}, []int64{5}, []int64{1}, 3, 5},
		{[]int64{3, 5}, []int{0}, []int64{5}, []int64{1}, []int64{3}, []int64{5}, 5, 3},
		// Adjacent reduced dims merge; so do adjacent kept ones.
		{[]int64{2, 3, 4, 5}, []int{1, 2}, []int64{2, 5}, []int64{60, 1}, []int64{12}, []int64{5}, 10, 12},
		{[]int64{2, 3, 4, 5}, []int{0, 1}, []int64{20}, []int64{1}, []int64{6}, []int64{20}, 20, 6},
		// Size-1 dims vanish, letting their neighbours merge.
		{[]int64{2, 1, 3}, []int{0, 2}, nil, nil, []int64{6}, []int64{1}, 1, 6},
		{[]int64{2, 3, 1, 4, 5}, []int{1, 3}, []int64{2, 5}, []int64{60, 1}, []int64{12}, []int64{5}, 10, 12},
		{[]int64{2, 3, 4, 5}, []int{1, 3}, []int64{2, 4}, []int64{60, 5}, []int64{3, 5}, []int64{20, 1}, 8, 15},
		// Rank 0 and all-ones: no runs.
		{[]int64{}, nil, nil, nil, nil, nil, 1, 1},
		{[]int64{1, 1}, []int{1}, nil, nil, nil, nil, 1, 1},
		// Empty tensors: counts only.
		{[]int64{3, 0}, []int{1}, nil, nil, nil, nil, 3, 0},
		{[]int64{0, 4}, []int{1}, nil, nil, nil, nil, 0, 0},
	} {
		red := make([]bool, len(c.dims))
		for _, d := range c.red {
			red[d] = true
		}
		p := planReduce(c.dims, red)
		if !slices.Equal(p.KSize, c.ks) || !slices.Equal(p.KStride, c.kst) || !slices.Equal(p.RSize, c.rs) ||
			!slices.Equal(p.RStride, c.rst) || p.Rows != c.rows || p.Extent != c.extent {
			t.Errorf("%d: planReduce(%v, %v) = %+v", i, c.dims, c.red, p)
		}
	}
}

// TestReduceParams pins reducePlan.params to reduce.wgsl's Params: four
// scalars then four vec4<u32> (80 bytes).
func TestReduceParams(t *testing.T) {
	p := planReduce([]int64{2, 3, 4, 5}, []bool{false, true, false, true})
	b := p.params(12, 1)
	if len(b) != 80 {
		t.Fatalf("params are %d bytes, want 80", len(b))
	}
	got := make([]uint32, 20)
	for i := range got {
		got[i] = u32At(b, i)
	}
	want := []uint32{8, 15, 0x41400000, 0x3f800000,
		4, 1, 0, 0, 60, 5, 0, 0, // kept: steps, strides
		5, 1, 0, 0, 20, 1, 0, 0} // reduced
	if !slices.Equal(got, want) {
		t.Errorf("params %v, want %v", got, want)
	}
	n := normParams{Rows: 1, Len: 2, Eps: 1, Groups: 3, HW: 4, CPG: 5}
	if len(n.bytes()) != 32 {
		t.Errorf("normParams are %d bytes, want 32", len(n.bytes()))
	}
}

// TestReduceVariants: short rows take the serial kernel, long ones the
// tree, and many rows fold the grid; rows past the loop budget fail.
func TestReduceVariants(t *testing.T) {
	for _, c := range []struct {
		shape  []uint32
		tree   string
		groups [3]uint32
		err    bool
	}{
		{[]uint32{1000, 16}, "Tree:false", [3]uint32{16, 1, 1}, false},
		{[]uint32{1000, 17}, "Tree:true WG:64", [3]uint32{1000, 1, 1}, false},
		{[]uint32{70000, 17}, "Tree:true WG:64", [3]uint32{35000, 2, 1}, false},
		{[]uint32{3, 70001}, "Tree:true WG:256", [3]uint32{3, 1, 1}, false},
		{[]uint32{1, 256 * 60001}, "", [3]uint32{}, true},
	} {
		b := serialization.NewBuilder()
		f := serialization.Float32
		x := b.Tensor(f, c.shape, -1)
		y := b.Tensor(f, c.shape[:1], -1)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
		err := reduceOp(r, "sum", []int32{x, b.IntList(-1), b.Bool(false), b.Null(), y})
		if c.err {
			if !errors.Is(err, ErrArg) {
				t.Errorf("%v: err %v, want an ErrArg", c.shape, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.shape, err)
		}
		d := r.dispatches[0]
		if !strings.Contains(d.k.Name, c.tree) || d.groups != c.groups {
			t.Errorf("%v: kernel %s grid %v, want %s %v", c.shape, d.k.Name, d.groups, c.tree, c.groups)
		}
	}
}

// TestNormRejects: bad arguments of the reductions, softmax and norms are
// *ArgErrors, never panics.
func TestNormRejects(t *testing.T) {
	f, i := serialization.Float32, serialization.Int32
	cases := map[string]func(b *serialization.Builder) (Func, []int32){
		"sum/dim out of range": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.sum.dim_IntList"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.IntList(2), b.Bool(false), b.Null(), b.Tensor(f, []uint32{3}, -1)}
		},
		"sum/dim repeats": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.sum.dim_IntList"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.IntList(1, -1), b.Bool(false), b.Null(), b.Tensor(f, []uint32{3}, -1)}
		},
		"sum/float into int32": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.sum.dim_IntList"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.IntList(1), b.Bool(false), b.Null(), b.Tensor(i, []uint32{3}, -1)}
		},
		"sum/out too small": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.sum.dim_IntList"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.IntList(0), b.Bool(false), b.Null(), b.Tensor(f, []uint32{3}, -1)}
		},
		"mean/keepdim not bool": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.mean.dim"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.IntList(1), b.Int(1), b.Null(), b.Tensor(f, []uint32{3}, -1)}
		},
		"amax/empty dim": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.amax.default"), []int32{b.Tensor(f, []uint32{3, 0}, -1), b.IntList(1), b.Bool(false), b.Tensor(f, []uint32{3}, -1)}
		},
		"argmax/out float": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.argmax.default"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.Int(1), b.Bool(false), b.Tensor(f, []uint32{3}, -1)}
		},
		"argmax/dim list": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.argmax.default"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.IntList(1), b.Bool(false), b.Tensor(i, []uint32{3}, -1)}
		},
		"var/int32": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten.var.dim"), []int32{b.Tensor(i, []uint32{3, 4}, -1), b.IntList(1), b.Bool(true), b.Bool(false), b.Tensor(f, []uint32{3}, -1)}
		},
		"softmax/dim": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten._softmax.default"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.Int(-3), b.Bool(false), b.Tensor(f, []uint32{3, 4}, -1)}
		},
		"softmax/half_to_float": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten._softmax.default"), []int32{b.Tensor(f, []uint32{3, 4}, -1), b.Int(1), b.Bool(true), b.Tensor(f, []uint32{3, 4}, -1)}
		},
		"softmax/int32": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("aten._log_softmax.default"), []int32{b.Tensor(i, []uint32{3, 4}, -1), b.Int(1), b.Bool(false), b.Tensor(i, []uint32{3, 4}, -1)}
		},
		"layer_norm/shape": func(b *serialization.Builder) (Func, []int32) {
			x := b.Tensor(f, []uint32{3, 4}, -1)
			outs := b.ValueList(b.Tensor(f, []uint32{3, 4}, -1), b.Tensor(f, []uint32{3, 1}, -1), b.Tensor(f, []uint32{3, 1}, -1))
			return reduceLookup("aten.native_layer_norm.default"), []int32{x, b.IntList(3), b.Null(), b.Null(), b.Double(1e-5), outs}
		},
		"layer_norm/weight size": func(b *serialization.Builder) (Func, []int32) {
			x := b.Tensor(f, []uint32{3, 4}, -1)
			outs := b.ValueList(b.Tensor(f, []uint32{3, 4}, -1), b.Tensor(f, []uint32{3, 1}, -1), b.Tensor(f, []uint32{3, 1}, -1))
			return reduceLookup("aten.native_layer_norm.default"), []int32{x, b.IntList(4), b.Tensor(f, []uint32{3}, -1), b.Null(), b.Double(1e-5), outs}
		},
		"group_norm/groups": func(b *serialization.Builder) (Func, []int32) {
			x := b.Tensor(f, []uint32{2, 6, 5}, -1)
			outs := b.ValueList(b.Tensor(f, []uint32{2, 6, 5}, -1), b.Tensor(f, []uint32{2, 4}, -1), b.Tensor(f, []uint32{2, 4}, -1))
			return reduceLookup("aten.native_group_norm.default"), []int32{x, b.Null(), b.Null(), b.Int(2), b.Int(6), b.Int(5), b.Int(4), b.Double(1e-5), outs}
		},
		"group_norm/N": func(b *serialization.Builder) (Func, []int32) {
			x := b.Tensor(f, []uint32{2, 6, 5}, -1)
			outs := b.ValueList(b.Tensor(f, []uint32{2, 6, 5}, -1), b.Tensor(f, []uint32{2, 3}, -1), b.Tensor(f, []uint32{2, 3}, -1))
			return reduceLookup("aten.native_group_norm.default"), []int32{x, b.Null(), b.Null(), b.Int(3), b.Int(6), b.Int(5), b.Int(3), b.Double(1e-5), outs}
		},
		"batch_norm/no running stats": func(b *serialization.Builder) (Func, []int32) {
			x := b.Tensor(f, []uint32{2, 3}, -1)
			outs := b.ValueList(b.Tensor(f, []uint32{2, 3}, -1), b.Tensor(f, []uint32{0}, -1), b.Tensor(f, []uint32{0}, -1))
			return reduceLookup("aten._native_batch_norm_legit_no_training.default"), []int32{x, b.Null(), b.Null(), b.Null(), b.Null(), b.Double(0.1), b.Double(1e-5), outs}
		},
		"rms_norm/rank 0": func(b *serialization.Builder) (Func, []int32) {
			return reduceLookup("et_vk.rms_norm.default"), []int32{b.Tensor(f, []uint32{}, -1), b.Null(), b.Double(1e-6), b.Tensor(f, []uint32{}, -1)}
		},
	}
	for name, mk := range cases {
		b := serialization.NewBuilder()
		fn, args := mk(b)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
		err := fn(r, args)
		if !errors.Is(err, ErrArg) {
			t.Errorf("%s: err %v, want an ErrArg", name, err)
		}
	}
}

// reduceLookup returns the op registered under name, which must exist.
func reduceLookup(name string) Func {
	fn, ok := Lookup(name)
	if !ok {
		panic("no op " + name)
	}
	return fn
}

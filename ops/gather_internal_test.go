package ops

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestGatherCoalesce checks the plan simplification before the kernel.
func TestGatherCoalesce(t *testing.T) {
	for i, c := range []struct {
		p            gatherPlan
		dims, stride []int64
		region       int
	}{
		// A contiguous view is one dim.
		{gatherView([]int64{2, 3, 4}), []int64{24}, []int64{1}, -1},
		// Slicing the last dim keeps two.
		{gatherPlan{dims: []int64{2, 3, 2}, stride: []int64{12, 4, 1}, region: -1}, []int64{6, 2}, []int64{4, 1}, -1},
		// Size-1 dims vanish; a one-element plan keeps one dim.
		{gatherPlan{dims: []int64{1, 1}, stride: []int64{5, 1}, region: -1}, []int64{1}, []int64{0}, -1},
		// The region dim is neither dropped nor merged.
		{gatherPlan{dims: []int64{1, 4, 3}, stride: []int64{6, 3, 1}, region: 1}, []int64{4, 3}, []int64{3, 1}, 0},
		// Repeat: stride-0 dims merge with each other only.
		{gatherPlan{dims: []int64{2, 3, 5}, stride: []int64{0, 0, 1}, region: -1}, []int64{6, 5}, []int64{0, 1}, -1},
	} {
		c.p.coalesce()
		if !slices.Equal(c.p.dims, c.dims) || !slices.Equal(c.p.stride, c.stride) || c.p.region != c.region {
			t.Errorf("%d: got %v %v region %d, want %v %v region %d", i, c.p.dims, c.p.stride, c.p.region, c.dims, c.stride, c.region)
		}
	}
}

// recordOne records one op on a recorder with live input dims and returns
// it with the live dims of out.
func recordOne(t *testing.T, b *serialization.Builder, fn Func, args []int32, live map[int32][]int64, syms map[int32]int64) (*recorder, []int64, error) {
	t.Helper()
	r := &recorder{maxPerDim: 65535, live: live}
	r.Values = Values{G: b.Graph(), Sym: func(id int32) (int64, bool) { v, ok := syms[id]; return v, ok }}
	err := fn(r, args)
	out, _ := r.Tensor(args[len(args)-1])
	return r, out.Dims, err
}

// TestShapeLiveDims: output shapes follow the inputs' live shapes and
// SymInt values, not the serialized dims.
func TestShapeLiveDims(t *testing.T) {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{8, 6}, -1) // live 3x6
	z := b.Tensor(f, []uint32{8, 6}, -1) // live 2x6
	out := b.Tensor(f, []uint32{96}, -1)
	live := map[int32][]int64{x: {3, 6}, z: {2, 6}}
	end := b.SymInt(7)
	for _, c := range []struct {
		name string
		fn   Func
		args []int32
		want []int64
	}{
		{"view", viewOp("aten.view_copy.default"), []int32{x, b.IntList(-1, 2), out}, []int64{9, 2}},
		{"cat", catOp, []int32{b.ValueList(x, z, x), b.Int(0), out}, []int64{8, 6}},
		{"slice symint", sliceCopy, []int32{x, b.Int(1), b.Int(1), end, b.Int(2), out}, []int64{3, 2}},
		{"select", selectCopy, []int32{x, b.Int(0), b.Int(-1), out}, []int64{6}},
		{"expand", expandCopy, []int32{x, b.IntList(2, -1, -1), b.Bool(false), out}, []int64{2, 3, 6}},
		{"repeat", repeatOp, []int32{x, b.IntList(1, 2), out}, []int64{3, 12}},
		{"permute", permuteCopy, []int32{x, b.IntList(1, 0), out}, []int64{6, 3}},
		{"unsqueeze", viewOp("aten.unsqueeze_copy.default"), []int32{x, b.Int(-1), out}, []int64{3, 6, 1}},
	} {
		_, got, err := recordOne(t, b, c.fn, c.args, live, map[int32]int64{end: 5})
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: out dims %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestGatherVariants: sub-word dtypes move as words when the innermost
// extent allows it, and big grids fold into 2-D.
func TestGatherVariants(t *testing.T) {
	for _, c := range []struct {
		dt         serialization.DataType
		cols       uint32
		start, end int64
		es         string
	}{
		{serialization.Bool, 8, 4, 8, "ES:4"},
		{serialization.Bool, 8, 1, 5, "ES:1"},
		{serialization.Bool, 7, 0, 4, "ES:1"},
		{serialization.Float16, 8, 2, 6, "ES:4"},
		{serialization.Float16, 8, 1, 4, "ES:2"},
		{serialization.Int64, 8, 1, 4, "ES:4"},
	} {
		b := serialization.NewBuilder()
		x := b.Tensor(c.dt, []uint32{3, c.cols}, -1)
		y := b.Tensor(c.dt, []uint32{3, 8}, -1)
		r, _, err := recordOne(t, b, sliceCopy, []int32{x, b.Int(1), b.Int(c.start), b.Int(c.end), b.Int(1), y}, nil, nil)
		if err != nil || len(r.dispatches) != 1 {
			t.Fatalf("%v: %v, %d dispatches", c.dt, err, len(r.dispatches))
		}
		if name := r.dispatches[0].k.Name; !strings.Contains(name, c.es) {
			t.Errorf("%v cols %d [%d:%d]: kernel %s, want %s", c.dt, c.cols, c.start, c.end, name, c.es)
		}
	}

	b := serialization.NewBuilder()
	// Rows of 300 float32 flip as vec4s, rows of 301 as words; the
	// grids fold under 100 groups per dim.
	for _, c := range []struct {
		cols, units uint32
		t           string
	}{{300, 75000, "T:vec4<u32>"}, {301, 301000, "T:u32"}} {
		x := b.Tensor(serialization.Float32, []uint32{1000, c.cols}, -1)
		y := b.Tensor(serialization.Float32, []uint32{1000, c.cols}, -1)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 100}
		if err := flipOp(r, []int32{x, b.IntList(0), y}); err != nil {
			t.Fatal(err)
		}
		g := r.dispatches[0].groups
		if g[1] < 2 || uint64(g[0])*uint64(g[1])*gatherWG < uint64(c.units) || g[0] > 100 || g[1] > 100 {
			t.Errorf("grid %v does not fold %d invocations under 100 groups per dim", g, c.units)
		}
		if name := r.dispatches[0].k.Name; !strings.Contains(name, c.t) {
			t.Errorf("kernel %s, want %s", name, c.t)
		}
	}
}

// TestGatherEmpty: a size-0 output records no dispatch but gets its dims.
func TestGatherEmpty(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{4, 0, 3}, -1)
	y := b.Tensor(serialization.Float32, []uint32{4, 0, 3}, -1)
	r, dims, err := recordOne(t, b, flipOp, []int32{x, b.IntList(1), y}, nil, nil)
	if err != nil || len(r.dispatches) != 0 || fmt.Sprint(dims) != "[4 0 3]" {
		t.Errorf("flip of [4 0 3]: %v, %d dispatches, dims %v", err, len(r.dispatches), dims)
	}
}

// TestShapeOpsNoPanic calls every shape and index op on random argument
// lists drawn from a pool of odd values; each call must return (an error
// or nil), never panic.
func TestShapeOpsNoPanic(t *testing.T) {
	b := serialization.NewBuilder()
	var tensors, outs []int32
	dts := []serialization.DataType{serialization.Float32, serialization.Int32, serialization.Bool, serialization.Int64, serialization.Float16}
	for _, dt := range dts {
		for _, d := range [][]uint32{{}, {0}, {1}, {7}, {3, 5}, {2, 0, 3}, {1, 2, 1, 3, 1, 2}, {4, 4}} {
			tensors = append(tensors, b.Tensor(dt, d, -1))
		}
		outs = append(outs, b.Tensor(dt, []uint32{4096}, -1))
	}
	idx := []int32{b.Tensor(serialization.Int32, []uint32{3}, -1), b.Tensor(serialization.Int32, []uint32{}, -1),
		b.Tensor(serialization.Int32, []uint32{2, 1}, -1), b.Tensor(serialization.Int32, []uint32{3, 5}, -1)}
	tensors = append(tensors, idx...)
	var pool []int32
	for _, v := range []int64{0, 1, -1, 2, -3, 7, 1 << 40, -(1 << 62), 1<<63 - 1} {
		pool = append(pool, b.Int(v), b.SymInt(int32(v)))
	}
	pool = append(pool, b.Null(), b.Double(0.5), b.Bool(true), b.String("x"),
		b.IntList(), b.IntList(0), b.IntList(-1), b.IntList(1, 0), b.IntList(-1, -1), b.IntList(2, 3, 1<<40),
		b.IntList(1, 2, 1), b.IntList(2, 1, 3, 1), b.IntList(1<<62, 1<<62),
		b.IntList(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17))
	pool = append(pool, b.ValueList(tensors[3], tensors[11]), b.ValueList(), b.ValueList(b.Null(), idx[0]),
		b.ValueList(idx[2], idx[0]), b.ValueList(idx[0], idx[1], idx[2]), b.ValueList(tensors[4], tensors[4]),
		b.ValueList(b.Int(3), b.SymInt(-1)), b.ValueList(outs[0], outs[0]))
	type op struct {
		fn    Func
		nargs int
	}
	ops := []op{{viewOp("aten.view_copy.default"), 3}, {viewOp("aten.squeeze_copy.dims"), 3}, {viewOp("aten.unsqueeze_copy.default"), 3}, {viewOp("aten.clone.default"), 3}, {permuteCopy, 3},
		{catOp, 3}, {sliceCopy, 6}, {selectCopy, 4},
		{func(b Builder, a []int32) error { return splitCopy(b, a, true) }, 4},
		{func(b Builder, a []int32) error { return splitCopy(b, a, false) }, 4},
		{expandCopy, 4}, {repeatOp, 3}, {repeatInterleave, 5}, {flipOp, 3}, {indexSelect, 4}, {gatherOp, 5},
		{indexTensor, 3}, {embeddingOp, 6}}
	rng := uint64(1)
	next := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int(rng>>33) % n
	}
	ok := 0
	for i := 0; i < 30000; i++ {
		o := ops[i%len(ops)]
		args := make([]int32, o.nargs)
		args[0] = tensors[next(len(tensors))]
		for k := 1; k < len(args)-1; k++ {
			if next(3) == 0 {
				args[k] = tensors[next(len(tensors))]
			} else {
				args[k] = pool[next(len(pool))]
			}
		}
		args[len(args)-1] = outs[next(len(outs))]
		if next(8) == 0 {
			args[next(len(args))] = pool[next(len(pool))]
		}
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("op %d panicked on args %v: %v", i%len(ops), args, p)
				}
			}()
			if o.fn(r, args) == nil {
				ok++
			}
		}()
	}
	t.Logf("%d of 30000 calls succeeded", ok)
}

// viewOp is view op name's registered function (the copy it records).
func viewOp(name string) Func {
	fn, _ := Lookup(name)
	return fn
}

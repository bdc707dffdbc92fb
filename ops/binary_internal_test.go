package ops

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestBroadcastShape(t *testing.T) {
	for i, c := range []struct {
		a, b, want []int64
		ok         bool
	}{
		{[]int64{3, 5}, []int64{3, 5}, []int64{3, 5}, true},
		{[]int64{4, 1, 5}, []int64{3, 1}, []int64{4, 3, 5}, true},
		{[]int64{1}, []int64{2, 3}, []int64{2, 3}, true},
		{[]int64{}, []int64{2, 3}, []int64{2, 3}, true},
		{[]int64{2, 3}, []int64{}, []int64{2, 3}, true},
		{[]int64{0, 3}, []int64{1}, []int64{0, 3}, true},
		{[]int64{0}, []int64{1, 1}, []int64{1, 0}, true},
		{[]int64{3, 5}, []int64{4}, nil, false},
		{[]int64{2, 1}, []int64{3, 2, 4}, []int64{3, 2, 4}, true},
		{[]int64{0}, []int64{2}, nil, false},
	} {
		got, ok := BroadcastShape(c.a, c.b)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("%d: BroadcastShape(%v, %v) = %v, %v; want %v, %v", i, c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

func TestCoalesceBroadcast(t *testing.T) {
	for i, c := range []struct {
		out, a, b    []int64
		dims, sa, sb []int64 // innermost first
	}{
		// Same shape: one contiguous dim.
		{[]int64{2, 3, 7}, []int64{2, 3, 7}, []int64{2, 3, 7}, []int64{42}, []int64{1}, []int64{1}},
		// A one-element input strides 0.
		{[]int64{2, 3, 7}, []int64{2, 3, 7}, []int64{1}, []int64{42}, []int64{1}, []int64{0}},
		{[]int64{4, 5}, []int64{1, 1}, []int64{4, 5}, []int64{20}, []int64{0}, []int64{1}},
		{[]int64{4, 5}, []int64{4, 5}, []int64{}, []int64{20}, []int64{1}, []int64{0}},
		// One element in all: dims [1], no input strides.
		{[]int64{1, 1}, []int64{1}, []int64{1, 1}, []int64{1}, []int64{0}, []int64{0}},
		// Row bias: [N, C] + [C].
		{[]int64{6, 8}, []int64{6, 8}, []int64{8}, []int64{8, 6}, []int64{1, 8}, []int64{1, 0}},
		// Column: [N, C] + [N, 1].
		{[]int64{6, 8}, []int64{6, 8}, []int64{6, 1}, []int64{8, 6}, []int64{1, 8}, []int64{0, 1}},
		// {4,1,5} + {3,1} -> {4,3,5}.
		{[]int64{4, 3, 5}, []int64{4, 1, 5}, []int64{3, 1}, []int64{5, 3, 4}, []int64{1, 0, 5}, []int64{0, 1, 0}},
		// Leading broadcast dims merge: {2,3,4,5} + {4,5}.
		{[]int64{2, 3, 4, 5}, []int64{2, 3, 4, 5}, []int64{4, 5}, []int64{20, 6}, []int64{1, 20}, []int64{1, 0}},
		// Size-1 dims in the middle drop out.
		{[]int64{2, 1, 3}, []int64{2, 1, 3}, []int64{1, 1, 3}, []int64{3, 2}, []int64{1, 3}, []int64{1, 0}},
	} {
		dims, sa, sb := coalesceBroadcast(c.out, c.a, c.b)
		if !slices.Equal(dims, c.dims) || !slices.Equal(sa, c.sa) || !slices.Equal(sb, c.sb) {
			t.Errorf("%d: coalesceBroadcast(%v, %v, %v) = %v %v %v; want %v %v %v",
				i, c.out, c.a, c.b, dims, sa, sb, c.dims, c.sa, c.sb)
		}
	}
}

// TestElementwiseParamsLayout pins the Go twins to their WGSL structs.
func TestElementwiseParamsLayout(t *testing.T) {
	if n := binary.Size(ewParams{}); n != 160 {
		t.Errorf("ewParams is %d bytes, want 160", n)
	}
	p := ewParams{N: 1, Numel: 2, AlphaF: 0.5, AlphaI: -3, SF: 2, SI: -4, Rank: 7}
	p.Dims[0], p.Dims[7], p.S[0][1], p.S[1][7], p.S[2][2] = 10, 11, 12, 13, 14
	b := p.bytes()
	if len(b) != 160 {
		t.Fatalf("ewParams.bytes() is %d bytes, want 160", len(b))
	}
	u := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	if u(0) != 1 || u(4) != 2 || u(8) != 0x3f000000 || int32(u(12)) != -3 || u(16) != 0x40000000 || int32(u(20)) != -4 ||
		u(24) != 7 || u(32) != 10 || u(32+28) != 11 || u(64+4) != 12 || u(96+28) != 13 || u(128+8) != 14 {
		t.Errorf("ewParams.bytes() = %x", b)
	}
	if n := binary.Size(unaryParams{}); n != 32 {
		t.Errorf("unaryParams is %d bytes, want 32", n)
	}
	if n := len((&unaryParams{N: 1}).bytes()); n != 32 {
		t.Errorf("unaryParams.bytes() is %d bytes, want 32", n)
	}
}

// TestBinaryVariants checks which kernel each broadcast pattern gets.
func TestBinaryVariants(t *testing.T) {
	f, i := serialization.Float32, serialization.Int32
	for _, c := range []struct {
		op         string
		at, bt, ot serialization.DataType
		as, bs     []uint32
		want       string // fields of binaryVariant, %+v
		n          uint32
	}{
		{"add", f, f, f, []uint32{3, 5}, []uint32{3, 5}, "W:1 AVec:true BVec:true Rank:1", 15},
		{"add", f, f, f, []uint32{2, 3, 8}, []uint32{2, 3, 8}, "W:4 AVec:true BVec:true Rank:1", 12},
		{"mul", f, f, f, []uint32{2, 3, 8}, []uint32{}, "W:4 AVec:true BVec:false Rank:1", 12},
		{"mul", f, f, f, []uint32{1}, []uint32{7}, "W:1 AVec:false BVec:true Rank:1", 7},
		{"sub", f, f, f, []uint32{6, 8}, []uint32{8}, "W:4 AVec:true BVec:true Rank:2", 12},
		{"sub", f, f, f, []uint32{6, 8}, []uint32{6, 1}, "W:4 AVec:true BVec:false Rank:2", 12},
		{"div", i, i, f, []uint32{4, 1, 5}, []uint32{3, 1}, "W:1 AVec:true BVec:false Rank:3", 60},
		{"add", i, f, f, []uint32{4}, []uint32{4}, "ABuf:vec4<i32> BBuf:vec4<f32> OBuf:vec4<f32> CS:f32 CT:vec4<f32>", 1},
		{"div", i, i, f, []uint32{3}, []uint32{3}, "ABuf:i32 BBuf:i32 OBuf:f32 CS:f32 CT:f32", 3},
		{"mul", i, i, i, []uint32{3}, []uint32{1}, "ABuf:i32 BBuf:i32 OBuf:i32 CS:i32 CT:i32", 3},
	} {
		name := fmt.Sprintf("%s %v%v %v%v -> %v", c.op, c.at, c.as, c.bt, c.bs, c.ot)
		sb := serialization.NewBuilder()
		x, y := sb.Tensor(c.at, c.as, -1), sb.Tensor(c.bt, c.bs, -1)
		out, _ := BroadcastShape(ewI64(c.as), ewI64(c.bs))
		z := sb.Tensor(c.ot, ewU32(out), -1)
		args := []int32{x, y, z}
		layout := layoutPlain
		if c.op == "add" || c.op == "sub" {
			args, layout = []int32{x, y, sb.Int(1), z}, layoutAlpha
		}
		r := &recorder{Values: Values{G: sb.Graph()}, maxPerDim: 65535}
		if err := binaryOp(r, c.op, layout, args); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(r.dispatches) != 1 {
			t.Fatalf("%s: %d dispatches", name, len(r.dispatches))
		}
		d := r.dispatches[0]
		if !strings.Contains(d.k.Name, c.want) {
			t.Errorf("%s: kernel %s, want %s", name, d.k.Name, c.want)
		}
		if n := binary.LittleEndian.Uint32(d.params); n != c.n {
			t.Errorf("%s: params.n = %d, want %d", name, n, c.n)
		}
		if !slices.Equal(d.in, []int32{x, y}) {
			t.Errorf("%s: inputs %v", name, d.in)
		}
	}
}

func ewI64(d []uint32) []int64 {
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return out
}

func ewU32(d []int64) []uint32 {
	out := make([]uint32, len(d))
	for i, v := range d {
		out[i] = uint32(v)
	}
	return out
}

// TestElementwiseLiveShapes: outputs take the broadcast of the inputs'
// live shapes, whatever out's serialized dims (only its capacity counts),
// and params and grids follow the live shapes.
func TestElementwiseLiveShapes(t *testing.T) {
	f, i, bo := serialization.Float32, serialization.Int32, serialization.Bool
	for _, c := range []struct {
		name     string
		op       string
		dts      []serialization.DataType // inputs then out
		decl     [][]uint32               // serialized dims, inputs then out
		live     [][]int64                // live input dims (nil: serialized)
		scalar   bool                     // a .Scalar op: other is Int 2
		want     []int64
		n, numel uint32
	}{
		{"flat out", "aten.add.Tensor", []serialization.DataType{f, f, f}, [][]uint32{{3, 5}, {5}, {15}}, nil, false, []int64{3, 5}, 15, 15},
		{"bigger out", "aten.mul.Tensor", []serialization.DataType{f, f, f}, [][]uint32{{3, 1}, {1, 5}, {4, 4}}, nil, false, []int64{3, 5}, 15, 15},
		{"live inputs", "aten.sub.Tensor", []serialization.DataType{i, i, i}, [][]uint32{{8, 6}, {6}, {8, 6}}, [][]int64{{2, 4}, {4}}, false, []int64{2, 4}, 2, 8},
		{"live rank 0", "aten.div.Tensor", []serialization.DataType{f, f, f}, [][]uint32{{4}, {4}, {4}}, [][]int64{{}, {}}, false, []int64{}, 1, 1},
		{"scalar", "aten.mul.Scalar", []serialization.DataType{f, f}, [][]uint32{{7, 2}, {14}}, [][]int64{{3, 2}}, true, []int64{3, 2}, 6, 6},
		{"compare", "aten.lt.Tensor", []serialization.DataType{f, i, bo}, [][]uint32{{3, 1}, {1, 5}, {16}}, nil, false, []int64{3, 5}, 4, 15},
		{"compare scalar", "aten.ge.Scalar", []serialization.DataType{i, bo}, [][]uint32{{9}, {9}}, [][]int64{{5}}, true, []int64{5}, 2, 5},
		{"where", "aten.where.self", []serialization.DataType{bo, f, f, f}, [][]uint32{{3, 1, 1}, {1, 4, 1}, {5}, {60}}, nil, false, []int64{3, 4, 5}, 60, 60},
		{"where bool", "aten.where.self", []serialization.DataType{bo, bo, bo, bo}, [][]uint32{{3, 1, 1}, {1, 4, 1}, {5}, {60}}, nil, false, []int64{3, 4, 5}, 15, 60},
	} {
		sb := serialization.NewBuilder()
		var args []int32
		for k, dt := range c.dts {
			if c.scalar && k == 1 {
				args = append(args, sb.Int(2))
			}
			args = append(args, sb.Tensor(dt, c.decl[k], -1))
		}
		if c.op == "aten.add.Tensor" || c.op == "aten.sub.Tensor" {
			args = append(args[:2], sb.Int(1), args[2])
		}
		r := &recorder{Values: Values{G: sb.Graph()}, maxPerDim: 65535, live: map[int32][]int64{}}
		for k, d := range c.live {
			r.live[args[k]] = d
		}
		fn, _ := Lookup(c.op)
		if err := fn(r, args); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		out := args[len(args)-1]
		if got, ok := r.live[out]; !ok || !slices.Equal(got, c.want) {
			t.Errorf("%s: out dims %v, want %v", c.name, got, c.want)
		}
		if len(r.dispatches) != 1 {
			t.Fatalf("%s: %d dispatches", c.name, len(r.dispatches))
		}
		p := r.dispatches[0].params
		if n, numel := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]); n != c.n || numel != c.numel {
			t.Errorf("%s: params n=%d numel=%d, want %d %d", c.name, n, numel, c.n, c.numel)
		}
	}
}

// TestElementwiseGridFolds: on a device allowing few workgroups per
// dimension, every elementwise kernel folds its grid into 2-D and still
// covers all invocations.
func TestElementwiseGridFolds(t *testing.T) {
	f, bo := serialization.Float32, serialization.Bool
	sb := serialization.NewBuilder()
	x, y := sb.Tensor(f, []uint32{300, 1}, -1), sb.Tensor(f, []uint32{1, 301}, -1)
	c := sb.Tensor(bo, []uint32{300, 301}, -1)
	zf, zb := sb.Tensor(f, []uint32{300, 301}, -1), sb.Tensor(bo, []uint32{300, 301}, -1)
	r := &recorder{Values: Values{G: sb.Graph()}, maxPerDim: 32}
	for _, call := range []struct {
		op   string
		args []int32
		n    uint64 // invocations
	}{
		{"aten.add.Tensor", []int32{x, y, sb.Int(1), zf}, 300 * 301},
		{"aten.eq.Tensor", []int32{x, y, zb}, (300*301 + 3) / 4},
		{"aten.where.self", []int32{c, x, y, zf}, 300 * 301},
	} {
		fn, _ := Lookup(call.op)
		r.dispatches = nil
		if err := fn(r, call.args); err != nil {
			t.Fatalf("%s: %v", call.op, err)
		}
		g := r.dispatches[0].groups
		if g[0] > 32 || g[1] > 32 || uint64(g[0])*uint64(g[1])*256 < call.n || g[1] < 2 {
			t.Errorf("%s: grid %v for %d invocations", call.op, g, call.n)
		}
	}
}

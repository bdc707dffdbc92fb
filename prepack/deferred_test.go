package prepack

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestDeferral checks DeferredConstants: only a constant whose every use
// is a prepack source is deferred; one used directly, through a ValueList
// argument, or as a graph output keeps its buffer.
func TestDeferral(t *testing.T) {
	b := serialization.NewBuilder()
	n := 0
	c := func() int32 {
		n++
		id, _ := b.NamedConst(serialization.Float32, []uint32{2}, f32(float32(n), 1))
		return id
	}
	x := b.Tensor(serialization.Float32, []uint32{2}, -1)
	used := b.Tensor(serialization.Float32, []uint32{2}, -1) // a prepack output read directly
	b.Op("aten.clone.default", used, b.Null(), b.Tensor(serialization.Float32, []uint32{2}, -1))
	only := c()   // prepack only: deferred
	direct := c() // prepack and clone
	output := c() // prepack and a graph output
	listed := c() // prepack and in a ValueList arg
	unused := c() // no uses at all: not deferred (nothing prepacks it)
	twice := c()  // two prepacks: still deferred
	for _, src := range []int32{only, direct, output, listed, twice, twice} {
		dst := used
		if src != only {
			// Unused prepack outputs are deferred themselves (below).
			dst = b.Tensor(serialization.Float32, []uint32{2}, -1)
		}
		b.Op("et_vk.prepack.default", src, dst)
	}
	b.Op("aten.clone.default", direct, b.Null(), b.Tensor(serialization.Float32, []uint32{2}, -1))
	b.Op("aten.some_list_op.default", b.ValueList(listed, x), b.Tensor(serialization.Float32, []uint32{2}, -1))
	b.Inputs(x)
	b.Outputs(output)
	all := Deferred(b.Graph(), nil)
	got := map[int32]bool{} // the constants among them
	for id := range all {
		if b.Graph().Values[id].Tensor.IsConstant() {
			got[id] = true
		}
	}
	if all[used] {
		t.Errorf("a prepack output read directly was deferred")
	}
	want := map[int32]bool{only: true, twice: true}
	if len(got) != len(want) {
		t.Errorf("deferred %v, want %v", got, want)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("value %d not deferred; got %v", id, got)
		}
	}
	if got[unused] {
		t.Errorf("a constant nothing uses was deferred")
	}
}

// testPacked says that test.packed_read [w, out] reads w only through
// PackWeight.
func testPacked(op string) []int {
	if op == "test.packed_read" {
		return []int{0}
	}
	return nil
}

// TestDeferredPrepackOutputs: a dedicated prepack output whose only uses
// are packed arguments (or none) gets no buffer; one read directly, listed
// as a graph output or input, prepacked twice or aliased (mem_obj_id >= 0)
// keeps its buffer. The constant behind a deferred output stays deferred.
func TestDeferredPrepackOutputs(t *testing.T) {
	b := serialization.NewBuilder()
	f := serialization.Float32
	prep := func(memObj int32) (int32, int32) {
		c, _ := b.NamedConst(f, []uint32{2}, f32(1, 2))
		p := b.Tensor(f, []uint32{2}, memObj)
		b.Op("et_vk.prepack.default", c, p)
		return c, p
	}
	out := func() int32 { return b.Tensor(f, []uint32{2}, -1) }
	c1, packedOnly := prep(-1)
	b.Op("test.packed_read", packedOnly, out())
	_, unused := prep(-1)
	_, direct := prep(-1)
	b.Op("test.packed_read", direct, out())
	b.Op("aten.clone.default", direct, b.Null(), out())
	_, graphOut := prep(-1)
	_, aliased := prep(3)
	b.Op("test.packed_read", aliased, out())
	c2, twice := prep(-1)
	b.Op("et_vk.prepack.default", c2, twice)
	b.Op("test.packed_read", twice, out())
	b.Outputs(graphOut)
	got := Deferred(b.Graph(), testPacked)
	for _, tc := range []struct {
		name string
		id   int32
		want bool
	}{
		{"read only packed", packedOnly, true},
		{"its constant", c1, true},
		{"unused", unused, true},
		{"read directly too", direct, false},
		{"a graph output", graphOut, false},
		{"aliased", aliased, false},
		{"prepacked twice", twice, false},
	} {
		if got[tc.id] != tc.want {
			t.Errorf("%s (value %d): deferred %v, want %v", tc.name, tc.id, got[tc.id], tc.want)
		}
	}
}

func f32(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

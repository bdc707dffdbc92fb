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
	only := c()   // prepack only: deferred
	direct := c() // prepack and clone
	output := c() // prepack and a graph output
	listed := c() // prepack and in a ValueList arg
	unused := c() // no uses at all: not deferred (nothing prepacks it)
	twice := c()  // two prepacks: still deferred
	for _, src := range []int32{only, direct, output, listed, twice, twice} {
		b.Op("et_vk.prepack.default", src, b.Tensor(serialization.Float32, []uint32{2}, -1))
	}
	b.Op("aten.clone.default", direct, b.Null(), b.Tensor(serialization.Float32, []uint32{2}, -1))
	b.Op("aten.some_list_op.default", b.ValueList(listed, x), b.Tensor(serialization.Float32, []uint32{2}, -1))
	b.Inputs(x)
	b.Outputs(output)
	got := Deferred(b.Graph())
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

func f32(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

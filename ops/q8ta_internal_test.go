package ops

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestQ8taParamsLayout pins q8taParams to q8ta.wgsl's Params: 16 scalars,
// then dims, sa and sb as array<vec4<u32>, 2> each (160 bytes).
func TestQ8taParamsLayout(t *testing.T) {
	p := q8taParams{numel: 1, zpA: -2, zpB: 3, zpOut: -4, sA: 0.5, sB: 2, alpha: -1, invOut: 4,
		qmin: -100, qmax: 90, h: 5, w: 6, r: 7,
		dims: []uint32{8, 9}, sa: []uint32{10, 11}, sb: []uint32{0, 12}}
	b := p.bytes()
	if len(b) != 160 {
		t.Fatalf("q8taParams.bytes() is %d bytes, want 160", len(b))
	}
	u := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	f := func(off int) float32 { return math.Float32frombits(u(off)) }
	if u(0) != 1 || int32(u(4)) != -2 || int32(u(8)) != 3 || int32(u(12)) != -4 ||
		f(16) != 0.5 || f(20) != 2 || f(24) != -1 || f(28) != 4 ||
		int32(u(32)) != -100 || int32(u(36)) != 90 || u(40) != 5 || u(44) != 6 ||
		u(48) != 7 || u(52) != 2 /* rank */ ||
		u(64) != 8 || u(68) != 9 || u(72) != 0 || u(96) != 10 || u(100) != 11 || u(128) != 0 || u(132) != 12 {
		t.Errorf("q8taParams.bytes() = %x", b)
	}
}

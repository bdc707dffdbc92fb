package ops

import (
	"encoding/binary"
	"testing"
)

// TestFillUnaryParamsLayout pins the fill and unary Go twins to their WGSL
// structs (32 bytes, fields in order).
func TestFillUnaryParamsLayout(t *testing.T) {
	f := (&fillParams{N: 1, Word: 2, AI: -3, BI: 4, AF: 0.5, BF: 2}).bytes()
	u := (&unaryParams{N: 1, Numel: 2, AI: -3, BI: 4, AF: 0.5, BF: 2, NaN: 1, Inf: -2}).bytes()
	for name, b := range map[string][]byte{"fillParams": f, "unaryParams": u} {
		if len(b) != 32 {
			t.Fatalf("%s.bytes() is %d bytes, want 32", name, len(b))
		}
		w := func(i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
		if w(0) != 1 || w(1) != 2 || int32(w(2)) != -3 || w(3) != 4 || w(4) != 0x3f000000 || w(5) != 0x40000000 {
			t.Errorf("%s.bytes() = %x", name, b)
		}
	}
	if binary.LittleEndian.Uint32(u[24:]) != 0x3f800000 || binary.LittleEndian.Uint32(u[28:]) != 0xc0000000 {
		t.Errorf("unaryParams NaN/Inf slots = %x", u[24:])
	}
}

package graph

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestHeadParamsLayout pins the head kernels' Go twins to their WGSL
// structs (argmax.wgsl, topk.wgsl): sizes and each field's offset.
func TestHeadParamsLayout(t *testing.T) {
	a := uniformBytes(argmaxParams{Base: 1, N: 2})
	k := uniformBytes(topkParams{Base: 3, N: 4, K: 5, Cap: 6, InvTemp: 0.5})
	if len(a) != 16 || len(k) != 32 || len(k) > headParamsSize {
		t.Fatalf("argmax params %d bytes, top-k %d, want 16 and 32 (bound %d)", len(a), len(k), headParamsSize)
	}
	u := func(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	for _, f := range []struct {
		name string
		b    []byte
		off  int
		want uint32
	}{
		{"argmax base", a, 0, 1}, {"argmax n", a, 4, 2}, {"argmax pad", a, 8, 0}, {"argmax pad", a, 12, 0},
		{"topk base", k, 0, 3}, {"topk n", k, 4, 4}, {"topk k", k, 8, 5}, {"topk cap", k, 12, 6},
		{"topk inv_temp", k, 16, math.Float32bits(0.5)}, {"topk pad", k, 20, 0}, {"topk pad", k, 28, 0},
	} {
		if got := u(f.b, f.off); got != f.want {
			t.Errorf("%s at %d: %#x, want %#x", f.name, f.off, got, f.want)
		}
	}
}

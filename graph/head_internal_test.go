package graph

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// TestHeadParamsLayout pins the head kernels' Go twins to their WGSL
// structs (argmax.wgsl, topk.wgsl): sizes and each field's offset.
func TestHeadParamsLayout(t *testing.T) {
	a := uniformBytes(argmaxParams{Base: 1, N: 2, Adv: 7, Chunk: 8})
	k := uniformBytes(topkParams{Base: 3, N: 4, K: 5, Cap: 6, InvTemp: 0.5, Chunk: 9})
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
		{"argmax base", a, 0, 1}, {"argmax n", a, 4, 2}, {"argmax adv", a, 8, 7}, {"argmax chunk", a, 12, 8},
		{"topk base", k, 0, 3}, {"topk n", k, 4, 4}, {"topk k", k, 8, 5}, {"topk cap", k, 12, 6},
		{"topk inv_temp", k, 16, math.Float32bits(0.5)}, {"topk chunk", k, 20, 9}, {"topk pad", k, 24, 0}, {"topk pad", k, 28, 0},
	} {
		if got := u(f.b, f.off); got != f.want {
			t.Errorf("%s at %d: %#x, want %#x", f.name, f.off, got, f.want)
		}
	}
}

// TestReadTopRejects: a top-k read-back that cannot be (counts that do
// not add up, a token past the vocabulary) is an error wrapping
// ErrInvalidGraph, never a panic.
func TestReadTopRejects(t *testing.T) {
	h := &Head{vocab: 1000}
	for _, c := range []struct {
		name                     string
		written, ties, need, tok uint32
		k                        int
	}{
		{"fewer ties than needed", 121, 0, 135, 0, 256},
		{"more pairs than slots", topkCap + 1, 400, 10, 0, 20},
		{"more needed than k", 5, 5, 6, 0, 5},
		{"fewer pairs than above the k-th", 3, 1, 1, 0, 5},
		{"more pairs than above and ties", 9, 1, 1, 0, 5},
		{"token past the vocabulary", 5, 1, 1, 1000, 5},
	} {
		m := make([]byte, topkBytes)
		binary.LittleEndian.PutUint32(m[0:], c.written)
		binary.LittleEndian.PutUint32(m[4:], c.ties)
		binary.LittleEndian.PutUint32(m[8:], c.need)
		for j := 0; j < int(min(c.written, topkCap)); j++ {
			binary.LittleEndian.PutUint32(m[4*(8+2*j):], c.tok)
		}
		var res HeadResult
		if err := h.readTop(m, c.k, &res); !errors.Is(err, ErrInvalidGraph) {
			t.Errorf("%s: %v, want ErrInvalidGraph", c.name, err)
		}
	}
}

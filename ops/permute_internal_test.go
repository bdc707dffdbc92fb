package ops

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestPermutePlan checks the coalescing that runs before the kernel.
func TestPermutePlan(t *testing.T) {
	for i, c := range []struct {
		in             []int64
		perm           []int
		dims, inStride []int64
	}{
		{[]int64{7}, []int{0}, []int64{7}, []int64{1}},
		{[]int64{2, 3, 4}, []int{0, 1, 2}, []int64{24}, []int64{1}},                     // identity: one axis
		{[]int64{3, 5}, []int{1, 0}, []int64{5, 3}, []int64{1, 5}},                      // transpose
		{[]int64{2, 3, 7}, []int{2, 0, 1}, []int64{7, 6}, []int64{1, 7}},                // 0,1 stay adjacent
		{[]int64{2, 3, 4, 5}, []int{0, 2, 3, 1}, []int64{2, 20, 3}, []int64{60, 1, 20}}, // NCHW -> NHWC
		{[]int64{1, 9}, []int{1, 0}, []int64{9}, []int64{1}},                            // size-1 axis dropped
		{[]int64{3, 1, 4}, []int{2, 1, 0}, []int64{4, 3}, []int64{1, 4}},
		{[]int64{1, 1}, []int{1, 0}, []int64{1}, []int64{1}},       // one element
		{[]int64{}, []int{}, []int64{1}, []int64{1}},               // rank 0
		{[]int64{2, 1, 3}, []int{0, 2, 1}, []int64{6}, []int64{1}}, // moving a size-1 axis is a copy
	} {
		dims, st := permutePlan(c.in, c.perm)
		if !slices.Equal(dims, c.dims) || !slices.Equal(st, c.inStride) {
			t.Errorf("%d: permutePlan(%v, %v) = %v, %v; want %v, %v", i, c.in, c.perm, dims, st, c.dims, c.inStride)
		}
	}
}

func TestPermuteNormalize(t *testing.T) {
	for _, c := range []struct {
		dims []int64
		rank int
		want string
	}{
		{[]int64{2, 0, 1}, 3, "[2 0 1]"},
		{[]int64{-1, -3, -2}, 3, "[2 0 1]"},
		{[]int64{}, 0, "[]"},
		{[]int64{0, 0}, 2, "error"},
		{[]int64{0, -2}, 2, "error"},
		{[]int64{2, 0}, 2, "error"},
		{[]int64{-3, 0}, 2, "error"},
		{[]int64{0}, 2, "error"},
	} {
		p, err := permuteNormalize(c.dims, c.rank)
		got := fmt.Sprint(p)
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("permuteNormalize(%v, %d) = %s (%v), want %s", c.dims, c.rank, got, err, c.want)
		}
	}
}

// TestPermuteParams checks the uniform block against the WGSL Params
// struct: words, numel, two pads, then out and in strides as
// array<vec4<u32>, 2> each (80 bytes).
func TestPermuteParams(t *testing.T) {
	for _, c := range []struct {
		dt           serialization.DataType
		words, numel uint32
		es           string
	}{
		{serialization.Float32, 24, 24, "ES:4"},
		{serialization.Int64, 48, 24, "ES:8"},
		{serialization.Float16, 12, 24, "ES:2"},
		{serialization.Bool, 6, 24, "ES:1"},
	} {
		b := serialization.NewBuilder()
		x := b.Tensor(c.dt, []uint32{2, 3, 4}, -1)
		y := b.Tensor(c.dt, []uint32{4, 2, 3}, -1)
		r := &recorder{Values: Values{G: b.Graph()}, maxPerDim: 65535}
		if err := permuteCopy(r, []int32{x, b.IntList(2, 0, 1), y}); err != nil {
			t.Fatal(err)
		}
		if len(r.dispatches) != 1 {
			t.Fatalf("%v: %d dispatches", c.dt, len(r.dispatches))
		}
		d := r.dispatches[0]
		p := make([]uint32, len(d.params)/4)
		for i := range p {
			p[i] = u32At(d.params, i)
		}
		// [2,3,4] by [2,0,1] coalesces to out dims [4, 6] with input
		// strides [1, 4]; the output strides are [6, 1].
		want := []uint32{c.words, c.numel, 0, 0, 6, 1, 0, 0, 0, 0, 0, 0, 1, 4, 0, 0, 0, 0, 0, 0}
		if !slices.Equal(p, want) {
			t.Errorf("%v: params %v, want %v", c.dt, p, want)
		}
		if !strings.Contains(d.k.Name, c.es) {
			t.Errorf("%v: kernel %s, want %s", c.dt, d.k.Name, c.es)
		}
	}
}

package ops

import (
	"math"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.permute_copy.default args: [self, dims (IntList), out]
// aten.permute.default args:      [self, dims (IntList), out]
//
// out is self with its axes reordered: out.shape[i] = self.shape[dims[i]].
// dims may be negative (counted from the end) and must be a permutation of
// the axes; ranks up to 8. Any dtype: 4-byte elements move as u32 words,
// 8-byte ones as two words, and 1- and 2-byte ones are gathered and packed
// so each invocation writes one whole output word (shaders/permute.wgsl).
func init() {
	Register("aten.permute_copy.default", permuteCopy)
	Register("aten.permute.default", permuteCopy)
}

const (
	permuteWG      = 256
	permuteMaxRank = 8 // the uniform block holds 8 strides per side
)

func permuteCopy(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, dims, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return Errorf(0, "self: value %d is %v, want a tensor", args[0], b.Kind(args[0]))
	}
	dims, err := b.IntList(args[1])
	if err != nil {
		return Errorf(1, "dims: value %d (%v) is not a list of ints", args[1], b.Kind(args[1]))
	}
	if len(in.Dims) > permuteMaxRank {
		return Errorf(0, "rank %d exceeds %d", len(in.Dims), permuteMaxRank)
	}
	perm, err := permuteNormalize(dims, len(in.Dims))
	if err != nil {
		return err
	}
	want := make([]int64, len(perm))
	for i, p := range perm {
		want[i] = in.Dims[p]
	}
	if _, err := Output(b, 2, args[2], in.DType, want); err != nil {
		return err
	}
	if in.Numel == 0 {
		return nil
	}
	es := in.DType.Size()
	if in.NBytes > math.MaxInt32 {
		return Errorf(0, "%d bytes is too large", in.NBytes)
	}

	pdims, inStride := permutePlan(in.Dims, perm)
	rank := len(pdims)
	sh := struct {
		WG, ES, Last int
		Axes, Subs   []int
	}{WG: permuteWG, ES: es, Last: rank - 1, Axes: permuteIota(rank - 1)}
	if es < 4 {
		sh.Subs = permuteIota(4 / es)
	}
	k, err := shaders.Render("permute.wgsl", sh, "main", shaders.Layout(1, 1, true), permuteWG)
	if err != nil {
		return err
	}
	words := uint64(in.NBytes+3) / 4
	grid, err := Grid(words, permuteWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	outStride := make([]uint32, rank)
	s := uint32(1)
	for i := rank - 1; i >= 0; i-- {
		outStride[i] = s
		s *= uint32(pdims[i])
	}
	inStride32 := make([]uint32, rank)
	for i, v := range inStride {
		inStride32[i] = uint32(v)
	}
	var p Params
	p.U32(uint32(words)).U32(uint32(in.Numel)).U32(0).U32(0)
	p.U32s(outStride, 8).U32s(inStride32, 8)
	return b.Dispatch(k, []int32{args[0]}, []int32{args[2]}, p.Bytes(), grid)
}

// permuteNormalize checks that dims is a permutation of 0..rank-1 (negative
// entries count from the end) and returns it normalised.
func permuteNormalize(dims []int64, rank int) ([]int, error) {
	if len(dims) != rank {
		return nil, Errorf(1, "dims %v has %d entries for a rank-%d self", dims, len(dims), rank)
	}
	perm := make([]int, rank)
	seen := make([]bool, rank)
	for i, d := range dims {
		if d < 0 {
			d += int64(rank)
		}
		if d < 0 || d >= int64(rank) {
			return nil, Errorf(1, "dims %v: %d is out of range for rank %d", dims, dims[i], rank)
		}
		if seen[d] {
			return nil, Errorf(1, "dims %v is not a permutation (axis %d repeats)", dims, d)
		}
		seen[d] = true
		perm[i] = int(d)
	}
	return perm, nil
}

// permutePlan coalesces the permutation of a tensor with dims in: axes of
// size 1 are dropped and runs of output axes that are also contiguous in
// the input are merged. It returns the output dims and, per output axis,
// the input stride in elements; the rank is at least 1.
func permutePlan(in []int64, perm []int) (dims, inStride []int64) {
	stride := make([]int64, len(in))
	s := int64(1)
	for i := len(in) - 1; i >= 0; i-- {
		stride[i] = s
		s *= in[i]
	}
	for _, p := range perm {
		d, st := in[p], stride[p]
		if d == 1 {
			continue
		}
		// The previous output axis steps over exactly this one in the
		// input: the two are one axis of d·(its size) elements.
		if n := len(dims); n > 0 && inStride[n-1] == d*st {
			dims[n-1] *= d
			inStride[n-1] = st
			continue
		}
		dims = append(dims, d)
		inStride = append(inStride, st)
	}
	if len(dims) == 0 {
		return []int64{1}, []int64{1}
	}
	return dims, inStride
}

func permuteIota(n int) []int {
	s := make([]int, max(n, 0))
	for i := range s {
		s[i] = i
	}
	return s
}

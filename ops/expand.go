package ops

import (
	"math"
	"slices"
)

// aten.expand_copy.default args:            [self, size, implicit, out]
// aten.repeat.default args:                 [self, repeats, out]
// aten.repeat_interleave.self_int args:     [self, repeats (Int/SymInt), dim (Int or Null), output_size (Int or Null), out]
// aten.flip.default args:                   [self, dims, out]
//
// expand broadcasts size-1 dims of self to size (-1 keeps a dim; size may
// add leading dims). repeat tiles self repeats[k] times along each dim;
// repeats may have more entries than self has dims (self gets leading
// size-1 dims). repeat_interleave repeats each element repeats times along
// dim, or of the flattened self when dim is Null. flip reverses the listed
// dims (negative dims count from the end, duplicates are rejected). Any
// dtype; all are strided gathers (shaders/gather.wgsl): broadcast and
// repeated dims read with stride 0, flipped ones with a negative stride.
func init() {
	Register("aten.expand_copy.default", expandCopy)
	Register("aten.repeat.default", repeatOp)
	Register("aten.repeat_interleave.self_int", repeatInterleave)
	Register("aten.flip.default", flipOp)
}

func expandCopy(b Builder, args []int32) error {
	if err := gatherArgs(args, 4, "[self, size, implicit, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	size, err := b.IntList(args[1])
	if err != nil {
		return argErr(1, err)
	}
	lead := len(size) - len(in.Dims)
	if lead < 0 {
		return Errorf(1, "size %v has fewer dims than self %v", size, in.Dims)
	}
	dims := make([]int64, len(size))
	p := gatherPlan{dims: dims, stride: make([]int64, len(size)), region: -1}
	st := gatherContig(in.Dims)
	for k, s := range size {
		if k < lead {
			if s < 0 {
				return Errorf(1, "size %v: new leading dim %d cannot be %d", size, k, s)
			}
			dims[k] = s
			continue
		}
		d := in.Dims[k-lead]
		switch {
		case s == -1 || s == d:
			dims[k], p.stride[k] = d, st[k-lead]
		case d == 1 && s >= 0:
			dims[k] = s
		default:
			return Errorf(1, "cannot expand self %v to size %v (dim %d: %d to %d)", in.Dims, size, k, d, s)
		}
	}
	if _, err := Output(b, 3, args[3], in.DType, dims); err != nil {
		return err
	}
	return recordGather(b, p, in, args[3])
}

func repeatOp(b Builder, args []int32) error {
	if err := gatherArgs(args, 3, "[self, repeats, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	reps, err := b.IntList(args[1])
	if err != nil {
		return argErr(1, err)
	}
	lead := len(reps) - len(in.Dims)
	if lead < 0 {
		return Errorf(1, "repeats %v has fewer dims than self %v", reps, in.Dims)
	}
	src := append(make([]int64, lead), in.Dims...)
	for k := 0; k < lead; k++ {
		src[k] = 1
	}
	st := gatherContig(src)
	dims := make([]int64, len(reps))
	// Each out dim k is (repeat r, source d): two plan dims, the outer
	// with stride 0.
	p := gatherPlan{region: -1}
	for k, r := range reps {
		if r < 0 {
			return Errorf(1, "repeats %v has a negative entry", reps)
		}
		if src[k] > 0 && r > math.MaxInt64/src[k] {
			return Errorf(1, "repeats %v overflow self %v", reps, in.Dims)
		}
		dims[k] = r * src[k]
		p.dims = append(p.dims, r, src[k])
		p.stride = append(p.stride, 0, st[k])
	}
	if _, err := Output(b, 2, args[2], in.DType, dims); err != nil {
		return err
	}
	return recordGather(b, p, in, args[2])
}

func repeatInterleave(b Builder, args []int32) error {
	if err := gatherArgs(args, 5, "[self, repeats, dim, output_size, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	r, err := gatherInt(b, args, 1, "repeats (only an int is supported)")
	if err != nil {
		return err
	}
	if r < 0 {
		return Errorf(1, "repeats %d is negative", r)
	}
	src := []int64{in.Numel}
	dim := 0
	if !b.IsNull(args[2]) {
		if dim, err = gatherDimArg(b, args, 2, len(in.Dims)); err != nil {
			return err
		}
		src = in.Dims
		if len(src) == 0 {
			src = []int64{1}
		}
	}
	dims := slices.Clone(src)
	if dims[dim] > 0 && r > math.MaxInt64/dims[dim] {
		return Errorf(1, "repeats %d overflows dim %d of size %d", r, dim, dims[dim])
	}
	dims[dim] *= r
	if !b.IsNull(args[3]) {
		n, err := gatherInt(b, args, 3, "output_size")
		if err != nil {
			return err
		}
		if n != dims[dim] {
			return Errorf(3, "output_size %d, but the result has %d along dim %d", n, dims[dim], dim)
		}
	}
	if _, err := Output(b, 4, args[4], in.DType, dims); err != nil {
		return err
	}
	// dim becomes (source d, repeat r) with stride 0 on the repeat.
	st := gatherContig(src)
	p := gatherPlan{region: -1}
	for k := range src {
		p.dims = append(p.dims, src[k])
		p.stride = append(p.stride, st[k])
		if k == dim {
			p.dims = append(p.dims, r)
			p.stride = append(p.stride, 0)
		}
	}
	return recordGather(b, p, in, args[4])
}

func flipOp(b Builder, args []int32) error {
	if err := gatherArgs(args, 3, "[self, dims, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	fd, err := b.IntList(args[1])
	if err != nil {
		return argErr(1, err)
	}
	p := gatherView(in.Dims)
	seen := map[int]bool{}
	for _, d := range fd {
		k, err := gatherDim(1, d, len(in.Dims))
		if err != nil {
			return err
		}
		if seen[k] {
			return Errorf(1, "dims %v lists dim %d twice", fd, k)
		}
		seen[k] = true
		if len(in.Dims) == 0 {
			continue // a scalar has nothing to flip
		}
		if in.Dims[k] > 0 {
			p.base += (in.Dims[k] - 1) * p.stride[k]
		}
		p.stride[k] = -p.stride[k]
	}
	if _, err := Output(b, 2, args[2], in.DType, in.Dims); err != nil {
		return err
	}
	return recordGather(b, p, in, args[2])
}

package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten.slice_copy.Tensor args:             [self, dim, start (Int/SymInt/Null), end (Int/SymInt/Null), step, out]
// aten.select_copy.int args:               [self, dim, index, out]
// aten.split_with_sizes_copy.default args: [self, split_sizes, dim, ValueList outs]
// aten.split_copy.Tensor args:             [self, split_size, dim, ValueList outs]
//
// slice clamps start and end like torch (negative counts from the end,
// out-of-range bounds clamp to [0, size], end < start is empty); step must
// be at least 1. select takes a negative index from the end and rejects an
// out-of-range one; selecting from a 1-D tensor gives a scalar. split cuts
// dim into pieces of the given sizes (split_copy: split_size each, the last
// one shorter), one output each. Any dtype (shaders/gather.wgsl).
func init() {
	Register("aten.slice_copy.Tensor", sliceCopy)
	RegisterOp(Op{Name: "aten.select_copy.int", Run: selectCopy, View: selectView})
	Register("aten.split_with_sizes_copy.default", func(b Builder, args []int32) error { return splitCopy(b, args, true) })
	Register("aten.split_copy.Tensor", func(b Builder, args []int32) error { return splitCopy(b, args, false) })
}

// sliceBound reads an optional slice bound and clamps it to [0, size].
func sliceBound(b Builder, args []int32, arg int, def, size int64) (int64, error) {
	if b.IsNull(args[arg]) {
		return def, nil
	}
	v, err := gatherInt(b, args, arg, "bound")
	if err != nil {
		return 0, err
	}
	if v < 0 {
		v += size
	}
	return min(max(v, 0), size), nil
}

func sliceCopy(b Builder, args []int32) error {
	sl, err := sliceParse(b, args)
	if err != nil {
		return err
	}
	return recordSlice(b, sl.in, sl.dim, sl.start, max(sl.end, sl.start), sl.step, 5, args[5])
}

// sliceCall is a checked slice_copy: rows [start, end) (clamped) of in
// along dim, every step-th.
type sliceCall struct {
	in               Tensor
	dim              int
	start, end, step int64
}

// sliceParse checks slice_copy's args.
func sliceParse(b Builder, args []int32) (sliceCall, error) {
	if err := gatherArgs(args, 6, "[self, dim, start, end, step, out]"); err != nil {
		return sliceCall{}, err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return sliceCall{}, err
	}
	if len(in.Dims) == 0 {
		return sliceCall{}, Errorf(0, "slice of a scalar")
	}
	dim, err := gatherDimArg(b, args, 1, len(in.Dims))
	if err != nil {
		return sliceCall{}, err
	}
	sl, err := sliceCall{in: in, dim: dim}.bounds(b, args)
	if err != nil {
		return sliceCall{}, err
	}
	step := int64(1)
	if !b.IsNull(args[4]) {
		if step, err = gatherInt(b, args, 4, "step"); err != nil {
			return sliceCall{}, err
		}
	}
	if step < 1 {
		return sliceCall{}, Errorf(4, "step %d must be positive", step)
	}
	sl.step = step
	return sl, nil
}

// bounds returns sl with its start and end (args 2 and 3) read for the
// values they hold now, clamped like torch's.
func (sl sliceCall) bounds(b Builder, args []int32) (sliceCall, error) {
	size := sl.in.Dims[sl.dim]
	var err error
	if sl.start, err = sliceBound(b, args, 2, 0, size); err != nil {
		return sl, err
	}
	sl.end, err = sliceBound(b, args, 3, size, size)
	return sl, err
}

// recordSlice sets out to in[..., start:end:step, ...] along dim and
// records the copy.
func recordSlice(b Builder, in Tensor, dim int, start, end, step int64, outArg int, outID int32) error {
	dims := append([]int64(nil), in.Dims...)
	dims[dim] = 0
	if end > start {
		dims[dim] = (end-start-1)/step + 1
	}
	if _, err := Output(b, outArg, outID, in.DType, dims); err != nil {
		return err
	}
	p := gatherView(in.Dims)
	p.base = start * p.stride[dim]
	p.dims[dim] = dims[dim]
	p.stride[dim] *= step
	return recordGather(b, p, in, outID)
}

func selectCopy(b Builder, args []int32) error {
	in, dim, i, err := selectParse(b, args)
	if err != nil {
		return err
	}
	p := gatherView(in.Dims)
	p.base = i * p.stride[dim]
	p.dims[dim] = 1
	return recordGather(b, p, in, args[3])
}

// selectView is select_copy's Op.View: selecting from a dim of size 1
// leaves every byte where it is (the last token of a one-token decode
// step).
func selectView(b Builder, args []int32) (int32, bool, error) {
	in, dim, _, err := selectParse(b, args)
	if err != nil {
		return 0, false, err
	}
	return in.ID, in.Dims[dim] == 1, nil
}

// selectParse checks select_copy's args, sets its output's shape and
// returns its input, dim and index (non-negative).
func selectParse(b Builder, args []int32) (in Tensor, dim int, index int64, err error) {
	if err = gatherArgs(args, 4, "[self, dim, index, out]"); err != nil {
		return
	}
	if in, err = gatherInput(b, args, 0); err != nil {
		return
	}
	if len(in.Dims) == 0 {
		err = Errorf(0, "select from a scalar")
		return
	}
	if dim, err = gatherDimArg(b, args, 1, len(in.Dims)); err != nil {
		return
	}
	if index, err = gatherInt(b, args, 2, "index"); err != nil {
		return
	}
	size := in.Dims[dim]
	i := index
	if i < 0 {
		i += size
	}
	if i < 0 || i >= size {
		err = Errorf(2, "index %d is out of range for dim %d of size %d", index, dim, size)
		return
	}
	dims := append(append([]int64(nil), in.Dims[:dim]...), in.Dims[dim+1:]...)
	_, err = Output(b, 3, args[3], in.DType, dims)
	return in, dim, i, err
}

func splitCopy(b Builder, args []int32, withSizes bool) error {
	layout := "[self, split_size, dim, outs]"
	if withSizes {
		layout = "[self, split_sizes, dim, outs]"
	}
	if err := gatherArgs(args, 4, layout); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	if len(in.Dims) == 0 {
		return Errorf(0, "split of a scalar")
	}
	dim, err := gatherDimArg(b, args, 2, len(in.Dims))
	if err != nil {
		return err
	}
	outs, err := b.ValueList(args[3])
	if err != nil {
		return argErr(3, err)
	}
	size := in.Dims[dim]
	var sizes []int64
	if withSizes {
		if sizes, err = b.IntList(args[1]); err != nil {
			return argErr(1, err)
		}
		sum := int64(0)
		for _, s := range sizes {
			if s < 0 {
				return Errorf(1, "split_sizes %v has a negative size", sizes)
			}
			sum += s
		}
		if sum != size {
			return Errorf(1, "split_sizes %v sum to %d, but dim %d has size %d", sizes, sum, dim, size)
		}
	} else {
		n, err := gatherInt(b, args, 1, "split_size")
		if err != nil {
			return err
		}
		if n < 0 || (n == 0 && size != 0) {
			return Errorf(1, "split_size %d for a dim of size %d", n, size)
		}
		sizes = []int64{size} // size 0: one empty piece
		if n > 0 && size > 0 {
			if pieces := (size-1)/n + 1; pieces != int64(len(outs)) {
				return Errorf(3, "%d outputs for %d pieces of %d", len(outs), pieces, n)
			}
			sizes = sizes[:0]
			for at := int64(0); at < size; at += n {
				sizes = append(sizes, min(n, size-at))
			}
		}
	}
	if len(outs) != len(sizes) {
		return Errorf(3, "%d outputs for %d pieces %v", len(outs), len(sizes), sizes)
	}
	at := int64(0)
	for i, s := range sizes {
		if b.Kind(outs[i]) != serialization.KindTensor {
			return Errorf(3, "outs[%d] is %v, want a tensor", i, b.Kind(outs[i]))
		}
		if err := recordSlice(b, in, dim, at, at+s, 1, 3, outs[i]); err != nil {
			return err
		}
		at += s
	}
	return nil
}

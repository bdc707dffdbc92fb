package ops

import (
	"slices"
)

// aten.cat.default args: [tensors (ValueList), dim, out]
//
// out is the tensors joined along dim; they must share dtype and every
// other size. 1-D tensors of size 0 are skipped as torch does (legacy
// empty tensors); scalars are rejected. Any dtype: one dispatch per
// non-empty input writes its slab of out (shaders/gather.wgsl in region
// mode, which leaves the other inputs' elements of a shared word alone).
func init() { Register("aten.cat.default", catOp) }

func catOp(b Builder, args []int32) error {
	if err := gatherArgs(args, 3, "[tensors, dim, out]"); err != nil {
		return err
	}
	ids, err := b.ValueList(args[0])
	if err != nil {
		return argErr(0, err)
	}
	if len(ids) == 0 {
		return Errorf(0, "cat of no tensors")
	}
	d, err := gatherInt(b, args, 1, "dim")
	if err != nil {
		return err
	}
	var ins []Tensor
	var ref *Tensor
	for i, id := range ids {
		t, err := b.Tensor(id)
		if err != nil {
			return Errorf(0, "tensors[%d]: %s", i, argMsg(err))
		}
		if len(t.Dims) == 0 {
			return Errorf(0, "tensors[%d] is a scalar; cat needs at least 1-D tensors", i)
		}
		if ref != nil && t.DType != ref.DType {
			return Errorf(0, "tensors[%d] is %v, tensors[0] %v", i, t.DType, ref.DType)
		}
		if ref == nil {
			ref = &t
		}
		if len(t.Dims) == 1 && t.Dims[0] == 0 {
			continue // legacy empty tensor
		}
		ins = append(ins, t)
	}
	if len(ins) == 0 {
		_, err := Output(b, 2, args[2], ref.DType, []int64{0})
		return err
	}
	rank := len(ins[0].Dims)
	dim, err := gatherDim(1, d, rank)
	if err != nil {
		return err
	}
	outDims := slices.Clone(ins[0].Dims)
	outDims[dim] = 0
	for i, t := range ins {
		if len(t.Dims) != rank {
			return Errorf(0, "cat of a rank-%d and a rank-%d tensor (%v, %v)", rank, len(t.Dims), ins[0].Dims, t.Dims)
		}
		for k := range t.Dims {
			if k != dim && t.Dims[k] != ins[0].Dims[k] {
				return Errorf(0, "sizes %v and %v differ outside dim %d (input %d)", ins[0].Dims, t.Dims, dim, i)
			}
		}
		outDims[dim] += t.Dims[dim]
	}
	if _, err := Output(b, 2, args[2], ins[0].DType, outDims); err != nil {
		return err
	}
	outer, inner := NumelOf(outDims[:dim]), NumelOf(outDims[dim+1:])
	total := outDims[dim]
	at := int64(0)
	for _, t := range ins {
		n := t.Dims[dim]
		p := gatherPlan{
			dims:   []int64{outer, total, inner},
			stride: []int64{n * inner, inner, 1},
			base:   -at * inner,
			region: 1, lo: at, hi: at + n,
		}
		if err := recordGather(b, p, t, args[2]); err != nil {
			return err
		}
		at += n
	}
	return nil
}

package ops

import (
	"strconv"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten.index_select.default args: [self, dim, index, out]
// aten.gather.default args:       [self, dim, index, sparse_grad, out]
// aten.index.Tensor args:         [self, indices (ValueList of tensors or Null), out]
// aten.embedding.default args:    [weight, indices, padding_idx, scale_grad_by_freq, sparse, out]
//
// Index tensors are int32 (the exporter downcasts int64). index_select
// picks entries of a 0-D or 1-D index along dim; gather reads
// self[..., index[i..], ...] along dim with out shaped like index;
// index.Tensor is advanced indexing with integer tensors on some dims
// (Null entries skip a dim): the index tensors broadcast together to B,
// and the result is self's leading unindexed dims, B, then the trailing
// ones when the indexed dims are consecutive, else B then every unindexed
// dim (torch's rule). embedding is weight[indices] for a 2-D weight;
// padding_idx, scale_grad_by_freq and sparse only matter for gradients.
//
// Index values are checked on the device, not the host: a negative index
// counts from the end (as in Python; torch itself accepts that only for
// index.Tensor), and one still outside the dim yields a zero element
// instead of a read out of bounds (torch raises an error).
// Any self/weight dtype (shaders/gather.wgsl).
func init() {
	Register("aten.index_select.default", indexSelect)
	Register("aten.gather.default", gatherOp)
	Register("aten.index.Tensor", indexTensor)
	Register("aten.embedding.default", embeddingOp)
}

// indexTensorArg reads an int32 index tensor argument.
func indexTensorArg(b Builder, id int32, arg int, what string) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, Errorf(arg, "%s: %s", what, argMsg(err))
	}
	switch t.DType {
	case serialization.Int32:
	case serialization.Bool, serialization.Uint8:
		return Tensor{}, Errorf(arg, "%s is a %v mask; only int32 index tensors are supported", what, t.DType)
	default:
		return Tensor{}, Errorf(arg, "%s is %v; index tensors must be int32", what, t.DType)
	}
	return t, nil
}

// selfDimIndex reads the leading [self, dim, index] of index_select and
// gather: self, dim normalized for it, and the int32 index tensor.
func selfDimIndex(b Builder, args []int32) (Tensor, int, Tensor, error) {
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return Tensor{}, 0, Tensor{}, err
	}
	dim, err := gatherDimArg(b, args, 1, len(in.Dims))
	if err != nil {
		return Tensor{}, 0, Tensor{}, err
	}
	ix, err := indexTensorArg(b, args[2], 2, "index")
	if err != nil {
		return Tensor{}, 0, Tensor{}, err
	}
	return in, dim, ix, nil
}

func indexSelect(b Builder, args []int32) error {
	if err := gatherArgs(args, 4, "[self, dim, index, out]"); err != nil {
		return err
	}
	in, dim, ix, err := selfDimIndex(b, args)
	if err != nil {
		return err
	}
	if len(ix.Dims) > 1 {
		return Errorf(2, "index has shape %v; index_select needs a 0-D or 1-D index", ix.Dims)
	}
	dims := append([]int64(nil), in.Dims...)
	src := in.Dims
	if len(dims) == 0 {
		if ix.Numel != 1 {
			return Errorf(2, "index_select from a scalar needs exactly one index, have %d", ix.Numel)
		}
		src = []int64{1}
	} else {
		dims[dim] = ix.Numel
	}
	if _, err := Output(b, 3, args[3], in.DType, dims); err != nil {
		return err
	}
	st := gatherContig(src)
	p := gatherPlan{dims: append([]int64(nil), src...), region: -1}
	p.dims[dim] = ix.Numel
	g := gatherIndex{id: ix.ID, stride: make([]int64, len(src)), size: src[dim], step: st[dim]}
	g.stride[dim] = 1
	p.stride = append([]int64(nil), st...)
	p.stride[dim] = 0
	p.idx = []gatherIndex{g}
	return recordGather(b, p, in, args[3])
}

func gatherOp(b Builder, args []int32) error {
	if err := gatherArgs(args, 5, "[self, dim, index, sparse_grad, out]"); err != nil {
		return err
	}
	in, dim, ix, err := selfDimIndex(b, args)
	if err != nil {
		return err
	}
	if len(ix.Dims) != len(in.Dims) {
		return Errorf(2, "index %v and self %v must have the same rank", ix.Dims, in.Dims)
	}
	src := in.Dims
	dims := ix.Dims
	if len(src) == 0 {
		src, dims = []int64{1}, []int64{1}
	}
	for k := range src {
		if k != dim && dims[k] > src[k] {
			return Errorf(2, "index %v is larger than self %v outside dim %d", ix.Dims, in.Dims, dim)
		}
	}
	if _, err := Output(b, 4, args[4], in.DType, ix.Dims); err != nil {
		return err
	}
	st := gatherContig(src)
	p := gatherPlan{dims: append([]int64(nil), dims...), stride: append([]int64(nil), st...), region: -1}
	p.stride[dim] = 0
	p.idx = []gatherIndex{{id: ix.ID, stride: gatherContig(dims), size: src[dim], step: st[dim]}}
	return recordGather(b, p, in, args[4])
}

func indexTensor(b Builder, args []int32) error {
	if err := gatherArgs(args, 3, "[self, indices, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	list, err := b.ValueList(args[1])
	if err != nil {
		return argErr(1, err)
	}
	if len(list) > len(in.Dims) {
		return Errorf(1, "%d indices for a rank-%d self", len(list), len(in.Dims))
	}
	var pos []int
	var ixs []Tensor
	var bc []int64
	for k, id := range list {
		if b.IsNull(id) {
			continue
		}
		t, err := indexTensorArg(b, id, 1, "indices["+strconv.Itoa(k)+"]")
		if err != nil {
			return err
		}
		if pos == nil {
			bc = t.Dims
		} else if s, ok := BroadcastShape(bc, t.Dims); ok {
			bc = s
		} else {
			return Errorf(1, "index shapes %v and %v do not broadcast", bc, t.Dims)
		}
		pos = append(pos, k)
		ixs = append(ixs, t)
	}
	if len(pos) == 0 {
		return Errorf(1, "indices holds no index tensor")
	}
	if len(ixs) > gatherMaxIdx {
		return Errorf(1, "%d index tensors; at most %d are supported", len(ixs), gatherMaxIdx)
	}
	consecutive := pos[len(pos)-1]-pos[0] == len(pos)-1
	st := gatherContig(in.Dims)
	indexed := make([]bool, len(in.Dims))
	for _, k := range pos {
		indexed[k] = true
	}
	// The out dims, each either a self dim (k >= 0) or a B dim (k < 0).
	var dims, stride []int64
	var bAt int // first B dim in out
	addSelf := func(k int) { dims, stride = append(dims, in.Dims[k]), append(stride, st[k]) }
	addB := func() {
		bAt = len(dims)
		for _, s := range bc {
			dims, stride = append(dims, s), append(stride, 0)
		}
	}
	if consecutive {
		for k := 0; k < pos[0]; k++ {
			addSelf(k)
		}
		addB()
		for k := pos[len(pos)-1] + 1; k < len(in.Dims); k++ {
			addSelf(k)
		}
	} else {
		addB()
		for k := range in.Dims {
			if !indexed[k] {
				addSelf(k)
			}
		}
	}
	if _, err := Output(b, 2, args[2], in.DType, dims); err != nil {
		return err
	}
	p := gatherPlan{dims: dims, stride: stride, region: -1}
	for j, t := range ixs {
		// t broadcast to bc, right-aligned, as strides over out's B dims.
		g := gatherIndex{id: t.ID, stride: make([]int64, len(dims)), size: in.Dims[pos[j]], step: st[pos[j]]}
		ts := gatherContig(t.Dims)
		for i := 1; i <= len(t.Dims); i++ {
			if t.Dims[len(t.Dims)-i] != 1 {
				g.stride[bAt+len(bc)-i] = ts[len(t.Dims)-i]
			}
		}
		p.idx = append(p.idx, g)
	}
	return recordGather(b, p, in, args[2])
}

func embeddingOp(b Builder, args []int32) error {
	if err := gatherArgs(args, 6, "[weight, indices, padding_idx, scale_grad_by_freq, sparse, out]"); err != nil {
		return err
	}
	w, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	if len(w.Dims) != 2 {
		return Errorf(0, "weight has shape %v, want 2-D", w.Dims)
	}
	ix, err := indexTensorArg(b, args[1], 1, "indices")
	if err != nil {
		return err
	}
	dims := append(append([]int64(nil), ix.Dims...), w.Dims[1])
	if _, err := Output(b, 5, args[5], w.DType, dims); err != nil {
		return err
	}
	if ok, err := embeddingChunked(b, w, ix, args[5]); ok || err != nil {
		return err // a table held in chunks (chunk_embedding.go)
	}
	p := gatherPlan{dims: dims, stride: make([]int64, len(dims)), region: -1}
	p.stride[len(dims)-1] = 1
	g := gatherIndex{id: ix.ID, stride: append(gatherContig(ix.Dims), 0), size: w.Dims[0], step: w.Dims[1]}
	p.idx = []gatherIndex{g}
	return recordGather(b, p, w, args[5])
}

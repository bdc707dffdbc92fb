package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// PackSpec describes a weight layout transform: Kernel reads the weight
// (binding 0), writes the packed tensor (binding 1) and takes Params as its
// uniform block (binding 2), dispatched once over Groups. The packed tensor
// has DType and Dims. Name identifies the transform in the packed-weight
// cache; the cache entry's seed is the content ID of Kernel, Params, DType
// and Dims, so a changed kernel never receives a stale packing.
type PackSpec struct {
	Name   string
	Kernel *shaders.Kernel
	Params []byte
	Groups [3]uint32
	DType  serialization.DataType
	Dims   []int64
}

// Packer is implemented by builders that can pack weights (the GPU graph).
// PackWeight returns a read-only tensor holding weight id (a constant, or a
// prepack output of one) transformed by spec. It is created once per graph
// and, with a packed-weight cache, loaded from the cache instead of being
// packed again.
type Packer interface {
	PackWeight(id int32, spec PackSpec) (Tensor, error)
}

// TransposeSpec is the PackSpec that turns a 4-byte [..., R, C] weight into
// [..., C, R] (e.g. a linear weight [N, K] into [K, N], the layout the mm
// kernel reads).
func TransposeSpec(w Tensor, maxPerDim uint32) (PackSpec, error) {
	if len(w.Dims) < 2 || w.DType.Size() != 4 {
		return PackSpec{}, Errorf(-1, "transpose packing needs a 4-byte tensor of rank >= 2, have %v %v", w.DType, w.Dims)
	}
	r, c := w.Dims[len(w.Dims)-2], w.Dims[len(w.Dims)-1]
	batches := w.Numel / max(r*c, 1)
	if r >= 1<<31 || c >= 1<<31 || batches >= 1<<31 {
		return PackSpec{}, Errorf(-1, "weight %v is too large to pack", w.Dims)
	}
	k, err := shaders.Render("pack.wgsl", struct{}{}, "main", shaders.Layout(1, 1, true), 256)
	if err != nil {
		return PackSpec{}, err
	}
	gx, gy := (c+15)/16, (r+15)/16
	if gx > int64(maxPerDim) || gy > int64(maxPerDim) || batches > int64(maxPerDim) {
		return PackSpec{}, Errorf(-1, "weight %v exceeds the dispatch grid for packing", w.Dims)
	}
	var p Params
	p.U32(uint32(r)).U32(uint32(c)).U32(uint32(batches))
	dims := append([]int64(nil), w.Dims...)
	dims[len(dims)-2], dims[len(dims)-1] = c, r
	return PackSpec{Name: "transpose", Kernel: k, Params: p.Bytes(), Groups: [3]uint32{uint32(gx), uint32(gy), uint32(batches)},
		DType: w.DType, Dims: dims}, nil
}

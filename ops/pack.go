package ops

import (
	"errors"
	"fmt"

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

// ErrNotPacked is what PackWeight returns (wrapped) when it cannot pack a
// weight now: weights are packed while the graph loads, and this one was
// first asked for when re-recording (a load whose recording stopped early,
// on SymInt placeholders, before the op that packs it). An op that also
// has the weight as exported should read that instead.
var ErrNotPacked = errors.New("weight not packed at load")

// IdentitySpec is the PackSpec for weight w as exported: its bytes go
// straight from the file to a buffer of its own, with no kernel and no
// cache entry.
func IdentitySpec(w Tensor) PackSpec {
	return PackSpec{Name: "identity", DType: w.DType, Dims: append([]int64(nil), w.MaxDims...)}
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

// ConvBlockSpec is the PackSpec that regroups a 4-byte convolution weight
// [OC, ICg, KH, KW] (or [OC, ICg, KW]) into blocks of t output channels,
// [OC/t, R, t] with R = ICg·KH·KW: packed[b][r][j] = w[b·t+j][r]. The
// packed forward-convolution kernel then reads the t channels of one
// reduction step as t/4 consecutive vec4s. OC must be a multiple of t.
func ConvBlockSpec(w Tensor, t int64, maxPerDim uint32) (PackSpec, error) {
	if len(w.Dims) < 3 || w.DType.Size() != 4 || t < 1 {
		return PackSpec{}, Errorf(-1, "conv block packing needs a 4-byte weight of rank >= 3, have %v %v", w.DType, w.Dims)
	}
	oc := w.Dims[0]
	if oc%t != 0 || oc == 0 {
		return PackSpec{}, Errorf(-1, "conv block packing: %d output channels are not a multiple of %d", oc, t)
	}
	r := w.Numel / oc
	// Viewed as [OC/t, t, R], the block layout is its per-batch transpose.
	view := w
	view.Dims = []int64{oc / t, t, r}
	spec, err := TransposeSpec(view, maxPerDim)
	if err != nil {
		return PackSpec{}, err
	}
	// The name carries t: two block sizes of one weight are two entries.
	spec.Name = fmt.Sprintf("convblock%d", t)
	return spec, nil
}

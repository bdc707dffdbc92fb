package ops

import (
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.view_copy.default args:                 [self, size (IntList or ValueList of Int/SymInt), out]
// aten.clone.default args:                     [self, memory_format, out]
// aten.squeeze_copy.dims args:                 [self, dims (IntList), out]
// aten.unsqueeze_copy.default args:            [self, dim, out]
// aten.alias_copy.default args:                [self, out]
// dim_order_ops._clone_dim_order.default args: [self, non_blocking, dim_order, out]
//
// Tensors are flat and contiguous, so every one of these is the same
// whole-tensor copy (shaders/copy.wgsl, vec4<u32> units; any dtype), or,
// where the graph can prove no one writes either value afterwards, no
// dispatch at all: the output shares the input's buffer (Aliaser). They
// differ in the output shape, computed from self's live shape as torch
// does. view_copy: size, where one -1 is inferred from self's element
// count, which must match. squeeze_copy.dims: the listed dims of size 1
// are removed (negative dims count from the end; listed dims of another
// size stay). unsqueeze_copy: a size-1 dim inserted at dim (negative: dim
// + rank + 1). The others keep self's shape (memory_format and dim_order
// only describe the layout, which is always contiguous here).
func init() {
	Register("aten.view_copy.default", viewCopy)
	Register("aten.clone.default", sameShapeCopy(3))
	Register("aten.squeeze_copy.dims", squeezeCopy)
	Register("aten.unsqueeze_copy.default", unsqueezeCopy)
	Register("aten.alias_copy.default", sameShapeCopy(2))
	Register("dim_order_ops._clone_dim_order.default", sameShapeCopy(4))
}

const copyWG = 256

// sameShapeCopy copies args[0] into the last of n args, keeping its shape.
func sameShapeCopy(n int) Func {
	return func(b Builder, args []int32) error {
		if len(args) != n {
			return Errorf(-1, "want %d args, have %d", n, len(args))
		}
		in, err := b.Tensor(args[0])
		if err != nil {
			return argErr(0, err)
		}
		return copyTensor(b, in, n-1, args[n-1], in.Dims)
	}
}

func viewCopy(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, size, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	size, err := b.IntList(args[1])
	if err != nil {
		return Errorf(1, "size: %s", argMsg(err))
	}
	dims, err := viewShape(in.Numel, size)
	if err != nil {
		return Errorf(1, "view of %v as %v: %s", in.Dims, size, argMsg(err))
	}
	return copyTensor(b, in, 2, args[2], dims)
}

// viewShape resolves a view size against numel elements: at most one -1,
// inferred, and the product must equal numel.
func viewShape(numel int64, size []int64) ([]int64, error) {
	dims := append([]int64(nil), size...)
	infer := -1
	known := int64(1)
	for i, d := range size {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d == -1:
			return nil, Errorf(-1, "more than one -1")
		case d < 0:
			return nil, Errorf(-1, "negative size %d", d)
		default:
			if n := NumelOf([]int64{known, d}); n >= 0 {
				known = n
			} else {
				return nil, Errorf(-1, "size overflows")
			}
		}
	}
	if infer >= 0 {
		if known == 0 || numel%known != 0 {
			return nil, Errorf(-1, "cannot infer the -1 for %d elements", numel)
		}
		dims[infer] = numel / known
		known = numel
	}
	if known != numel {
		return nil, Errorf(-1, "%d elements, not %d", known, numel)
	}
	return dims, nil
}

func squeezeCopy(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, dims, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	sq, err := b.IntList(args[1])
	if err != nil {
		return argErr(1, err)
	}
	drop := make([]bool, len(in.Dims))
	for _, d := range sq {
		k, err := gatherDim(1, d, len(in.Dims))
		if err != nil {
			return err
		}
		if len(in.Dims) > 0 && in.Dims[k] == 1 {
			drop[k] = true
		}
	}
	dims := []int64{}
	for k, d := range in.Dims {
		if !drop[k] {
			dims = append(dims, d)
		}
	}
	return copyTensor(b, in, 2, args[2], dims)
}

func unsqueezeCopy(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, dim, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	d, err := b.Int(args[1])
	if err != nil {
		return Errorf(1, "dim: %s", argMsg(err))
	}
	r := int64(len(in.Dims))
	k := d
	if k < 0 {
		k += r + 1
	}
	if k < 0 || k > r {
		return Errorf(1, "dim %d is out of range for unsqueezing a rank-%d tensor", d, r)
	}
	dims := append(append(append([]int64{}, in.Dims[:k]...), 1), in.Dims[k:]...)
	return copyTensor(b, in, 2, args[2], dims)
}

// Aliaser is implemented by builders that can give a copy op's output its
// input's buffer instead of a copy of its bytes. Tensors are flat and
// contiguous, so every op of this file leaves the bytes as they are; only
// the shape changes.
type Aliaser interface {
	// Alias makes out (whose live shape is set) share in's buffer, and
	// reports whether it did; the op then records no dispatch. The builder
	// refuses when the two values could ever differ: when either is, or
	// may become, written after out is defined (a KV cache updated in
	// place, a persistent buffer), or when out's buffer is needed on its
	// own (a constant).
	Alias(out, in int32) bool
}

// copyTensor sets out (args[outArg]) to dims and makes it in's bytes: the
// same buffer when the builder can alias them (Aliaser), else a recorded
// whole-tensor copy.
func copyTensor(b Builder, in Tensor, outArg int, outID int32, dims []int64) error {
	if _, err := Output(b, outArg, outID, in.DType, dims); err != nil {
		return err
	}
	if a, ok := b.(Aliaser); ok && !configOf(b).NoViewAliasing && a.Alias(outID, in.ID) {
		return nil
	}
	if in.NBytes == 0 {
		return nil
	}
	vec4s := uint32((in.NBytes + 15) / 16)
	k, err := shaders.Render("copy.wgsl", struct{ WG int }{copyWG}, "main", shaders.Layout(1, 1, true), copyWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(vec4s), copyWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var p Params
	p.U32(vec4s)
	return b.Dispatch(k, []int32{in.ID}, []int32{outID}, p.Bytes(), grid)
}

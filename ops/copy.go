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
// where package lower's views pass proves no one writes either value
// afterwards, no dispatch at all: the output shares the input's buffer
// (Op.View). They
// differ in the output shape, computed from self's live shape as torch
// does. view_copy: size, where one -1 is inferred from self's element
// count, which must match. squeeze_copy.dims: the listed dims of size 1
// are removed (negative dims count from the end; listed dims of another
// size stay). unsqueeze_copy: a size-1 dim inserted at dim (negative: dim
// + rank + 1). The others keep self's shape (memory_format and dim_order
// only describe the layout, which is always contiguous here).
func init() {
	registerView("aten.view_copy.default", viewArgs)
	registerView("aten.clone.default", sameShapeArgs(3))
	registerView("aten.squeeze_copy.dims", squeezeArgs)
	registerView("aten.unsqueeze_copy.default", unsqueezeArgs)
	registerView("aten.alias_copy.default", sameShapeArgs(2))
	registerView("dim_order_ops._clone_dim_order.default", sameShapeArgs(4))
}

// viewParse checks a view op's args and returns its input and its output's
// argument and shape.
type viewParse func(b Builder, args []int32) (in Tensor, outArg int, dims []int64, err error)

// registerView registers a view op whose arguments parse reads: Run
// records the copy, View sets the output's shape only.
func registerView(name string, parse viewParse) {
	RegisterOp(Op{Name: name,
		Run: func(b Builder, args []int32) error {
			in, outArg, dims, err := parse(b, args)
			if err != nil {
				return err
			}
			return copyTensor(b, in, outArg, args[outArg], dims)
		},
		View: func(b Builder, args []int32) (int32, bool, error) {
			in, outArg, dims, err := parse(b, args)
			if err != nil {
				return 0, false, err
			}
			_, err = Output(b, outArg, args[outArg], in.DType, dims)
			return in.ID, err == nil, err
		}})
}

const copyWG = 256

// sameShapeArgs reads a view op of n args that keeps its input's shape
// (clone, alias_copy, _clone_dim_order).
func sameShapeArgs(n int) viewParse {
	return func(b Builder, args []int32) (Tensor, int, []int64, error) {
		if len(args) != n {
			return Tensor{}, 0, nil, Errorf(-1, "want %d args, have %d", n, len(args))
		}
		in, err := b.Tensor(args[0])
		if err != nil {
			return Tensor{}, 0, nil, argErr(0, err)
		}
		return in, n - 1, in.Dims, nil
	}
}

func viewArgs(b Builder, args []int32) (Tensor, int, []int64, error) {
	if len(args) != 3 {
		return Tensor{}, 0, nil, Errorf(-1, "want 3 args [self, size, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return Tensor{}, 0, nil, argErr(0, err)
	}
	size, err := b.IntList(args[1])
	if err != nil {
		return Tensor{}, 0, nil, Errorf(1, "size: %s", argMsg(err))
	}
	dims, err := viewShape(in.Numel, size)
	if err != nil {
		return Tensor{}, 0, nil, Errorf(1, "view of %v as %v: %s", in.Dims, size, argMsg(err))
	}
	return in, 2, dims, nil
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

func squeezeArgs(b Builder, args []int32) (Tensor, int, []int64, error) {
	if len(args) != 3 {
		return Tensor{}, 0, nil, Errorf(-1, "want 3 args [self, dims, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return Tensor{}, 0, nil, argErr(0, err)
	}
	sq, err := b.IntList(args[1])
	if err != nil {
		return Tensor{}, 0, nil, argErr(1, err)
	}
	drop := make([]bool, len(in.Dims))
	for _, d := range sq {
		k, err := gatherDim(1, d, len(in.Dims))
		if err != nil {
			return Tensor{}, 0, nil, err
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
	return in, 2, dims, nil
}

func unsqueezeArgs(b Builder, args []int32) (Tensor, int, []int64, error) {
	if len(args) != 3 {
		return Tensor{}, 0, nil, Errorf(-1, "want 3 args [self, dim, out], have %d", len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return Tensor{}, 0, nil, argErr(0, err)
	}
	d, err := b.Int(args[1])
	if err != nil {
		return Tensor{}, 0, nil, Errorf(1, "dim: %s", argMsg(err))
	}
	r := int64(len(in.Dims))
	k := d
	if k < 0 {
		k += r + 1
	}
	if k < 0 || k > r {
		return Tensor{}, 0, nil, Errorf(1, "dim %d is out of range for unsqueezing a rank-%d tensor", d, r)
	}
	dims := append(append(append([]int64{}, in.Dims[:k]...), 1), in.Dims[k:]...)
	return in, 2, dims, nil
}

// copyTensor sets out (args[outArg]) to dims and records a whole-tensor
// copy of in's bytes into it.
func copyTensor(b Builder, in Tensor, outArg int, outID int32, dims []int64) error {
	if _, err := Output(b, outArg, outID, in.DType, dims); err != nil {
		return err
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

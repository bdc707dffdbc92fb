package ops

import (
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.view_copy.default args:               [self, size, out]
// aten.clone.default args:                   [self, memory_format, out]
// aten.squeeze_copy.dims args:               [self, dims, out]
// aten.unsqueeze_copy.default args:          [self, dim, out]
// aten.alias_copy.default args:              [self, out]
// dim_order_ops._clone_dim_order.default args: [self, non_blocking, dim_order, out]
//
// Tensors are flat and contiguous, so every one of these is the same
// whole-tensor copy; the output shape was fixed by the exporter (size may
// hold -1 or SymInts, which only matter for dynamic shapes).
func init() {
	Register("aten.view_copy.default", viewCopy)
	Register("aten.clone.default", cloneOp)
	Register("aten.squeeze_copy.dims", lastArgCopy(3))
	Register("aten.unsqueeze_copy.default", lastArgCopy(3))
	Register("aten.alias_copy.default", lastArgCopy(2))
	Register("dim_order_ops._clone_dim_order.default", lastArgCopy(4))
}

// lastArgCopy copies args[0] into the last arg of an op with n args.
func lastArgCopy(n int) Func {
	return func(b Builder, args []int32) error {
		if len(args) != n {
			return Errorf(-1, "want %d args, have %d", n, len(args))
		}
		return copyTensor(b, args[0], args[n-1])
	}
}

const copyWG = 256

func viewCopy(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, size, out], have %d", len(args))
	}
	if k := b.Kind(args[1]); k != 0 && !b.IsNull(args[1]) {
		if _, err := b.IntList(args[1]); err != nil {
			return Errorf(1, "size: %v", err)
		}
	}
	return copyTensor(b, args[0], args[2])
}

func cloneOp(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, memory_format, out], have %d", len(args))
	}
	return copyTensor(b, args[0], args[2])
}

// copyTensor records a whole-tensor copy of in into out.
func copyTensor(b Builder, inID, outID int32) error {
	in, err := b.Tensor(inID)
	if err != nil {
		return err
	}
	out, err := b.Tensor(outID)
	if err != nil {
		return err
	}
	if in.DType != out.DType {
		return Errorf(-1, "input is %v, output %v", in.DType, out.DType)
	}
	if in.Numel != out.Numel {
		return Errorf(-1, "input has %d elements (%v), output %d (%v)", in.Numel, in.Dims, out.Numel, out.Dims)
	}
	vec4s := uint32((in.NBytes + 15) / 16)
	if in.NBytes == 0 {
		return nil
	}
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
	return b.Dispatch(k, []int32{inID}, []int32{outID}, p.Bytes(), grid)
}

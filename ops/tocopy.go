package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten._to_copy.default args:
//
//	[self, dtype, layout, device, pin_memory, non_blocking, memory_format, out]
//
// dim_order_ops._to_dim_order_copy.default args:
//
//	[self, dtype, layout, device, pin_memory, non_blocking, dim_order, out]
//
// out = self converted to out's dtype (float32, int32, bool, uint8, int8):
// the exporter turns dtype into Null, so out's dtype is the target. Float
// to integer truncates toward zero (out-of-range values are undefined, as
// in torch); to bool is != 0 (NaN is true); integer narrowing keeps the
// low byte. Tensors are flat and contiguous, so memory_format and
// dim_order change nothing; dim_order, when given, must be a permutation
// of self's dims.
func init() {
	Register("aten._to_copy.default", func(b Builder, args []int32) error { return toCopy(b, args, "memory_format") })
	Register("dim_order_ops._to_dim_order_copy.default", func(b Builder, args []int32) error { return toCopy(b, args, "dim_order") })
}

func toCopy(b Builder, args []int32, last string) error {
	if len(args) != 8 {
		return Errorf(-1, "want 8 args [self, dtype, layout, device, pin_memory, non_blocking, %s, out], have %d", last, len(args))
	}
	in, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	out, err := b.Tensor(args[7])
	if err != nil {
		return argErr(7, err)
	}
	x, ok := elemName(in.DType)
	if !ok {
		return Errorf(0, "unsupported dtype %v", in.DType)
	}
	y, ok := elemName(out.DType)
	if !ok {
		return Errorf(7, "unsupported dtype %v", out.DType)
	}
	if !b.IsNull(args[5]) {
		if _, err := b.Bool(args[5]); err != nil {
			return argErr(5, err)
		}
	}
	if last == "dim_order" && !b.IsNull(args[6]) {
		order, err := b.IntList(args[6])
		if err != nil {
			return argErr(6, err)
		}
		if !isPermutation(order, len(in.Dims)) {
			return Errorf(6, "dim_order %v is not a permutation of %d dims", order, len(in.Dims))
		}
	}
	if _, err := Output(b, 7, args[7], out.DType, in.Dims); err != nil {
		return err
	}
	if in.DType == out.DType {
		return copyTensor(b, in, 7, args[7], in.Dims)
	}
	v := unaryVariant{Op: "copy", X: x, Y: y, S: "i32"}
	if in.DType == serialization.Float32 {
		v.S = "f32"
	}
	return unaryDispatch(b, v, unaryParams{}, args[0], args[7], in.Numel, 7)
}

// isPermutation reports whether order holds each of 0..n-1 once.
func isPermutation(order []int64, n int) bool {
	if len(order) != n {
		return false
	}
	seen := make([]bool, n)
	for _, d := range order {
		if d < 0 || d >= int64(n) || seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}

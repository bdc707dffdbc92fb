package ops_test

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestUnaryFillConvertRejects: every bad argument of the unary, fill and
// conversion ops fails the graph load with an ops.ErrArg inside a
// *graph.OpError.
func TestUnaryFillConvertRejects(t *testing.T) {
	f, i, bo := serialization.Float32, serialization.Int32, serialization.Bool
	ten := argTensor
	op := inputOutputOp
	nulls := func(b *serialization.Builder, n int) []int32 {
		ids := make([]int32, n)
		for k := range ids {
			ids[k] = b.Null()
		}
		return ids
	}
	// fill records a fill op whose args are given; a dummy input keeps
	// the graph well-formed.
	fill := func(b *serialization.Builder, name string, args ...int32) {
		x := ten(b, f, 1)
		b.Op(name, args...)
		b.Inputs(x)
		b.Outputs(args[len(args)-1])
	}
	cases := map[string]func(b *serialization.Builder){
		"exp/out int32": func(b *serialization.Builder) { op(b, "aten.exp.default", ten(b, f, 4), ten(b, i, 4)) },
		"gelu/int32": func(b *serialization.Builder) {
			op(b, "aten.gelu.default", ten(b, i, 4), b.String("none"), ten(b, f, 4))
		},
		"gelu/approximate": func(b *serialization.Builder) {
			op(b, "aten.gelu.default", ten(b, f, 4), b.String("erf"), ten(b, f, 4))
		},
		"gelu/approximate Int": func(b *serialization.Builder) {
			op(b, "aten.gelu.default", ten(b, f, 4), b.Int(0), ten(b, f, 4))
		},
		"abs/out dtype": func(b *serialization.Builder) { op(b, "aten.abs.default", ten(b, i, 4), ten(b, f, 4)) },
		"abs/bool":      func(b *serialization.Builder) { op(b, "aten.abs.default", ten(b, bo, 4), ten(b, bo, 4)) },
		"neg/out too small": func(b *serialization.Builder) {
			op(b, "aten.neg.default", ten(b, f, 2, 3), ten(b, f, 5))
		},
		"hardtanh/arg count": func(b *serialization.Builder) {
			op(b, "aten.hardtanh.default", ten(b, f, 4), b.Double(-1), ten(b, f, 4))
		},
		"hardtanh/Null bound": func(b *serialization.Builder) {
			op(b, "aten.hardtanh.default", ten(b, f, 4), b.Null(), b.Double(1), ten(b, f, 4))
		},
		"clamp/float into int32": func(b *serialization.Builder) {
			op(b, "aten.clamp.default", ten(b, f, 4), b.Null(), b.Int(1), ten(b, i, 4))
		},
		"clamp/fractional int32 bound": func(b *serialization.Builder) {
			op(b, "aten.clamp.default", ten(b, i, 4), b.Double(0.5), b.Null(), ten(b, i, 4))
		},
		"clamp/String bound": func(b *serialization.Builder) {
			op(b, "aten.clamp.default", ten(b, f, 4), b.String("0"), b.Null(), ten(b, f, 4))
		},
		"leaky_relu/slope Null": func(b *serialization.Builder) {
			op(b, "aten.leaky_relu.default", ten(b, f, 4), b.Null(), ten(b, f, 4))
		},
		"pow/negative int exponent": func(b *serialization.Builder) {
			op(b, "aten.pow.Tensor_Scalar", ten(b, i, 4), b.Int(-1), ten(b, i, 4))
		},
		"pow/fractional int exponent": func(b *serialization.Builder) {
			op(b, "aten.pow.Tensor_Scalar", ten(b, i, 4), b.Double(1.5), ten(b, i, 4))
		},
		"pow/float into int32": func(b *serialization.Builder) {
			op(b, "aten.pow.Tensor_Scalar", ten(b, f, 4), b.Int(2), ten(b, i, 4))
		},
		"bitwise_not/float32": func(b *serialization.Builder) {
			op(b, "aten.bitwise_not.default", ten(b, f, 4), ten(b, f, 4))
		},
		"bitwise_not/out dtype": func(b *serialization.Builder) {
			op(b, "aten.bitwise_not.default", ten(b, i, 4), ten(b, bo, 4))
		},
		"_to_copy/arg count": func(b *serialization.Builder) {
			op(b, "aten._to_copy.default", ten(b, f, 4), append(nulls(b, 5), ten(b, i, 4))...)
		},
		"_to_copy/non_blocking Double": func(b *serialization.Builder) {
			op(b, "aten._to_copy.default", ten(b, f, 4), append(append(nulls(b, 4), b.Double(2.5), b.Null()), ten(b, i, 4))...)
		},
		"_to_dim_order_copy/bad order": func(b *serialization.Builder) {
			op(b, "dim_order_ops._to_dim_order_copy.default", ten(b, f, 2, 2),
				append(append(nulls(b, 4), b.Bool(false), b.IntList(0, 0)), ten(b, i, 2, 2))...)
		},
		"full/negative size": func(b *serialization.Builder) {
			fill(b, "aten.full.default", append([]int32{b.IntList(2, -1), b.Double(1)}, append(nulls(b, 4), ten(b, f, 2))...)...)
		},
		"full/size Double list": func(b *serialization.Builder) {
			fill(b, "aten.full.default", append([]int32{b.DoubleList(2), b.Double(1)}, append(nulls(b, 4), ten(b, f, 2))...)...)
		},
		"full/too big for out": func(b *serialization.Builder) {
			fill(b, "aten.full.default", append([]int32{b.IntList(3, 3), b.Double(1)}, append(nulls(b, 4), ten(b, f, 4))...)...)
		},
		"full/int32 overflow": func(b *serialization.Builder) {
			fill(b, "aten.full.default", append([]int32{b.IntList(2), b.Double(3e9)}, append(nulls(b, 4), ten(b, i, 2))...)...)
		},
		"full/uint8 negative": func(b *serialization.Builder) {
			fill(b, "aten.full.default", append([]int32{b.IntList(2), b.Int(-1)}, append(nulls(b, 4), ten(b, serialization.Uint8, 2))...)...)
		},
		"full/value String": func(b *serialization.Builder) {
			fill(b, "aten.full.default", append([]int32{b.IntList(2), b.String("1")}, append(nulls(b, 4), ten(b, f, 2))...)...)
		},
		"zeros_like/self not a tensor": func(b *serialization.Builder) {
			fill(b, "aten.zeros_like.default", append([]int32{b.Int(3)}, append(nulls(b, 5), ten(b, f, 2))...)...)
		},
		"arange/zero step": func(b *serialization.Builder) {
			fill(b, "aten.arange.start_step", append([]int32{b.Int(0), b.Int(4), b.Int(0)}, append(nulls(b, 4), ten(b, f, 4))...)...)
		},
		"arange/step sign": func(b *serialization.Builder) {
			fill(b, "aten.arange.start_step", append([]int32{b.Int(0), b.Int(4), b.Int(-1)}, append(nulls(b, 4), ten(b, f, 4))...)...)
		},
		"arange/bool out": func(b *serialization.Builder) {
			fill(b, "aten.arange.start_step", append([]int32{b.Int(0), b.Int(4), b.Int(1)}, append(nulls(b, 4), ten(b, bo, 4))...)...)
		},
		"arange/too long for out": func(b *serialization.Builder) {
			fill(b, "aten.arange.start_step", append([]int32{b.Int(0), b.Int(5), b.Int(1)}, append(nulls(b, 4), ten(b, f, 4))...)...)
		},
	}
	wantArgError(t, openTestDevice(t), cases)
}

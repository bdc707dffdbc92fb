package ops_test

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestConvPoolSpatialRejects: bad arguments of the convolution, pooling and
// spatial ops are ops.ErrArg errors at build, never panics.
func TestConvPoolSpatialRejects(t *testing.T) {
	f, i32 := serialization.Float32, serialization.Int32
	ten := argTensor
	op := inputOutputOp
	conv := func(b *serialization.Builder, x, w int32, stride, pad, dil []int64, transposed bool, opd []int64, groups int64, out int32) {
		op(b, "aten.convolution.default", x, w, b.Null(), b.IntList(stride...), b.IntList(pad...), b.IntList(dil...),
			b.Bool(transposed), b.IntList(opd...), b.Int(groups), out)
	}
	l := func(v ...int64) []int64 { return v }
	wantArgError(t, openTestDevice(t), map[string]func(b *serialization.Builder){
		"conv/int32 input": func(b *serialization.Builder) {
			conv(b, ten(b, i32, 1, 3, 5, 5), ten(b, f, 2, 3, 3, 3), l(1), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 3, 3))
		},
		"conv/5-D input": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 1, 3, 5, 5), ten(b, f, 2, 1, 3, 3, 3), l(1), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 1, 3, 3))
		},
		"conv/channel mismatch": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 4, 5, 5), ten(b, f, 2, 3, 3, 3), l(1), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 3, 3))
		},
		"conv/groups": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 4, 5, 5), ten(b, f, 3, 2, 3, 3), l(1), l(0), l(1), false, l(0), 2, ten(b, f, 1, 3, 3, 3))
		},
		"conv/zero stride": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 3, 5, 5), ten(b, f, 2, 3, 3, 3), l(0), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 3, 3))
		},
		"conv/three strides": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 3, 5, 5), ten(b, f, 2, 3, 3, 3), l(1, 1, 1), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 3, 3))
		},
		"conv/kernel too big": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 3, 2, 5), ten(b, f, 2, 3, 3, 3), l(1), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 3, 3))
		},
		"conv/output_padding": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 3, 5, 5), ten(b, f, 3, 2, 3, 3), l(2), l(0), l(1), true, l(2), 1, ten(b, f, 1, 2, 13, 13))
		},
		"conv/bias size": func(b *serialization.Builder) {
			x := ten(b, f, 1, 3, 5, 5)
			op(b, "aten.convolution.default", x, ten(b, f, 2, 3, 3, 3), ten(b, f, 3), b.IntList(1), b.IntList(0), b.IntList(1),
				b.Bool(false), b.IntList(0), b.Int(1), ten(b, f, 1, 2, 3, 3))
		},
		"conv/out too small": func(b *serialization.Builder) {
			conv(b, ten(b, f, 1, 3, 5, 5), ten(b, f, 2, 3, 3, 3), l(1), l(0), l(1), false, l(0), 1, ten(b, f, 1, 2, 2, 2))
		},
		"conv_with_clamp/string bound": func(b *serialization.Builder) {
			x := ten(b, f, 1, 3, 5, 5)
			op(b, "et_vk.conv_with_clamp.default", x, ten(b, f, 2, 3, 3, 3), b.Null(), b.IntList(1), b.IntList(0), b.IntList(1),
				b.Bool(false), b.IntList(0), b.Int(1), b.String("0"), b.Null(), ten(b, f, 1, 2, 3, 3))
		},
		"max_pool2d/padding over half the kernel": func(b *serialization.Builder) {
			op(b, "aten.max_pool2d.default", ten(b, f, 1, 1, 5, 5), b.IntList(2), b.IntList(), b.IntList(2), b.IntList(1), b.Bool(false), ten(b, f, 1, 1, 4, 4))
		},
		"max_pool2d/2-D input": func(b *serialization.Builder) {
			op(b, "aten.max_pool2d.default", ten(b, f, 5, 5), b.IntList(2), b.IntList(), b.IntList(0), b.IntList(1), b.Bool(false), ten(b, f, 2, 2))
		},
		"max_pool2d/kernel too big": func(b *serialization.Builder) {
			op(b, "aten.max_pool2d.default", ten(b, f, 1, 1, 2, 2), b.IntList(3), b.IntList(), b.IntList(0), b.IntList(1), b.Bool(false), ten(b, f, 1, 1, 1, 1))
		},
		"max_pool2d_with_indices/float indices": func(b *serialization.Builder) {
			x, out := ten(b, f, 1, 1, 4, 4), ten(b, f, 1, 1, 2, 2)
			b.Op("aten.max_pool2d_with_indices.default", x, b.IntList(2), b.IntList(), b.IntList(0), b.IntList(1), b.Bool(false),
				b.ValueList(out, ten(b, f, 1, 1, 2, 2)))
			b.Inputs(x)
			b.Outputs(out)
		},
		"avg_pool2d/zero divisor": func(b *serialization.Builder) {
			op(b, "aten.avg_pool2d.default", ten(b, f, 1, 1, 4, 4), b.IntList(2), b.IntList(), b.IntList(0), b.Bool(false), b.Bool(true), b.Int(0), ten(b, f, 1, 1, 2, 2))
		},
		"upsample_nearest2d/both size and scales": func(b *serialization.Builder) {
			op(b, "aten.upsample_nearest2d.vec", ten(b, f, 1, 1, 4, 4), b.IntList(8, 8), b.DoubleList(2, 2), ten(b, f, 1, 1, 8, 8))
		},
		"upsample_nearest2d/neither": func(b *serialization.Builder) {
			op(b, "aten.upsample_nearest2d.vec", ten(b, f, 1, 1, 4, 4), b.Null(), b.Null(), ten(b, f, 1, 1, 8, 8))
		},
		"upsample_bilinear2d/3-D input": func(b *serialization.Builder) {
			op(b, "aten.upsample_bilinear2d.vec", ten(b, f, 1, 4, 4), b.IntList(8, 8), b.Bool(false), b.Null(), ten(b, f, 1, 8, 8))
		},
		"upsample_bilinear2d/one size": func(b *serialization.Builder) {
			op(b, "aten.upsample_bilinear2d.vec", ten(b, f, 1, 1, 4, 4), b.IntList(8), b.Bool(false), b.Null(), ten(b, f, 1, 1, 8, 8))
		},
		"pixel_shuffle/channels": func(b *serialization.Builder) {
			op(b, "aten.pixel_shuffle.default", ten(b, f, 1, 6, 2, 2), b.Int(2), ten(b, f, 1, 1, 4, 4))
		},
		"constant_pad_nd/uint8 value 300": func(b *serialization.Builder) {
			op(b, "aten.constant_pad_nd.default", ten(b, serialization.Uint8, 3, 4), b.IntList(1, 1), b.Double(300), ten(b, serialization.Uint8, 3, 6))
		},
		"constant_pad_nd/odd pad": func(b *serialization.Builder) {
			op(b, "aten.constant_pad_nd.default", ten(b, f, 3, 4), b.IntList(1, 2, 3), b.Double(0), ten(b, f, 5, 7))
		},
		"constant_pad_nd/negative size": func(b *serialization.Builder) {
			op(b, "aten.constant_pad_nd.default", ten(b, f, 3, 4), b.IntList(-3, -2), b.Double(0), ten(b, f, 3, 4))
		},
		"constant_pad_nd/too many pads": func(b *serialization.Builder) {
			op(b, "aten.constant_pad_nd.default", ten(b, f, 4), b.IntList(1, 1, 1, 1), b.Double(0), ten(b, f, 6))
		},
		"grid_sampler_2d/bicubic": func(b *serialization.Builder) {
			op(b, "aten.grid_sampler_2d.default", ten(b, f, 1, 1, 4, 4), ten(b, f, 1, 2, 2, 2), b.Int(2), b.Int(0), b.Bool(false), ten(b, f, 1, 1, 2, 2))
		},
		"grid_sampler_2d/reflection": func(b *serialization.Builder) {
			op(b, "aten.grid_sampler_2d.default", ten(b, f, 1, 1, 4, 4), ten(b, f, 1, 2, 2, 2), b.Int(0), b.Int(2), b.Bool(false), ten(b, f, 1, 1, 2, 2))
		},
		"grid_sampler_2d/grid batch": func(b *serialization.Builder) {
			op(b, "aten.grid_sampler_2d.default", ten(b, f, 2, 1, 4, 4), ten(b, f, 1, 2, 2, 2), b.Int(0), b.Int(0), b.Bool(false), ten(b, f, 2, 1, 2, 2))
		},
		"grid_priors/1-D input": func(b *serialization.Builder) {
			op(b, "et_vk.grid_priors.default", ten(b, f, 4), b.Int(8), b.Double(0.5), ten(b, f, 4, 2))
		},
	})
}

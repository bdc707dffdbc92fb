package opstest

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Statically quantized int8 graphs (PT2E): the quantize/dequantize pair and
// the et_vk.q8ta_* ops, with the scalar qparams as Double/Int values and
// int8 tensors as graph inputs and outputs (compared exactly). The int8
// outputs are requantized in float32; the reference follows the same fp32
// operation order, so they match exactly too.

// randInt8 returns an int8 tensor of shape with codes in [-128, 127].
func randInt8(r *rand.Rand, shape []int64) *reference.Tensor {
	return RandTensor(r, serialization.Int8, shape, -128, 128)
}

// quantizeCase is quantize_per_tensor → dequantize_per_tensor on a float
// input of shape in, with scale s, zero point zp and range [lo, hi]; both
// the int8 codes and the dequantized floats are outputs. ties sets some
// inputs on exact halves of the grid (scale 0.5: x·2 = k + 0.5).
func quantizeCase(in []int64, s float64, zp, lo, hi int64, ties bool) Case {
	return Case{
		Name: fmt.Sprintf("quantize_per_tensor/%s/s%g_zp%d_[%d,%d]", shapeName(in), s, zp, lo, hi),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, in, -200*s, 200*s)
			if ties {
				for i := range xv.V {
					if i%3 == 0 {
						xv.V[i] = (float64(r.IntN(64)-32) + 0.5) * s
					}
				}
			}
			x := b.Tensor(f, Dims(in), -1)
			b.Inputs(x)
			q := b.Tensor(serialization.Int8, Dims(in), -1)
			b.Op("quantized_decomposed.quantize_per_tensor.default", x, b.Double(s), b.Int(zp), b.Int(lo), b.Int(hi), b.Null(), q)
			y := b.Tensor(f, Dims(in), -1)
			b.Op("quantized_decomposed.dequantize_per_tensor.default", q, b.Double(s), b.Int(zp), b.Int(lo), b.Int(hi), b.Null(), b.Null(), y)
			b.Outputs(q, y)
			return []*reference.Tensor{xv}
		},
	}
}

// dequantizeCase is dequantize_per_tensor of an int8 graph input.
func dequantizeCase(in []int64, s float64, zp int64) Case {
	return Case{
		Name: fmt.Sprintf("dequantize_per_tensor/%s/s%g_zp%d", shapeName(in), s, zp),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			qv := randInt8(r, in)
			q := b.Tensor(serialization.Int8, Dims(in), -1)
			b.Inputs(q)
			y := b.Tensor(serialization.Float32, Dims(in), -1)
			b.Op("quantized_decomposed.dequantize_per_tensor.default", q, b.Double(s), b.Int(zp), b.Int(-128), b.Int(127), b.Null(), b.Null(), y)
			b.Outputs(y)
			return []*reference.Tensor{qv}
		},
	}
}

// q8UnaryCase is q8ta_relu (shuffle 0) or q8ta_pixel_shuffle (upscale
// factor shuffle) of an int8 graph input, input qparams (si, zi), output
// (so, zo).
func q8UnaryCase(in []int64, si float64, zi int64, so float64, zo int64, shuffle int64) Case {
	op := "q8ta_relu"
	if shuffle > 0 {
		op = fmt.Sprintf("q8ta_pixel_shuffle_r%d", shuffle)
	}
	return Case{
		Name: fmt.Sprintf("%s/%s/in%g_%d/out%g_%d", op, shapeName(in), si, zi, so, zo),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			qv := randInt8(r, in)
			q := b.Tensor(serialization.Int8, Dims(in), -1)
			b.Inputs(q)
			if shuffle == 0 {
				y := b.Tensor(serialization.Int8, Dims(in), -1)
				b.Op("et_vk.q8ta_relu.default", q, b.Double(si), b.Int(zi), b.Double(so), b.Int(zo), y)
				b.Outputs(y)
				return []*reference.Tensor{qv}
			}
			k := len(in)
			outShape := append(append([]int64(nil), in[:k-3]...), in[k-3]/(shuffle*shuffle), in[k-2]*shuffle, in[k-1]*shuffle)
			y := b.Tensor(serialization.Int8, Dims(outShape), -1)
			b.Op("et_vk.q8ta_pixel_shuffle.default", q, b.Double(si), b.Int(zi), b.Double(1/so), b.Int(zo), b.Int(shuffle), y)
			b.Outputs(y)
			return []*reference.Tensor{qv}
		},
	}
}

// q8AddCase is q8ta_add of two int8 graph inputs; intAlpha passes alpha 1
// as an Int value, as the exporter's scalar deduplication may.
func q8AddCase(in []int64, sa float64, za int64, sb float64, zb int64, so float64, zo int64, alpha float64, intAlpha bool) Case {
	name := fmt.Sprintf("q8ta_add/%s/a%g_%d/b%g_%d/out%g_%d/alpha%g", shapeName(in), sa, za, sb, zb, so, zo, alpha)
	if intAlpha {
		name += "/int_alpha"
	}
	return Case{
		Name: name,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			av, bv := randInt8(r, in), randInt8(r, in)
			x := b.Tensor(serialization.Int8, Dims(in), -1)
			y := b.Tensor(serialization.Int8, Dims(in), -1)
			b.Inputs(x, y)
			al := b.Double(alpha)
			if intAlpha {
				al = b.Int(int64(alpha))
			}
			out := b.Tensor(serialization.Int8, Dims(in), -1)
			b.Op("et_vk.q8ta_add.default", x, y, b.Double(sa), b.Int(za), b.Double(sb), b.Int(zb), b.Double(so), b.Int(zo), al, out)
			b.Outputs(out)
			return []*reference.Tensor{av, bv}
		},
	}
}

func init() {
	Cases = append(Cases,
		quantizeCase([]int64{7}, 0.0213, 5, -128, 127, false),
		quantizeCase([]int64{3, 5, 9}, 0.5, -3, -128, 127, true),
		quantizeCase([]int64{2, 4, 4}, 0.0371, -128, -128, 127, false),
		quantizeCase([]int64{1, 130}, 0.017, 12, -100, 90, false),
		quantizeCase([]int64{5, 3}, 0.25, 0, -127, 127, true),
		dequantizeCase([]int64{9}, 0.031, -7),
		dequantizeCase([]int64{2, 3, 5, 7}, 0.0042, 100),
		q8UnaryCase([]int64{3, 7, 5}, 0.05, 10, 0.03, -128, 0),
		q8UnaryCase([]int64{1, 4, 4, 4}, 0.02, -20, 0.02, -20, 0),
		q8UnaryCase([]int64{1, 8, 3, 5}, 0.04, 3, 0.05, -6, 2),
		q8UnaryCase([]int64{2, 9, 3, 1}, 0.04, 0, 0.04, 0, 3),
		q8AddCase([]int64{2, 3, 7}, 0.05, 4, 0.03, -9, 0.07, 2, 1, false),
		q8AddCase([]int64{1, 16, 4, 4}, 0.02, -128, 0.02, -128, 0.03, -128, 1, true),
		q8AddCase([]int64{11}, 0.01, 0, 0.05, 7, 0.04, -3, 0.5, false),
	)
}

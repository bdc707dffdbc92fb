package opstest

import (
	"fmt"
	"math"
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

// q8Weights adds an int8 per-channel symmetric weight [rows, cols] (codes
// in [-127, 127]) with the exporter's companions: int32 row sums and
// float32 scales in [sw, 2·sw), both zero-padded to roundup4(rows), and
// (bias) a float32 bias padded the same way, else Null.
func q8Weights(b *serialization.Builder, r *rand.Rand, rows, cols int64, sw float64, bias bool) (w, sums, scales, bv int32, q []int) {
	q = randQ(r, rows, cols, -127, 127)
	data := make([]byte, len(q))
	for i, v := range q {
		data[i] = byte(int8(v))
	}
	w, _ = b.NamedConst(serialization.Int8, []uint32{uint32(rows), uint32(cols)}, data)
	return w, q8Sums(b, q, rows, cols), q8Scales(b, r, rows, sw), q8Bias(b, r, rows, bias), q
}

// q8Sums adds the int32 row sums of q [rows, cols], padded to roundup4(rows).
func q8Sums(b *serialization.Builder, q []int, rows, cols int64) int32 {
	rp := (rows + 3) / 4 * 4
	st := reference.New(serialization.Int32, []int64{rp})
	for i := int64(0); i < rows; i++ {
		for j := int64(0); j < cols; j++ {
			st.V[i] += float64(q[i*cols+j])
		}
	}
	id, _ := b.NamedConst(serialization.Int32, []uint32{uint32(rp)}, st.Encode())
	return id
}

// q8Scales adds rows float32 scales in [sw, 2·sw), padded to roundup4(rows).
func q8Scales(b *serialization.Builder, r *rand.Rand, rows int64, sw float64) int32 {
	rp := (rows + 3) / 4 * 4
	sv := make([]float64, rp)
	for i := int64(0); i < rows; i++ {
		sv[i] = float64(float32(sw * (1 + r.Float64())))
	}
	id, _ := b.NamedConst(serialization.Float32, []uint32{uint32(rp)}, f32Bytes(sv))
	return id
}

// q8Bias adds a float32 bias in [-1, 1) padded to roundup4(rows), or Null.
func q8Bias(b *serialization.Builder, r *rand.Rand, rows int64, bias bool) int32 {
	if !bias {
		return b.Null()
	}
	rp := (rows + 3) / 4 * 4
	bb := make([]float64, rp)
	copy(bb, RandTensor(r, serialization.Float32, []int64{rows}, -1, 1).V)
	id, _ := b.NamedConst(serialization.Float32, []uint32{uint32(rp)}, f32Bytes(bb))
	return id
}

// q8OutScale picks an output scale that maps a K-term dot of int8 codes
// (scaled by sIn·sw) onto roughly ±100 codes, so that requantization
// neither saturates everything nor collapses to a few codes.
func q8OutScale(k int64, sIn, sw float64) float64 {
	return float64(float32(sIn * sw * 1.5 * 9000 * math.Sqrt(float64(k)) / 100))
}

// q8LinearCase is et_vk.q8ta_linear (or _gemv, or with out f32
// linear_q8ta_q8csw) on an int8 input of shape in (floatIn: a float32
// input, for linear_q8ta_q8csw only) with N outputs.
func q8LinearCase(op string, in []int64, n int64, zpIn, zpOut int64, bias, relu, floatIn, out2D bool) Case {
	k := in[len(in)-1]
	m := numel(in[:len(in)-1])
	name := fmt.Sprintf("%s/%s_N%d/zp%d_%d/bias=%v/relu=%v", op, shapeName(in), n, zpIn, zpOut, bias, relu)
	if floatIn {
		name += "/float_in"
	}
	if out2D {
		name += "/out2d"
	}
	return Case{
		Name: name,
		Tol:  Tolerance{Abs: 1e-5 * math.Sqrt(float64(k)), Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			const sIn, sw = 0.02, 0.002
			var xv *reference.Tensor
			var x int32
			if floatIn {
				xv = RandTensor(r, serialization.Float32, in, -130*sIn, 130*sIn)
				x = b.Tensor(serialization.Float32, Dims(in), -1)
			} else {
				xv = randInt8(r, in)
				x = b.Tensor(serialization.Int8, Dims(in), -1)
			}
			b.Inputs(x)
			w, sums, scales, bv, _ := q8Weights(b, r, n, k, sw, bias)
			outShape := append(append([]int64(nil), in[:len(in)-1]...), n)
			if out2D {
				outShape = []int64{m, n}
			}
			if op == "linear_q8ta_q8csw" {
				out := b.Tensor(serialization.Float32, Dims(outShape), -1)
				b.Op("et_vk.linear_q8ta_q8csw.default", x, b.Double(sIn), b.Int(zpIn), w, sums, scales, bv, out)
				b.Outputs(out)
				return []*reference.Tensor{xv}
			}
			act := "none"
			if relu {
				act = "relu"
			}
			out := b.Tensor(serialization.Int8, Dims(outShape), -1)
			b.Op("et_vk."+op+".default", x, b.Double(sIn), b.Int(zpIn), w, sums, scales,
				b.Double(q8OutScale(k, sIn, sw)), b.Int(zpOut), bv, b.String(act), out)
			b.Outputs(out)
			return []*reference.Tensor{xv}
		},
	}
}

func init() {
	Cases = append(Cases,
		q8LinearCase("q8ta_linear_gemv", []int64{1, 64}, 12, 3, -5, true, false, false, false),
		q8LinearCase("q8ta_linear", []int64{3, 5, 32}, 8, -17, 0, false, true, false, false),
		q8LinearCase("q8ta_linear", []int64{17, 36}, 20, 0, -128, true, true, false, false),
		// N % 4 != 0: output words cross rows.
		q8LinearCase("q8ta_linear", []int64{7, 16}, 7, 9, 4, true, false, false, false),
		q8LinearCase("q8ta_linear", []int64{2, 3, 20}, 5, -2, 11, false, true, false, true),
		q8LinearCase("q8ta_linear_gemv", []int64{1, 1, 1028}, 3, 1, 1, true, false, false, false),
		q8LinearCase("linear_q8ta_q8csw", []int64{5, 64}, 10, 7, 0, true, false, false, false),
		q8LinearCase("linear_q8ta_q8csw", []int64{1, 2, 8}, 9, -128, 0, false, false, false, false),
		q8LinearCase("linear_q8ta_q8csw", []int64{3, 32}, 6, -4, 0, true, false, true, false),
	)
}

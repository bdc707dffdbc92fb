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

// q8AddCase is q8ta_add of two int8 graph inputs of shapes ina and inb
// (broadcast to the output). alphaKind is how alpha is passed: "double",
// "int" (the exporter's scalar deduplication may turn 1.0 into Int 1),
// "string" or "null" (read as 1).
func q8AddCase(ina, inb []int64, sa float64, za int64, sb float64, zb int64, so float64, zo int64, alpha float64, alphaKind string) Case {
	name := fmt.Sprintf("q8ta_add/%s+%s/a%g_%d/b%g_%d/out%g_%d/alpha%g_%s", shapeName(ina), shapeName(inb), sa, za, sb, zb, so, zo, alpha, alphaKind)
	return Case{
		Name: name,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			av, bv := randInt8(r, ina), randInt8(r, inb)
			x := b.Tensor(serialization.Int8, Dims(ina), -1)
			y := b.Tensor(serialization.Int8, Dims(inb), -1)
			b.Inputs(x, y)
			var al int32
			switch alphaKind {
			case "int":
				al = b.Int(int64(alpha))
			case "string":
				al = b.String("unused")
			case "null":
				al = b.Null()
			default:
				al = b.Double(alpha)
			}
			// The broadcast shape: right-aligned, size 1 stretches.
			outShape := make([]int64, max(len(ina), len(inb)))
			for i := range outShape {
				d := int64(1)
				if j := len(ina) - len(outShape) + i; j >= 0 {
					d = max(d, ina[j])
				}
				if j := len(inb) - len(outShape) + i; j >= 0 {
					d = max(d, inb[j])
				}
				outShape[i] = d
			}
			out := b.Tensor(serialization.Int8, Dims(outShape), -1)
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
		q8AddCase([]int64{2, 3, 7}, []int64{2, 3, 7}, 0.05, 4, 0.03, -9, 0.07, 2, 1, "double"),
		q8AddCase([]int64{1, 16, 4, 4}, []int64{1, 16, 4, 4}, 0.02, -128, 0.02, -128, 0.03, -128, 1, "int"),
		q8AddCase([]int64{11}, []int64{11}, 0.01, 0, 0.05, 7, 0.04, -3, 0.5, "double"),
		// Broadcasting (a per-channel term, a row, a scalar-like tensor).
		q8AddCase([]int64{2, 5, 3, 7}, []int64{1, 5, 1, 1}, 0.04, -2, 0.06, 1, 0.08, 0, 1, "string"),
		q8AddCase([]int64{1, 7}, []int64{3, 4, 1}, 0.03, 5, 0.02, -6, 0.04, 3, 1, "null"),
		q8AddCase([]int64{1}, []int64{2, 9}, 0.05, 0, 0.05, 0, 0.05, 0, 2, "double"),
	)
}

// q8Weights adds an int8 per-channel symmetric weight [rows, cols] (codes
// in [-127, 127]) with the exporter's companions: int32 row sums and
// float32 scales in [sw, 2·sw), both zero-padded to roundup4(rows), and
// (bias) a float32 bias padded the same way, else Null.
func q8Weights(b *serialization.Builder, r *rand.Rand, rows, cols int64, sw float64, bias bool) (w, sums, scales, bv int32, q []int, sv, bvals []float64) {
	q = randQ(r, rows, cols, -127, 127)
	data := make([]byte, len(q))
	for i, v := range q {
		data[i] = byte(int8(v))
	}
	w, _ = b.NamedConst(serialization.Int8, []uint32{uint32(rows), uint32(cols)}, data)
	sums = q8Sums(b, q, rows, cols)
	scales, sv = q8Scales(b, r, rows, sw)
	bv, bvals = q8Bias(b, r, rows, bias)
	return w, sums, scales, bv, q, sv, bvals
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

// q8Scales adds rows float32 scales in [sw, 2·sw), padded to roundup4(rows),
// and returns them too.
func q8Scales(b *serialization.Builder, r *rand.Rand, rows int64, sw float64) (int32, []float64) {
	rp := (rows + 3) / 4 * 4
	sv := make([]float64, rp)
	for i := int64(0); i < rows; i++ {
		sv[i] = float64(float32(sw * (1 + r.Float64())))
	}
	id, _ := b.NamedConst(serialization.Float32, []uint32{uint32(rp)}, f32Bytes(sv))
	return id, sv
}

// q8Bias adds a float32 bias in [-1, 1) padded to roundup4(rows) and
// returns it too, or Null.
func q8Bias(b *serialization.Builder, r *rand.Rand, rows int64, bias bool) (int32, []float64) {
	if !bias {
		return b.Null(), nil
	}
	rp := (rows + 3) / 4 * 4
	bb := make([]float64, rp)
	copy(bb, RandTensor(r, serialization.Float32, []int64{rows}, -1, 1).V)
	id, _ := b.NamedConst(serialization.Float32, []uint32{uint32(rp)}, f32Bytes(bb))
	return id, bb
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
			w, sums, scales, bv, _, _, _ := q8Weights(b, r, n, k, sw, bias)
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

// q8Conv describes one int8 convolution case.
type q8Conv struct {
	op               string // q8ta_conv2d, q8ta_conv2d_pw, q8ta_conv2d_dw, q8ta_conv2d_transposed
	n, ic, h, w, oc  int64
	kh, kw           int64
	stride, pad, dil [2]int64
	opad             [2]int64
	groups           int64
	zpIn, zpOut      int64
	bias, relu       bool
}

// packQ8ConvWeight lays out torch's weight codes the way the exporter does
// (quantized-format.md §12.3). wt is [OC, IC_pg, KH, KW] for a forward
// convolution (dw: IC_pg = 1) and ConvTranspose2d's [IC, OC_pg, KH, KW]
// for a transposed one. It returns the bytes and dims.
func packQ8ConvWeight(c q8Conv, wt []int) ([]byte, []uint32) {
	icPG, ocPG := c.ic/c.groups, c.oc/c.groups
	taps := c.kh * c.kw
	if c.op == "q8ta_conv2d_dw" {
		// permute(2, 3, 1, 0) of [C, 1, KH, KW] → [KH, KW, C], the last
		// dim zero-padded to a multiple of 4 (align_width_and_update_state_dict).
		cp := (c.oc + 3) / 4 * 4
		out := make([]byte, taps*cp)
		for o := int64(0); o < c.oc; o++ {
			for t := int64(0); t < taps; t++ {
				out[t*cp+o] = byte(int8(wt[o*taps+t]))
			}
		}
		return out, []uint32{uint32(c.kh), uint32(c.kw), uint32(cp)}
	}
	cols := taps * icPG
	ld := (cols + 3) / 4 * 4
	out := make([]byte, c.oc*ld)
	for o := int64(0); o < c.oc; o++ {
		for i := int64(0); i < icPG; i++ {
			for t := int64(0); t < taps; t++ {
				var v int
				if c.op == "q8ta_conv2d_transposed" {
					// reshape(groups, IC_pg, OC_pg, KH, KW).permute(0, 2, 3, 4, 1)
					g, j := o/ocPG, o%ocPG
					v = wt[((g*icPG+i)*ocPG+j)*taps+t]
				} else {
					// permute(0, 2, 3, 1)
					v = wt[(o*icPG+i)*taps+t]
				}
				out[o*ld+t*icPG+i] = byte(int8(v))
			}
		}
	}
	return out, []uint32{uint32(c.oc), uint32(ld)}
}

func (c q8Conv) outHW() (int64, int64) {
	if c.op == "q8ta_conv2d_transposed" {
		return (c.h-1)*c.stride[0] - 2*c.pad[0] + c.dil[0]*(c.kh-1) + c.opad[0] + 1,
			(c.w-1)*c.stride[1] - 2*c.pad[1] + c.dil[1]*(c.kw-1) + c.opad[1] + 1
	}
	return (c.h+2*c.pad[0]-c.dil[0]*(c.kh-1)-1)/c.stride[0] + 1,
		(c.w+2*c.pad[1]-c.dil[1]*(c.kw-1)-1)/c.stride[1] + 1
}

// q8ConvCase is the case of c, with the exporter's constants.
func q8ConvCase(c q8Conv) Case {
	name := fmt.Sprintf("%s/%dx%dx%dx%d_oc%d_k%dx%d_s%v_p%v_d%v_g%d/zp%d_%d/bias=%v/relu=%v",
		c.op, c.n, c.ic, c.h, c.w, c.oc, c.kh, c.kw, c.stride, c.pad, c.dil, c.groups, c.zpIn, c.zpOut, c.bias, c.relu)
	if c.op == "q8ta_conv2d_transposed" {
		name += fmt.Sprintf("/op%v", c.opad)
	}
	return Case{Name: name, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor { return q8ConvBuild(c, b, r, false) }}
}

// q8ConvBuild builds c's graph. With float it also computes the same
// convolution the way the graph looked before the exporter fused it
// (dequantize_per_tensor → aten.convolution on float weights q·s_w[oc] →
// [relu] → quantize_per_tensor), as a second output.
func q8ConvBuild(c q8Conv, b *serialization.Builder, r *rand.Rand, float bool) []*reference.Tensor {
	const sIn, sw = 0.03, 0.002
	in := []int64{c.n, c.ic, c.h, c.w}
	xv := randInt8(r, in)
	x := b.Tensor(serialization.Int8, Dims(in), -1)
	b.Inputs(x)
	icPG := c.ic / c.groups
	var wt []int
	if c.op == "q8ta_conv2d_transposed" {
		wt = randQ(r, c.ic, c.oc/c.groups*c.kh*c.kw, -127, 127)
	} else {
		wt = randQ(r, c.oc, icPG*c.kh*c.kw, -127, 127)
	}
	data, dims := packQ8ConvWeight(c, wt)
	w, _ := b.NamedConst(serialization.Int8, dims, data)
	// Sums per output channel over its taps (unused by the GPU
	// form, written as the exporter does).
	sums := make([]int, c.oc)
	taps := c.kh * c.kw
	for o := int64(0); o < c.oc; o++ {
		for i := int64(0); i < icPG; i++ {
			for t := int64(0); t < taps; t++ {
				if c.op == "q8ta_conv2d_transposed" {
					g, j := o/(c.oc/c.groups), o%(c.oc/c.groups)
					sums[o] += wt[((g*icPG+i)*(c.oc/c.groups)+j)*taps+t]
				} else {
					sums[o] += wt[(o*icPG+i)*taps+t]
				}
			}
		}
	}
	ws := q8Sums(b, sums, c.oc, 1)
	scales, sv := q8Scales(b, r, c.oc, sw)
	bv, bvals := q8Bias(b, r, c.oc, c.bias)
	oh, ow := c.outHW()
	out := b.Tensor(serialization.Int8, []uint32{uint32(c.n), uint32(c.oc), uint32(oh), uint32(ow)}, -1)
	act := "none"
	if c.relu {
		act = "relu"
	}
	args := []int32{x, b.Double(sIn), b.Int(c.zpIn), w, ws, scales,
		b.Double(q8OutScale(taps*icPG, sIn, sw)), b.Int(c.zpOut), bv,
		b.IntList(c.kh, c.kw), b.IntList(c.stride[:]...), b.IntList(c.pad[:]...)}
	if c.op == "q8ta_conv2d_transposed" {
		args = append(args, b.IntList(c.opad[:]...))
	}
	args = append(args, b.IntList(c.dil[:]...), b.Int(c.groups), b.String(act), out)
	b.Op("et_vk."+c.op+".default", args...)
	if !float {
		b.Outputs(out)
		return []*reference.Tensor{xv}
	}
	f := serialization.Float32
	xf := b.Tensor(f, Dims(in), -1)
	b.Op("quantized_decomposed.dequantize_per_tensor.default", x, b.Double(sIn), b.Int(c.zpIn), b.Int(-128), b.Int(127), b.Null(), b.Null(), xf)
	// torch's float weight: wt[·, ·, kh, kw]·s_w[oc].
	wf := make([]float64, len(wt))
	ocPG := c.oc / c.groups
	for i := range wt {
		var o int64
		if c.op == "q8ta_conv2d_transposed" {
			row := int64(i) / (ocPG * taps) // input channel
			o = row/icPG*ocPG + int64(i)/taps%ocPG
		} else {
			o = int64(i) / (icPG * taps)
		}
		wf[i] = float64(wt[i]) * sv[o]
	}
	wdims := []uint32{uint32(c.oc), uint32(icPG), uint32(c.kh), uint32(c.kw)}
	if c.op == "q8ta_conv2d_transposed" {
		wdims = []uint32{uint32(c.ic), uint32(ocPG), uint32(c.kh), uint32(c.kw)}
	}
	wc, _ := b.NamedConst(f, wdims, f32Bytes(wf))
	fb := b.Null()
	if c.bias {
		fb, _ = b.NamedConst(f, []uint32{uint32(c.oc)}, f32Bytes(bvals[:c.oc]))
	}
	yf := b.Tensor(f, out4(c.n, c.oc, oh, ow), -1)
	b.Op("aten.convolution.default", xf, wc, fb, b.IntList(c.stride[:]...), b.IntList(c.pad[:]...), b.IntList(c.dil[:]...),
		b.Bool(c.op == "q8ta_conv2d_transposed"), b.IntList(c.opad[:]...), b.Int(c.groups), yf)
	if c.relu {
		yr := b.Tensor(f, out4(c.n, c.oc, oh, ow), -1)
		b.Op("aten.relu.default", yf, yr)
		yf = yr
	}
	yq := b.Tensor(serialization.Int8, out4(c.n, c.oc, oh, ow), -1)
	b.Op("quantized_decomposed.quantize_per_tensor.default", yf, b.Double(q8OutScale(taps*icPG, sIn, sw)), b.Int(c.zpOut), b.Int(-128), b.Int(127), b.Null(), yq)
	b.Outputs(out, yq)
	return []*reference.Tensor{xv}
}

func out4(n, c, h, w int64) []uint32 { return []uint32{uint32(n), uint32(c), uint32(h), uint32(w)} }

// q8ConvConfigs are the int8 convolution cases.
var q8ConvConfigs = func() []q8Conv {
	one, two := [2]int64{1, 1}, [2]int64{2, 2}
	return []q8Conv{
		// Odd channels and widths (OW % 4 != 0: words cross rows).
		{op: "q8ta_conv2d", n: 1, ic: 3, h: 9, w: 9, oc: 5, kh: 3, kw: 3, stride: one, pad: one, dil: one, groups: 1, zpIn: 7, zpOut: -3, bias: true, relu: true},
		// Stride 2, groups 2, aligned output.
		{op: "q8ta_conv2d", n: 2, ic: 8, h: 16, w: 16, oc: 8, kh: 3, kw: 3, stride: two, pad: one, dil: one, groups: 2, zpIn: -128, zpOut: 5, bias: false},
		// Rectangular kernel, mixed stride/padding, dilation 2.
		{op: "q8ta_conv2d", n: 1, ic: 4, h: 11, w: 8, oc: 7, kh: 5, kw: 3, stride: [2]int64{2, 1}, pad: [2]int64{2, 1}, dil: two, groups: 1, zpIn: 0, zpOut: 0, bias: true},
		{op: "q8ta_conv2d", n: 1, ic: 6, h: 7, w: 12, oc: 12, kh: 3, kw: 3, stride: one, pad: [2]int64{0, 2}, dil: one, groups: 3, zpIn: 12, zpOut: -128, bias: true, relu: true},
		// The tiled kernel (OW, OC_pg, IC_pg multiples of 4), with padding, bias, relu; a 5×5 stride 2.
		{op: "q8ta_conv2d", n: 1, ic: 8, h: 9, w: 12, oc: 12, kh: 3, kw: 3, stride: one, pad: one, dil: one, groups: 1, zpIn: -11, zpOut: -128, bias: true, relu: true},
		{op: "q8ta_conv2d", n: 2, ic: 16, h: 13, w: 15, oc: 8, kh: 5, kw: 5, stride: two, pad: two, dil: one, groups: 1, zpIn: 21, zpOut: 6, bias: true},
		{op: "q8ta_conv2d_pw", n: 1, ic: 12, h: 7, w: 7, oc: 9, kh: 1, kw: 1, stride: one, dil: one, groups: 1, zpIn: -5, zpOut: 9, bias: true},
		{op: "q8ta_conv2d_pw", n: 2, ic: 16, h: 4, w: 8, oc: 8, kh: 1, kw: 1, stride: one, dil: one, groups: 1, zpIn: 3, zpOut: -128, relu: true},
		{op: "q8ta_conv2d_dw", n: 1, ic: 8, h: 8, w: 8, oc: 8, kh: 3, kw: 3, stride: one, pad: one, dil: one, groups: 8, zpIn: -9, zpOut: 2, bias: true, relu: true},
		// Odd channels: the exporter pads the weight's last dim to 8.
		{op: "q8ta_conv2d_dw", n: 1, ic: 7, h: 6, w: 9, oc: 7, kh: 3, kw: 3, stride: one, pad: one, dil: one, groups: 7, zpIn: 2, zpOut: -9, bias: true},
		{op: "q8ta_conv2d_dw", n: 2, ic: 12, h: 11, w: 11, oc: 12, kh: 5, kw: 5, stride: two, pad: two, dil: one, groups: 12, zpIn: 4, zpOut: -7, bias: true},
		{op: "q8ta_conv2d_transposed", n: 1, ic: 4, h: 5, w: 5, oc: 6, kh: 3, kw: 3, stride: two, pad: one, opad: one, dil: one, groups: 1, zpIn: 6, zpOut: -1, bias: true},
		{op: "q8ta_conv2d_transposed", n: 2, ic: 4, h: 4, w: 6, oc: 8, kh: 2, kw: 2, stride: two, dil: one, groups: 2, zpIn: -20, zpOut: 3, relu: true},
		{op: "q8ta_conv2d_transposed", n: 1, ic: 3, h: 6, w: 5, oc: 5, kh: 3, kw: 3, stride: [2]int64{1, 2}, pad: [2]int64{2, 1}, dil: [2]int64{2, 1}, groups: 1, zpIn: 1, zpOut: 0, bias: true},
	}
}()

func init() {
	for _, c := range q8ConvConfigs {
		Cases = append(Cases, q8ConvCase(c))
	}
}

// A dynamic token dim through the int8 ops: x [1, S, 32] serialized with
// S = 24 and fed with S in 1..24 (re-recordings move between the 4-row
// tile and fewer rows): quantize → q8ta_linear (N = 12) → q8ta_add with
// itself → dequantize, plus the float32-out linear_q8ta_q8csw on the same
// codes. Constants are inline (TestDynamicReexecute loads without named
// data).
func init() {
	Cases = append(Cases, Case{
		Name: "dynamic/q8ta_linear",
		Tol:  Tolerance{Abs: 1e-4, Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f, i8 := serialization.Float32, serialization.Int8
			const s, k, n = 24, 32, 12
			x := b.Tensor(f, []uint32{1, s, k}, -1)
			b.Inputs(x)
			q := b.Tensor(i8, []uint32{1, s, k}, -1)
			b.Op("quantized_decomposed.quantize_per_tensor.default", x, b.Double(0.01), b.Int(-4), b.Int(-128), b.Int(127), b.Null(), q)
			codes := randQ(r, n, k, -127, 127)
			wb := make([]byte, len(codes))
			sums := reference.New(serialization.Int32, []int64{n})
			for i, c := range codes {
				wb[i] = byte(int8(c))
				sums.V[i/k] += float64(c)
			}
			w := b.InlineConst(i8, []uint32{n, k}, wb)
			ws := b.InlineConst(serialization.Int32, []uint32{n}, sums.Encode())
			sc := b.InlineConst(f, []uint32{n}, f32Bytes(randScales(r, n)))
			bias := b.InlineConst(f, []uint32{n}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
			y := b.Tensor(i8, []uint32{1, s, n}, -1)
			b.Op("et_vk.q8ta_linear.default", q, b.Double(0.01), b.Int(-4), w, ws, sc, b.Double(0.35), b.Int(3), bias, b.String("none"), y)
			z := b.Tensor(i8, []uint32{1, s, n}, -1)
			b.Op("et_vk.q8ta_add.default", y, y, b.Double(0.35), b.Int(3), b.Double(0.35), b.Int(3), b.Double(0.5), b.Int(-1), b.Double(1), z)
			zf := b.Tensor(f, []uint32{1, s, n}, -1)
			b.Op("quantized_decomposed.dequantize_per_tensor.default", z, b.Double(0.5), b.Int(-1), b.Int(-128), b.Int(127), b.Null(), b.Null(), zf)
			yf := b.Tensor(f, []uint32{1, s, n}, -1)
			b.Op("et_vk.linear_q8ta_q8csw.default", q, b.Double(0.01), b.Int(-4), w, ws, sc, bias, yf)
			b.Outputs(y, zf, yf)
			live := 1 + r.Int64N(s)
			return []*reference.Tensor{RandTensor(r, f, []int64{1, live, k}, -1.3, 1.3)}
		},
	})
}

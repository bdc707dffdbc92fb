package models

import (
	"math"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// QCNNConfig sizes the statically quantized CNN: a batch of N images of C
// channels, H×W (H and W multiples of 4), C1 channels after the first
// convolution (a multiple of 4: the exporter's depthwise match asserts
// it), C2 after the pointwise one, Classes outputs.
type QCNNConfig struct {
	N, C, H, W, C1, C2, Classes int64
	Seed                        uint64
	// Int8IO makes the program take int8 codes and return int8 codes, as
	// ExecuTorch's quantize_io_pass leaves it (the first quantize and the
	// last dequantize removed; their qparams go to the caller): the input
	// is the int8 image with InputQParams, the output the int8 logits with
	// OutputQParams.
	Int8IO bool
}

// DefaultQCNN is a small quantized image classifier.
var DefaultQCNN = QCNNConfig{N: 1, C: 3, H: 16, W: 16, C1: 8, C2: 12, Classes: 10, Seed: 21}

// QParams is a per-tensor int8 affine quantization: q = round(x/Scale) + ZeroPoint.
type QParams struct {
	Scale     float64
	ZeroPoint int64
}

// QCNN is the CNN a PT2E static int8 quantization (XNNPACKQuantizer,
// per-channel symmetric int8 weights, per-tensor affine int8 activations)
// followed by the ExecuTorch Vulkan exporter's fusion passes leaves in the
// VkGraph (quantized-format.md §12):
//
//	q0 = quantize_per_tensor(x)                          # [N, C, H, W] int8
//	q1 = q8ta_conv2d(q0, 3×3, pad 1, relu)               # [N, C1, H, W]
//	q2 = q8ta_conv2d_dw(q1, 3×3, stride 2, pad 1, relu)  # [N, C1, H/2, W/2]
//	q3 = q8ta_conv2d_pw(q2)                              # [N, C2, H/2, W/2]
//	q4 = q8ta_relu(q3)
//	p  = avg_pool2d(dequantize_per_tensor(q4), 2)        # float: no int8 pool op
//	q5 = view_copy(quantize_per_tensor(p), [N, C2·H/4·W/4])
//	q6 = q8ta_linear(q5) (q8ta_linear_gemv when N == 1)  # [N, Classes] int8
//	y  = dequantize_per_tensor(q6)                       # logits
//
// Outputs: y and q6 (the int8 logits, compared exactly). The relu-fused
// layers quantize their output with zero point −128, as XNNPACK's
// observers do for a non-negative range. Weights are float draws quantized
// per output channel to [−127, 127] (scale max|w|/127), laid out as the
// exporter writes them, with int32 weight sums and scales and bias padded
// to a multiple of 4. With Int8IO the program takes q0 and returns q6.
type QCNN struct {
	Cfg QCNNConfig
	B   *serialization.Builder
	// Unfused is the same network as the quantizer hands it to the
	// exporter, before the fusions: every q8ta op is
	// dequantize_per_tensor → aten.convolution / aten.linear / aten.relu on
	// float weights (code·scale, torch's layouts) [→ aten.relu] →
	// quantize_per_tensor. Same inputs and outputs as B.
	Unfused *serialization.Builder
	// InputQParams quantizes the image; OutputQParams dequantizes the
	// logits.
	InputQParams, OutputQParams QParams
}

// NewQCNN builds the graph with weights drawn from cfg.Seed, and Unfused
// with the same weights.
func NewQCNN(cfg QCNNConfig) *QCNN {
	r := newRNG(cfg.Seed)
	f, i8 := serialization.Float32, serialization.Int8
	b, u := serialization.NewBuilder(), serialization.NewBuilder()
	n, h, w := cfg.N, cfg.H, cfg.W
	qIn := QParams{1.0 / 127, 3}
	// Activation qparams, from the ranges these weights give on images in
	// [-1, 1) (fan-in scaled weights keep each layer near unit variance).
	q1 := QParams{2.0 / 255, -128}
	q2 := QParams{1.5 / 255, -128}
	q3 := QParams{2.5 / 255, 5}
	q4 := QParams{1.3 / 255, -128}
	q5 := QParams{0.9 / 255, -128}
	q6 := QParams{2.2 / 255, 2}
	m := &QCNN{Cfg: cfg, B: b, Unfused: u, InputQParams: qIn, OutputQParams: q6}
	// tag marks an int8 activation as the Vulkan partitioner does (BUFFER
	// storage, a PACKED_INT8_* layout for its consumer, op_registry.py);
	// the tags change no values.
	tag := func(id int32, layout uint8) {
		t := b.Graph().Values[id].Tensor
		t.StorageType, t.MemoryLayout = 0, layout
	}
	const packed4W4C, packed4H4W, packedConv2D = 3, 4, 9

	// Values come in pairs: the id in B and the id in Unfused.
	type pair struct{ b, u int32 }
	quantize1 := func(g *serialization.Builder, x int32, q QParams, shape ...int64) int32 {
		out := g.Tensor(i8, dims(shape...), -1)
		g.Op("quantized_decomposed.quantize_per_tensor.default", x, g.Double(q.Scale), g.Int(q.ZeroPoint),
			g.Int(-128), g.Int(127), g.Null(), out)
		return out
	}
	dequantize1 := func(g *serialization.Builder, x int32, q QParams, shape ...int64) int32 {
		out := g.Tensor(f, dims(shape...), -1)
		g.Op("quantized_decomposed.dequantize_per_tensor.default", x, g.Double(q.Scale), g.Int(q.ZeroPoint),
			g.Int(-128), g.Int(127), g.Null(), g.Null(), out)
		return out
	}
	quantize := func(x pair, q QParams, shape ...int64) pair {
		return pair{quantize1(b, x.b, q, shape...), quantize1(u, x.u, q, shape...)}
	}
	dequantize := func(x pair, q QParams, shape ...int64) pair {
		return pair{dequantize1(b, x.b, q, shape...), dequantize1(u, x.u, q, shape...)}
	}
	// floatOp adds to Unfused: dq(in) → op(…) [→ relu] → q, the chain the
	// exporter fuses into one q8ta op.
	floatOp := func(in int32, qi, qo QParams, inShape, outShape []int64, relu bool, op func(x, y int32)) int32 {
		x := dequantize1(u, in, qi, inShape...)
		y := u.Tensor(f, dims(outShape...), -1)
		op(x, y)
		if relu {
			z := u.Tensor(f, dims(outShape...), -1)
			u.Op("aten.relu.default", y, z)
			y = z
		}
		return quantize1(u, y, qo, outShape...)
	}
	// conv adds a q8ta convolution of in (qparams qi) with oc output
	// channels, a k×k kernel over icPG input channels per group.
	conv := func(op string, in pair, qi, qo QParams, ic, oc, k, stride, pad, groups int64, relu bool, inShape []int64, outShape ...int64) pair {
		icPG := ic / groups
		wq, ws, sc, bias, wf, bf := quantWeights(b, r, oc, icPG*k*k, 0.1)
		// The exporter's layouts (patterns/quantized_convolution.py): conv
		// and pw permute torch's [OC, IC_pg, KH, KW] to [OC, KH·KW·IC_pg]
		// (last dim padded to 4); dw keeps [KH, KW, C].
		var wid int32
		if op == "et_vk.q8ta_conv2d_dw.default" {
			data := make([]byte, k*k*oc)
			for o := int64(0); o < oc; o++ {
				for t := int64(0); t < k*k; t++ {
					data[t*oc+o] = byte(wq[o*k*k+t])
				}
			}
			wid, _ = b.NamedConst(i8, dims(k, k, oc), data)
		} else {
			cols := k * k * icPG
			ld := (cols + 3) / 4 * 4
			data := make([]byte, oc*ld)
			for o := int64(0); o < oc; o++ {
				for i := int64(0); i < icPG; i++ {
					for t := int64(0); t < k*k; t++ {
						data[o*ld+t*icPG+i] = byte(wq[(o*icPG+i)*k*k+t])
					}
				}
			}
			wid, _ = b.NamedConst(i8, dims(oc, ld), data)
		}
		act := "none"
		if relu {
			act = "relu"
		}
		out := b.Tensor(i8, dims(outShape...), -1)
		b.Op(op, in.b, b.Double(qi.Scale), b.Int(qi.ZeroPoint), wid, ws, sc, b.Double(qo.Scale), b.Int(qo.ZeroPoint), bias,
			b.IntList(k, k), b.IntList(stride, stride), b.IntList(pad, pad), b.IntList(1, 1), b.Int(groups), b.String(act), out)

		uw := weight(u, wf, oc, icPG, k, k)
		ub := weight(u, bf, oc)
		uo := floatOp(in.u, qi, qo, inShape, outShape, relu, func(x, y int32) {
			u.Op("aten.convolution.default", x, uw, ub, u.IntList(stride, stride), u.IntList(pad, pad), u.IntList(1, 1),
				u.Bool(false), u.IntList(0, 0), u.Int(groups), y)
		})
		return pair{out, uo}
	}

	inShape := []int64{n, cfg.C, h, w}
	var x, x0 pair
	if cfg.Int8IO {
		x = pair{b.Tensor(i8, dims(inShape...), -1), u.Tensor(i8, dims(inShape...), -1)}
		x0 = x
	} else {
		x = pair{b.Tensor(f, dims(inShape...), -1), u.Tensor(f, dims(inShape...), -1)}
		x0 = quantize(x, qIn, inShape...)
	}
	tag(x0.b, packedConv2D)
	s1 := []int64{n, cfg.C1, h, w}
	a1 := conv("et_vk.q8ta_conv2d.default", x0, qIn, q1, cfg.C, cfg.C1, 3, 1, 1, 1, true, inShape, s1...)
	s2 := []int64{n, cfg.C1, h / 2, w / 2}
	a2 := conv("et_vk.q8ta_conv2d_dw.default", a1, q1, q2, cfg.C1, cfg.C1, 3, 2, 1, cfg.C1, true, s1, s2...)
	tag(a1.b, packedConv2D)
	tag(a2.b, packed4W4C)
	s3 := []int64{n, cfg.C2, h / 2, w / 2}
	a3 := conv("et_vk.q8ta_conv2d_pw.default", a2, q2, q3, cfg.C1, cfg.C2, 1, 1, 0, 1, false, s2, s3...)
	a4 := pair{b.Tensor(i8, dims(s3...), -1), 0}
	b.Op("et_vk.q8ta_relu.default", a3.b, b.Double(q3.Scale), b.Int(q3.ZeroPoint), b.Double(q4.Scale), b.Int(q4.ZeroPoint), a4.b)
	a4.u = floatOp(a3.u, q3, q4, s3, s3, false, func(x, y int32) { u.Op("aten.relu.default", x, y) })

	// No int8 pooling op: the dq → avg_pool2d → q chain stays as it is.
	d4 := dequantize(a4, q4, s3...)
	s5 := []int64{n, cfg.C2, h / 4, w / 4}
	p := pair{b.Tensor(f, dims(s5...), -1), u.Tensor(f, dims(s5...), -1)}
	for _, g := range []struct {
		b      *serialization.Builder
		in, to int32
	}{{b, d4.b, p.b}, {u, d4.u, p.u}} {
		g.b.Op("aten.avg_pool2d.default", g.in, g.b.IntList(2, 2), g.b.IntList(2, 2), g.b.IntList(0, 0), g.b.Bool(false), g.b.Bool(true), g.b.Null(), g.to)
	}
	a5 := quantize(p, q5, s5...)
	feat := cfg.C2 * (h / 4) * (w / 4)
	flat := pair{b.Tensor(i8, dims(n, feat), -1), u.Tensor(i8, dims(n, feat), -1)}
	b.Op("aten.view_copy.default", a5.b, b.IntList(n, feat), flat.b)
	u.Op("aten.view_copy.default", a5.u, u.IntList(n, feat), flat.u)

	tag(flat.b, packed4H4W)
	wq, ws, sc, bias, wf, bf := quantWeights(b, r, cfg.Classes, feat, 0.1)
	wdata := make([]byte, len(wq))
	for i, v := range wq {
		wdata[i] = byte(v)
	}
	wl, _ := b.NamedConst(i8, dims(cfg.Classes, feat), wdata)
	linear := "et_vk.q8ta_linear.default"
	if n == 1 {
		linear = "et_vk.q8ta_linear_gemv.default"
	}
	logitsQ := pair{b.Tensor(i8, dims(n, cfg.Classes), -1), 0}
	b.Op(linear, flat.b, b.Double(q5.Scale), b.Int(q5.ZeroPoint), wl, ws, sc, b.Double(q6.Scale), b.Int(q6.ZeroPoint), bias,
		b.String("none"), logitsQ.b)
	uw, ub := weight(u, wf, cfg.Classes, feat), weight(u, bf, cfg.Classes)
	logitsQ.u = floatOp(flat.u, q5, q6, []int64{n, feat}, []int64{n, cfg.Classes}, false, func(x, y int32) {
		u.Op("aten.linear.default", x, uw, ub, y)
	})
	b.Inputs(x.b)
	u.Inputs(x.u)
	if cfg.Int8IO {
		b.Outputs(logitsQ.b)
		u.Outputs(logitsQ.u)
		return m
	}
	logits := dequantize(logitsQ, q6, n, cfg.Classes)
	b.Outputs(logits.b, logitsQ.b)
	u.Outputs(logits.u, logitsQ.u)
	return m
}

// quantWeights draws oc rows of fanIn float weights (N(0, 1/fanIn)) and a
// bias (N(0, biasStd²)), quantizes each row symmetrically to [−127, 127]
// with scale max|w|/127, and adds the exporter's companions: int32 row
// sums, float32 scales and bias, each zero-padded to a multiple of 4. It
// returns the codes (row-major [oc, fanIn], as int8 values), the ids, and
// the weights the codes stand for (code·scale, [oc, fanIn]) with the bias
// ([oc]), for the unfused graph.
func quantWeights(b *serialization.Builder, r *rng, oc, fanIn int64, biasStd float64) (codes []int8, sums, scales, bias int32, wdq, bvals []float32) {
	wf := r.normal(oc*fanIn, 1/math.Sqrt(float64(fanIn)))
	bf := r.normal(oc, biasStd)
	op := (oc + 3) / 4 * 4
	codes = make([]int8, oc*fanIn)
	wdq = make([]float32, oc*fanIn)
	sv := make([]float32, op)
	bv := make([]float32, op)
	st := reference.New(serialization.Int32, []int64{op})
	for o := int64(0); o < oc; o++ {
		var amax float64
		for _, v := range wf[o*fanIn : (o+1)*fanIn] {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		s := float32(amax / 127)
		sv[o], bv[o] = s, bf[o]
		for i := int64(0); i < fanIn; i++ {
			q := math.Max(-127, math.Min(127, math.RoundToEven(float64(wf[o*fanIn+i])/float64(s))))
			codes[o*fanIn+i] = int8(q)
			wdq[o*fanIn+i] = float32(q) * s
			st.V[o] += q
		}
	}
	sums, _ = b.NamedConst(serialization.Int32, dims(op), st.Encode())
	scales, _ = b.NamedConst(serialization.Float32, dims(op), f32bytes(sv))
	bias, _ = b.NamedConst(serialization.Float32, dims(op), f32bytes(bv))
	return codes, sums, scales, bias, wdq, bv[:oc]
}

// Input returns a deterministic random batch of images in [-1, 1).
func (m *QCNN) Input(seed uint64) []float32 {
	c := m.Cfg
	return newRNG(seed).uniform(c.N*c.C*c.H*c.W, -1, 1)
}

// QuantizeInput returns x quantized with InputQParams, the input of an
// Int8IO model: clamp(round(x·f32(1/scale)) + zero point, −128, 127).
func (m *QCNN) QuantizeInput(x []float32) []int8 {
	inv := float32(1 / m.InputQParams.Scale)
	out := make([]int8, len(x))
	for i, v := range x {
		q := math.RoundToEven(float64(v*inv)) + float64(m.InputQParams.ZeroPoint)
		out[i] = int8(math.Max(-128, math.Min(127, q)))
	}
	return out
}

// InputShape is the shape of the batch.
func (m *QCNN) InputShape() []int64 { c := m.Cfg; return []int64{c.N, c.C, c.H, c.W} }

// Reference runs the model on the reference interpreter: with float
// input x (Int8IO: its int8 codes xq), the logits and the int8 logits
// (Int8IO: the int8 logits).
func (m *QCNN) Reference(x []float32, xq []int8) ([]*reference.Tensor, error) {
	var in *reference.Tensor
	if m.Cfg.Int8IO {
		in = reference.New(serialization.Int8, m.InputShape())
		for i, v := range xq {
			in.V[i] = float64(v)
		}
	} else {
		in = reference.New(serialization.Float32, m.InputShape())
		for i, v := range x {
			in.V[i] = float64(v)
		}
	}
	return RunReference(m.B, []*reference.Tensor{in})
}

package ops

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Statically quantized int8 graphs (PT2E, quantized-format.md §12): the
// quantize/dequantize pair and the elementwise int8 ops, by
// shaders/q8ta.wgsl. An int8 tensor is flat row-major bytes on the device,
// four per u32 (little-endian), as every 1-byte dtype is stored; each
// invocation writes whole words. Scales are Double (or Int) values, zero
// points Int values.
//
// quantized_decomposed.quantize_per_tensor.default args:
//
//	[x float32, scale, zero_point, quant_min, quant_max, dtype (ignored), out INT8]
//
// q = clamp(round(x·f32(1/scale)) + zero_point, quant_min, quant_max): the
// reciprocal is taken in float64 and rounded to float32 as torch does, the
// product is one float32 multiply and round() is half to even. quant_min
// and quant_max are honoured (torch does; both ExecuTorch runtimes clamp
// to [−128, 127]) and must lie in [−128, 127].
//
// quantized_decomposed.dequantize_per_tensor.default args:
//
//	[q INT8, scale, zero_point, quant_min, quant_max, dtype, out_dtype (Null or ignored), out float32]
//
// x = f32(q − zero_point)·f32(scale), one float32 rounding. quant_min and
// quant_max only have to be Ints (torch does not clamp on dequantize).
//
// et_vk.q8ta_relu.default args: [x INT8, input_scale, input_zp, output_scale, output_zp, out INT8]
//
// et_vk.q8ta_add.default args: [a INT8, b INT8, a_scale, a_zp, b_scale, b_zp, output_scale, output_zp, alpha, out INT8]
//
//	a and b broadcast to the output (NumPy rules, as the Vulkan runtime's
//	q8ta_binary); alpha may be an Int value (deduplicated 1), or a String or
//	Null, read as 1 (as the Vulkan runtime does).
//
// et_vk.q8ta_pixel_shuffle.default args: [x INT8, input_scale, input_zp, output_inv_scale, output_zp, upscale_factor, out INT8]
//
//	arg 3 is the multiplier 1/output_scale itself, computed by the exporter.
//
// These three dequantize with v = f32(q − zp_in)·f32(s_in), apply the op in
// float32 (add: v_a + f32(alpha)·v_b) and requantize with
// clamp(round(v·inv_out) + zp_out, −128, 127), inv_out = f32(1/output_scale)
// (pixel shuffle: f32(output_inv_scale)), round half to even.
func init() {
	Register("quantized_decomposed.quantize_per_tensor.default", quantizePerTensorOp)
	Register("quantized_decomposed.dequantize_per_tensor.default", dequantizePerTensorOp)
	Register("et_vk.q8ta_relu.default", q8taReluOp)
	Register("et_vk.q8ta_add.default", q8taAddOp)
	Register("et_vk.q8ta_pixel_shuffle.default", q8taPixelShuffleOp)
}

const q8taWG = 64

// q8taShader is the template data of shaders/q8ta.wgsl.
type q8taShader struct {
	Kind      string // quantize, dequantize, relu, add, shuffle
	Broadcast bool   // add: a and b broadcast to the output
	WG        int
}

// q8taMaxRank is the most (coalesced) dims a broadcasting q8ta_add takes.
const q8taMaxRank = 8

// q8taParams is the Go twin of q8ta.wgsl's Params.
type q8taParams struct {
	numel                 uint32
	zpA, zpB, zpOut       int32
	sA, sB, alpha, invOut float32
	qmin, qmax            int32
	h, w, r               uint32
	// add with broadcasting: the output's dims innermost first and each
	// input's element strides along them (0 where broadcast).
	dims, sa, sb []uint32
}

func (q q8taParams) bytes() []byte {
	var p Params
	p.U32(q.numel).I32(q.zpA).I32(q.zpB).I32(q.zpOut)
	p.F32(q.sA).F32(q.sB).F32(q.alpha).F32(q.invOut)
	p.I32(q.qmin).I32(q.qmax).U32(q.h).U32(q.w)
	// zero (always 0: keep_rounded's opaque zero), then padding.
	p.U32(q.r).U32(uint32(len(q.dims))).U32(0).U32(0)
	p.U32s(q.dims, q8taMaxRank).U32s(q.sa, q8taMaxRank).U32s(q.sb, q8taMaxRank)
	return p.Bytes()
}

// q8taMaxElems bounds an int8 tensor's elements so that word indices
// times 4 fit the kernels' u32 arithmetic.
const q8taMaxElems = math.MaxUint32 - 3

// q8Scale reads a positive, finite scale at arg.
func q8Scale(b Builder, arg int, id int32) (float64, error) {
	s, err := b.Float(id)
	if err != nil {
		return 0, argErr(arg, err)
	}
	if !(s > 0) || math.IsInf(s, 0) || float32(s) == 0 || math.IsInf(float64(float32(1/s)), 0) {
		return 0, Errorf(arg, "scale %g is not a positive float32 with a finite reciprocal", s)
	}
	return s, nil
}

// q8ZeroPoint reads an int8 zero point at arg.
func q8ZeroPoint(b Builder, arg int, id int32) (int32, error) {
	z, err := b.Int(id)
	if err != nil {
		return 0, argErr(arg, err)
	}
	if z < -128 || z > 127 {
		return 0, Errorf(arg, "zero point %d is outside int8", z)
	}
	return int32(z), nil
}

// q8QParams reads a (scale, zero point) pair at args sa, sa+1.
func q8QParams(b Builder, args []int32, sa int) (float32, int32, error) {
	s, err := q8Scale(b, sa, args[sa])
	if err != nil {
		return 0, 0, err
	}
	z, err := q8ZeroPoint(b, sa+1, args[sa+1])
	if err != nil {
		return 0, 0, err
	}
	return float32(s), z, nil
}

// q8OutQParams reads an output (scale, zero point) pair and returns the
// float32 reciprocal of the scale with the zero point.
func q8OutQParams(b Builder, args []int32, sa int) (float32, int32, error) {
	s, err := q8Scale(b, sa, args[sa])
	if err != nil {
		return 0, 0, err
	}
	z, err := q8ZeroPoint(b, sa+1, args[sa+1])
	if err != nil {
		return 0, 0, err
	}
	return float32(1 / s), z, nil
}

// q8Input returns tensor arg of dtype dt with at most q8taMaxElems elements.
func q8Input(b Builder, arg int, id int32, dt serialization.DataType) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	if t.DType != dt {
		return Tensor{}, Errorf(arg, "input is %v, want %v", t.DType, dt)
	}
	if t.Numel > q8taMaxElems {
		return Tensor{}, Errorf(arg, "%d elements exceed the kernels' 32-bit indexing", t.Numel)
	}
	return t, nil
}

// q8Dispatch records one q8ta.wgsl dispatch, one invocation per output
// word of numel elements.
func q8Dispatch(b Builder, kind string, inputs []int32, out int32, p q8taParams, numel int64) error {
	if numel == 0 {
		return nil
	}
	sh := q8taShader{Kind: kind, Broadcast: len(p.dims) > 0, WG: q8taWG}
	k, err := shaders.Render("q8ta.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), q8taWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64((numel+3)/4), q8taWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	p.numel = uint32(numel)
	if err := b.Dispatch(k, inputs, []int32{out}, p.bytes(), grid); err != nil {
		return fmt.Errorf("ops: q8ta %s: %w", kind, err)
	}
	return nil
}

// q8Range reads quant_min and quant_max (args lo, lo+1), which must be
// Ints with −128 ≤ quant_min ≤ quant_max ≤ 127.
func q8Range(b Builder, args []int32, lo int) (int32, int32, error) {
	qmin, err := b.Int(args[lo])
	if err != nil {
		return 0, 0, argErr(lo, err)
	}
	qmax, err := b.Int(args[lo+1])
	if err != nil {
		return 0, 0, argErr(lo+1, err)
	}
	if qmin < -128 || qmax > 127 || qmin > qmax {
		return 0, 0, Errorf(lo, "quant range [%d, %d] is not inside int8's [-128, 127]", qmin, qmax)
	}
	return int32(qmin), int32(qmax), nil
}

func quantizePerTensorOp(b Builder, args []int32) error {
	if len(args) != 7 {
		return Errorf(-1, "want 7 args [input, scale, zero_point, quant_min, quant_max, dtype, out], have %d", len(args))
	}
	x, err := q8Input(b, 0, args[0], serialization.Float32)
	if err != nil {
		return err
	}
	inv, zp, err := q8OutQParams(b, args, 1)
	if err != nil {
		return err
	}
	qmin, qmax, err := q8Range(b, args, 3)
	if err != nil {
		return err
	}
	if _, err := Output(b, 6, args[6], serialization.Int8, x.Dims); err != nil {
		return err
	}
	return q8Dispatch(b, "quantize", args[:1], args[6], q8taParams{zpOut: zp, invOut: inv, qmin: qmin, qmax: qmax}, x.Numel)
}

func dequantizePerTensorOp(b Builder, args []int32) error {
	if len(args) != 8 {
		return Errorf(-1, "want 8 args [input, scale, zero_point, quant_min, quant_max, dtype, out_dtype, out], have %d", len(args))
	}
	q, err := q8Input(b, 0, args[0], serialization.Int8)
	if err != nil {
		return err
	}
	s, zp, err := q8QParams(b, args, 1)
	if err != nil {
		return err
	}
	if _, _, err := q8Range(b, args, 3); err != nil {
		return err
	}
	if _, err := Output(b, 7, args[7], serialization.Float32, q.Dims); err != nil {
		return err
	}
	return q8Dispatch(b, "dequantize", args[:1], args[7], q8taParams{zpA: zp, sA: s}, q.Numel)
}

func q8taReluOp(b Builder, args []int32) error {
	if len(args) != 6 {
		return Errorf(-1, "want 6 args [input, input_scale, input_zero_point, output_scale, output_zero_point, out], have %d", len(args))
	}
	x, err := q8Input(b, 0, args[0], serialization.Int8)
	if err != nil {
		return err
	}
	s, zp, err := q8QParams(b, args, 1)
	if err != nil {
		return err
	}
	inv, zo, err := q8OutQParams(b, args, 3)
	if err != nil {
		return err
	}
	if _, err := Output(b, 5, args[5], serialization.Int8, x.Dims); err != nil {
		return err
	}
	return q8Dispatch(b, "relu", args[:1], args[5], q8taParams{zpA: zp, sA: s, zpOut: zo, invOut: inv, qmin: -128, qmax: 127}, x.Numel)
}

func q8taAddOp(b Builder, args []int32) error {
	if len(args) != 10 {
		return Errorf(-1, "want 10 args [a, b, a_scale, a_zero_point, b_scale, b_zero_point, output_scale, output_zero_point, alpha, out], have %d", len(args))
	}
	x, err := q8Input(b, 0, args[0], serialization.Int8)
	if err != nil {
		return err
	}
	y, err := q8Input(b, 1, args[1], serialization.Int8)
	if err != nil {
		return err
	}
	outDims, ok := BroadcastShape(x.Dims, y.Dims)
	if !ok {
		return Errorf(1, "dims %v do not broadcast with a's %v", y.Dims, x.Dims)
	}
	sa, za, err := q8QParams(b, args, 2)
	if err != nil {
		return err
	}
	sb, zb, err := q8QParams(b, args, 4)
	if err != nil {
		return err
	}
	inv, zo, err := q8OutQParams(b, args, 6)
	if err != nil {
		return err
	}
	// alpha: a Double or Int; a String (some exports pass an unused one
	// here) or Null means 1, as the Vulkan runtime reads it.
	alpha := 1.0
	if k := b.Kind(args[8]); k != serialization.KindString && !b.IsNull(args[8]) {
		if alpha, err = b.Float(args[8]); err != nil {
			return argErr(8, err)
		}
	}
	if math.IsNaN(alpha) || math.IsInf(alpha, 0) {
		return Errorf(8, "alpha %g is not finite", alpha)
	}
	out, err := Output(b, 9, args[9], serialization.Int8, outDims)
	if err != nil {
		return err
	}
	if out.Numel > q8taMaxElems {
		return Errorf(9, "%d elements exceed the kernels' 32-bit indexing", out.Numel)
	}
	p := q8taParams{zpA: za, sA: sa, zpB: zb, sB: sb, alpha: float32(alpha), zpOut: zo, invOut: inv, qmin: -128, qmax: 127}
	if !sameDims(x.Dims, y.Dims) {
		dims, stA, stB := coalesceBroadcast(outDims, x.Dims, y.Dims)
		if len(dims) > q8taMaxRank {
			return Errorf(1, "broadcasting %v with %v needs %d dims, over %d", x.Dims, y.Dims, len(dims), q8taMaxRank)
		}
		for i := range dims {
			p.dims = append(p.dims, uint32(dims[i]))
			p.sa = append(p.sa, uint32(stA[i]))
			p.sb = append(p.sb, uint32(stB[i]))
		}
	}
	return q8Dispatch(b, "add", args[:2], args[9], p, out.Numel)
}

// sameDims reports whether a and b are the same shape.
func sameDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func q8taPixelShuffleOp(b Builder, args []int32) error {
	if len(args) != 7 {
		return Errorf(-1, "want 7 args [input, input_scale, input_zero_point, output_inv_scale, output_zero_point, upscale_factor, out], have %d", len(args))
	}
	x, err := q8Input(b, 0, args[0], serialization.Int8)
	if err != nil {
		return err
	}
	s, zp, err := q8QParams(b, args, 1)
	if err != nil {
		return err
	}
	inv, err := b.Float(args[3])
	if err != nil {
		return argErr(3, err)
	}
	if !(inv > 0) || math.IsInf(float64(float32(inv)), 0) {
		return Errorf(3, "output_inv_scale %g is not a positive finite float32", inv)
	}
	zo, err := q8ZeroPoint(b, 4, args[4])
	if err != nil {
		return err
	}
	r, err := b.Int(args[5])
	if err != nil {
		return argErr(5, err)
	}
	rank := len(x.Dims)
	if rank < 3 {
		return Errorf(0, "dims %v: want at least 3", x.Dims)
	}
	if r < 1 || r > math.MaxInt16 {
		return Errorf(5, "upscale_factor %d must be positive", r)
	}
	c := x.Dims[rank-3]
	if c%(r*r) != 0 {
		return Errorf(0, "%d channels are not divisible by upscale_factor² = %d", c, r*r)
	}
	h, w := x.Dims[rank-2], x.Dims[rank-1]
	dims := append(append([]int64(nil), x.Dims[:rank-3]...), c/(r*r), h*r, w*r)
	if _, err := Output(b, 6, args[6], serialization.Int8, dims); err != nil {
		return err
	}
	p := q8taParams{zpA: zp, sA: s, zpOut: zo, invOut: float32(inv), qmin: -128, qmax: 127, h: uint32(h), w: uint32(w), r: uint32(r)}
	return q8Dispatch(b, "shuffle", args[:1], args[6], p, x.Numel)
}

package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Statically quantized linears (PT2E, quantized-format.md §3.7, §12), by
// shaders/q8ta_linear.wgsl.
//
// et_vk.linear_q8ta_q8csw.default args:
//
//	[x, input_scale, input_zero_point, weights INT8 [N, K], weight_sums INT32 [≥N],
//	 weight_scales float32 [≥N], bias Null | float32 [≥N], out float32]
//
// x is int8 (the output of a quantize_per_tensor, as the exporter's pattern
// and the WebGPU runtime read it) or float32 (as the Vulkan runtime reads
// it), which is first quantized with clamp(round(x·f32(1/input_scale)) +
// input_zero_point, −128, 127), round half to even. out[m, n] =
// f32(acc)·f32(s_in)·s_w[n] + bias[n] in float32, no requantization.
//
// et_vk.q8ta_linear.default and et_vk.q8ta_linear_gemv.default (the
// exporter's name when M == 1; the same op here) args:
//
//	[x INT8, input_scale, input_zero_point, weights INT8 [N, K], weight_sums INT32 [≥N],
//	 weight_scales float32 [≥N], output_scale, output_zero_point, bias Null | float32 [≥N],
//	 activation String ("none" | "relu"), out INT8]
//
// v = f32(acc)·f32(s_in)·s_w[n] (+ bias[n]), relu after the bias, then
// q = clamp(round(v·f32(1/output_scale)) + output_zero_point, −128, 127),
// round half to even.
//
// The accumulator is integer: acc[m, n] = Σ_k xq[m, k]·w[n, k] −
// zp_in·weight_sums[n], i.e. Σ_k (xq − zp_in)·w when the sums are the
// exporter's row sums of the weights (padded to a multiple of 4). K is x's
// last dim, a multiple of 4 (the exporter matches only those) and
// weights.dims[1] == K; scales, sums and bias may be padded past N. The
// output keeps x's leading dims (or [M, N] when serialized 2-D).
func init() {
	Register("et_vk.linear_q8ta_q8csw.default", linearQ8taQ8cswOp)
	Register("et_vk.q8ta_linear.default", q8taLinearOp)
	Register("et_vk.q8ta_linear_gemv.default", q8taLinearOp)
}

// q8LinearMaxWords caps K/4, the K loop's trips per invocation, below
// llvmpipe's 65535 loop back-edges per invocation.
const q8LinearMaxWords = 60000

// q8LinearRows is the row tile: rows sharing each decoded weight word.
// M = 64, K = N = 512 against the float32 linear in the same runs (busy
// host, load 6 on 2 vCPUs): 4 rows 0.28–0.76x (one earlier run 1.79x),
// 8 rows 0.85–1.43x.
const q8LinearRows = 8

// q8LinearShader is the template data of shaders/q8ta_linear.wgsl.
type q8LinearShader struct {
	FloatIn, FloatOut, Bias, Word bool
	Rows                          []int
	OutBinding, ParamsBinding     int
	WG                            int
}

// q8LinearCall is one int8 linear to record.
type q8LinearCall struct {
	x, w, sums, scales, bias, out int32
	m, n, k                       int64
	sIn, invIn, invOut            float32
	zpIn, zpOut                   int32
	relu                          bool
	sh                            q8LinearShader
}

// q8ChannelConsts checks weight sums, weight scales and (unless Null)
// bias for n channels at args sa, sa+1 and ba: INT32, float32 and float32
// 1-D tensors of at least n elements.
func q8ChannelConsts(b Builder, args []int32, sa, ba int, n int64) (bias int32, err error) {
	for i, dt := range []serialization.DataType{serialization.Int32, serialization.Float32} {
		t, err := b.Tensor(args[sa+i])
		if err != nil {
			return 0, argErr(sa+i, err)
		}
		if t.DType != dt || t.Numel < n {
			return 0, Errorf(sa+i, "is %v %v, want %v with at least %d elements (one per output channel)", t.DType, t.Dims, dt, n)
		}
	}
	if b.IsNull(args[ba]) {
		return -1, nil
	}
	t, err := b.Tensor(args[ba])
	if err != nil {
		return 0, argErr(ba, err)
	}
	if t.DType != serialization.Float32 || t.Numel < n {
		return 0, Errorf(ba, "bias is %v %v, want float32 with at least %d elements", t.DType, t.Dims, n)
	}
	return args[ba], nil
}

// q8Activation reads the activation String: "none" or "relu".
func q8Activation(b Builder, arg int, id int32) (bool, error) {
	s, err := b.String(id)
	if err != nil {
		return false, argErr(arg, err)
	}
	switch s {
	case "none":
		return false, nil
	case "relu":
		return true, nil
	}
	return false, Errorf(arg, "activation %q: want \"none\" or \"relu\"", s)
}

// q8LinearArgs reads x, its qparams and the weights shared by the linears.
func q8LinearArgs(b Builder, args []int32, floatOK bool) (Tensor, q8LinearCall, error) {
	x, err := b.Tensor(args[0])
	if err != nil {
		return Tensor{}, q8LinearCall{}, argErr(0, err)
	}
	if x.DType != serialization.Int8 && !(floatOK && x.DType == serialization.Float32) {
		return Tensor{}, q8LinearCall{}, Errorf(0, "input is %v, want int8%s", x.DType, map[bool]string{true: " or float32", false: ""}[floatOK])
	}
	if len(x.Dims) == 0 {
		return Tensor{}, q8LinearCall{}, Errorf(0, "input must have at least one dim")
	}
	k := x.Dims[len(x.Dims)-1]
	if k%4 != 0 {
		return Tensor{}, q8LinearCall{}, Errorf(0, "input's last dim %d is not a multiple of 4", k)
	}
	if k/4 > q8LinearMaxWords {
		return Tensor{}, q8LinearCall{}, Errorf(0, "input's last dim %d exceeds %d", k, 4*q8LinearMaxWords)
	}
	s, zp, err := q8QParams(b, args, 1)
	if err != nil {
		return Tensor{}, q8LinearCall{}, err
	}
	w, err := qlinearWeight(b, 3, args[3], serialization.Int8)
	if err != nil {
		return Tensor{}, q8LinearCall{}, err
	}
	if w.Dims[1] != k {
		return Tensor{}, q8LinearCall{}, Errorf(3, "weights dims %v, want [N, %d]", w.Dims, k)
	}
	c := q8LinearCall{x: args[0], w: args[3], sums: args[4], scales: args[5],
		m: NumelOf(x.Dims[:len(x.Dims)-1]), n: w.Dims[0], k: k, sIn: s, zpIn: zp}
	c.sh.FloatIn = x.DType == serialization.Float32
	in, _ := b.Float(args[1]) // checked by q8QParams
	c.invIn = float32(1 / in)
	return x, c, nil
}

func linearQ8taQ8cswOp(b Builder, args []int32) error {
	if len(args) != 8 {
		return Errorf(-1, "want 8 args [input, input_scale, input_zero_point, weights, weight_sums, weight_scales, bias, out], have %d", len(args))
	}
	x, c, err := q8LinearArgs(b, args, true)
	if err != nil {
		return err
	}
	if c.bias, err = q8ChannelConsts(b, args, 4, 6, c.n); err != nil {
		return err
	}
	c.out = args[7]
	c.sh.FloatOut = true
	return recordQ8Linear(b, c, x, 7)
}

func q8taLinearOp(b Builder, args []int32) error {
	if len(args) != 11 {
		return Errorf(-1, "want 11 args [input, input_scale, input_zero_point, weights, weight_sums, weight_scales, output_scale, output_zero_point, bias, activation, out], have %d", len(args))
	}
	x, c, err := q8LinearArgs(b, args, false)
	if err != nil {
		return err
	}
	if c.bias, err = q8ChannelConsts(b, args, 4, 8, c.n); err != nil {
		return err
	}
	if c.invOut, c.zpOut, err = q8OutQParams(b, args, 6); err != nil {
		return err
	}
	if c.relu, err = q8Activation(b, 9, args[9]); err != nil {
		return err
	}
	c.out = args[10]
	return recordQ8Linear(b, c, x, 10)
}

// recordQ8Linear sets the output's shape and records c's dispatch.
func recordQ8Linear(b Builder, c q8LinearCall, x Tensor, outArg int) error {
	dims, err := qlinearOutDims(b, outArg, c.out, x, c.m, c.n)
	if err != nil {
		return err
	}
	dt := serialization.Int8
	if c.sh.FloatOut {
		dt = serialization.Float32
	}
	if _, err := Output(b, outArg, c.out, dt, dims); err != nil {
		return err
	}
	if c.m == 0 || c.n == 0 {
		return nil
	}
	if c.m*c.n > matmulMaxElems || c.m*c.k > matmulMaxElems {
		return Errorf(-1, "M=%d K=%d N=%d is too large", c.m, c.k, c.n)
	}
	return runLinear(b, &linearCall{format: formatQ8ta, q8: c, half: -1, transposed: -1})
}

// recordQ8LinearKernel records c with shaders/q8ta_linear.wgsl (its own
// activation and requantization, no fused epilogue).
func recordQ8LinearKernel(b Builder, c q8LinearCall) error {
	sh := c.sh
	sh.Bias = c.bias >= 0
	sh.WG = q8taWG
	sh.Word = !sh.FloatOut && c.n%4 != 0
	rows := min(c.m, q8LinearRows)
	for i := 0; i < int(rows); i++ {
		sh.Rows = append(sh.Rows, i)
	}
	colBlocks := (c.n + 3) / 4
	invocations := colBlocks * ((c.m + rows - 1) / rows)
	if sh.Word {
		invocations = (c.m*c.n + 3) / 4
	}
	inputs := []int32{c.x, c.w, c.sums, c.scales}
	if sh.Bias {
		inputs = append(inputs, c.bias)
	}
	sh.OutBinding, sh.ParamsBinding = len(inputs), len(inputs)+1
	kern, err := shaders.Render("q8ta_linear.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	groups, err := Grid(uint64(invocations), uint32(sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var relu uint32
	if c.relu {
		relu = 1
	}
	var p Params
	p.U32(uint32(c.m)).U32(uint32(c.n)).U32(uint32(c.k / 4)).U32(uint32(colBlocks))
	p.I32(c.zpIn).F32(c.sIn).F32(c.invIn).F32(c.invOut)
	// zero (always 0: keep_rounded's opaque zero), then padding.
	p.I32(c.zpOut).U32(relu).U32(0).U32(0)
	if err := b.Dispatch(kern, inputs, []int32{c.out}, p.Bytes(), groups); err != nil {
		return fmt.Errorf("ops: q8ta linear: %w", err)
	}
	return nil
}

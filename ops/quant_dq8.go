package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// The 8da4w activation path of export_llama (-qmode 8da4w): per-row int8
// activation qparams, then a 4-bit group-quantized linear over the
// quantized activations.
//
// torchao.choose_qparams_affine.default args (10, 11 or 14, by torchao
// version; the output is always the last):
//
//	[input, mapping_type, block_size, target_dtype, quant_min, quant_max, eps,
//	 scale_dtype, zero_point_dtype, (keepdim | 4 older args), out ValueList [scale, zero_point]]
//
// Only what the Vulkan delegate runs: mapping "ASYMMETRIC", per-row block
// size [1, …, 1, K], float32 input, float32 scale and int8 zero point of
// the input's leading dims (a trailing 1 with keepdim), the per-row rule of
// shaders/qparams.wgsl.
//
// et_vk.linear_dq8ca_q4gsw.default args:
//
//	[input, input_scale, input_zero_point, weight, weight_sums, weight_scales, group_size, bias, out]
//
// out[m, n] = s[m]·Σ_k (xq[m,k] − z[m])·W[n, k] + bias[n], xq = clamp(round(x/s[m]) + z[m], −128, 127),
// W as in linear_q4gsw. The weight sums are not needed by this form.
func init() {
	Register("torchao.choose_qparams_affine.default", chooseQParamsOp)
	registerLinear(Op{Name: "et_vk.linear_dq8ca_q4gsw.default"}, dq8caCall)
}

// qparamsShader is the template data of shaders/qparams.wgsl.
// qparamsShader is qparams.wgsl's data: HalfScale rounds the scales to
// float16 (a FLOAT16 scale output, as the reference holds it).
type qparamsShader struct {
	WG        int
	HalfScale bool
}

func chooseQParamsOp(b Builder, args []int32) error {
	if n := len(args); n != 10 && n != 11 && n != 14 {
		return Errorf(-1, "want 10, 11 or 14 args [input, mapping_type, block_size, target_dtype, quant_min, quant_max, ..., out], have %d", n)
	}
	x, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	if x.DType != serialization.Float32 || len(x.Dims) == 0 {
		return Errorf(0, "input is %v %v, want float32 of at least one dim", x.DType, x.Dims)
	}
	mt, err := b.String(args[1])
	if err != nil {
		return argErr(1, err)
	}
	if mt != "ASYMMETRIC" {
		return Errorf(1, "mapping_type %q: only ASYMMETRIC is supported", mt)
	}
	bs, err := b.IntList(args[2])
	if err != nil {
		return argErr(2, err)
	}
	r := len(x.Dims)
	k := x.Dims[r-1]
	perRow := len(bs) == r && bs[r-1] == k
	for i := 0; perRow && i < r-1; i++ {
		perRow = bs[i] == 1
	}
	if !perRow {
		return Errorf(2, "block_size %v: only per-row blocks [1, …, 1, %d] are supported", bs, k)
	}
	if k%4 != 0 {
		return Errorf(0, "row length %d is not a multiple of 4", k)
	}
	qmin, qmax := int64(-128), int64(127)
	if !b.IsNull(args[4]) {
		if qmin, err = b.Int(args[4]); err != nil {
			return argErr(4, err)
		}
	}
	if !b.IsNull(args[5]) {
		if qmax, err = b.Int(args[5]); err != nil {
			return argErr(5, err)
		}
	}
	if qmin < -128 || qmax > 127 || qmin >= qmax {
		return Errorf(4, "quant range [%d, %d] is not inside int8's", qmin, qmax)
	}
	outArg := len(args) - 1
	outs, err := b.ValueList(args[outArg])
	if err != nil {
		return argErr(outArg, err)
	}
	if len(outs) != 2 {
		return Errorf(outArg, "want [scale, zero_point], have %d values", len(outs))
	}
	rows := NumelOf(x.Dims[:r-1])
	for i, dt := range []serialization.DataType{serialization.Float32, serialization.Int8} {
		t, err := b.Tensor(outs[i])
		if err != nil {
			return argErr(outArg, err)
		}
		dims := append([]int64(nil), x.Dims[:r-1]...)
		if len(t.MaxDims) == r {
			dims = append(dims, 1)
		}
		if _, err := Output(b, outArg, outs[i], dt, dims); err != nil {
			return err
		}
	}
	if rows == 0 {
		return nil
	}
	if k/4*4 > qlinearMaxSteps*2 {
		return Errorf(0, "row length %d is too long", k)
	}
	sh := qparamsShader{WG: 64}
	if st, err := b.Tensor(outs[0]); err == nil {
		sh.HalfScale = st.Half
	}
	kern, err := shaders.Render("qparams.wgsl", sh, "main", shaders.Layout(1, 2, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	groups, err := Grid(uint64((rows+3)/4), uint32(sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var p Params
	p.U32(uint32(rows)).U32(uint32(k / 4)).I32(int32(qmin)).I32(int32(qmax))
	if err := b.Dispatch(kern, []int32{args[0]}, outs, p.Bytes(), groups); err != nil {
		return fmt.Errorf("ops: choose_qparams_affine: %w", err)
	}
	return nil
}

func dq8caCall(b Builder, args []int32) (*linearCall, error) {
	if len(args) != 9 {
		return nil, Errorf(-1, "want 9 args [input, input_scale, input_zero_point, weight, weight_sums, weight_scales, group_size, bias, out], have %d", len(args))
	}
	x, c, err := q4gswArgs(b, args, 0, 3, 5, 6, 7)
	if err != nil {
		return nil, err
	}
	for i, dt := range map[int]serialization.DataType{1: serialization.Float32, 2: serialization.Int8} {
		t, err := b.Tensor(args[i])
		if err != nil {
			return nil, argErr(i, err)
		}
		if t.DType != dt || t.Numel != c.m {
			return nil, Errorf(i, "is %v %v, want %v with %d elements (one per input row)", t.DType, t.Dims, dt, c.m)
		}
	}
	ws, err := b.Tensor(args[4])
	if err != nil {
		return nil, argErr(4, err)
	}
	if ws.DType != serialization.Int32 {
		return nil, Errorf(4, "weight sums are %v, want int32", ws.DType)
	}
	c.xs, c.xz, c.out = args[1], args[2], args[8]
	c.sh.DQ8 = true
	return qlinearPrepare(b, c, x, 8)
}

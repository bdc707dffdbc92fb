package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Statically quantized 2-D convolutions (PT2E, quantized-format.md §12), by
// shaders/q8ta_conv.wgsl.
//
// et_vk.q8ta_conv2d.default, et_vk.q8ta_conv2d_pw.default and
// et_vk.q8ta_conv2d_dw.default args:
//
//	[x INT8 [N, IC, H, W], input_scale, input_zero_point, weights INT8, weight_sums INT32,
//	 weight_scales float32 [≥OC], output_scale, output_zero_point, bias Null | float32 [≥OC],
//	 kernel_size [KH, KW], stride, padding, dilation, groups, activation ("none" | "relu"), out INT8]
//
// et_vk.q8ta_conv2d_transposed.default args: the same with output_padding
// after padding: [..., kernel_size, stride, padding, output_padding,
// dilation, groups, activation, out].
//
// Weights as the exporter writes them (patterns/quantized_convolution.py):
//
//	conv2d, pw:  [OC, ≥KH·KW·IC_pg] (zero-padded to a multiple of 4), torch's
//	             w[oc, ic, kh, kw] at column (kh·KW + kw)·IC_pg + ic;
//	dw:          [KH, KW, Cp], w[c, 0, kh, kw] at (kh·KW + kw)·Cp + c (Cp ≥ C, the
//	             last dim zero-padded); groups = C = IC = OC;
//	transposed:  [OC, ≥KH·KW·IC_pg], row oc = g·OC_pg + j holding
//	             ConvTranspose2d's w[g·IC_pg + ic, j, kh, kw] at column
//	             (kh·KW + kw)·IC_pg + ic (no kernel flip).
//
// acc = Σ (xq − zp_in)·w over the in-range taps (padding contributes real
// 0), in int32; the weight sums are checked (INT32, ≥ OC) but not needed
// by this form. Then v = f32(acc)·f32(s_in)·s_w[oc] (+ bias[oc]), relu after
// the bias, q = clamp(round(v·f32(1/output_scale)) + output_zero_point,
// −128, 127), round half to even. The output shape is torch's:
// (H + 2p − d(K−1) − 1)/s + 1, transposed (H − 1)s − 2p + d(K−1) + op + 1.
// The pw and conv2d names run the same kernel (pw is conv2d with a 1×1
// kernel, stride 1, no padding). Each invocation walks every tap of its
// output (four outputs at once when OW % 4 == 0; 8 or 4 channels × 4
// columns with 4 input channels per weight word when also OC_pg, IC_pg and
// the weight rows are multiples of 4), so KH·KW·IC_pg is capped
// (q8ConvMaxTrips) below llvmpipe's loop limit; the int32 accumulator is
// exact well past that cap.
func init() {
	Register("et_vk.q8ta_conv2d.default", func(b Builder, a []int32) error { return q8ConvOp(b, a, false, false) })
	Register("et_vk.q8ta_conv2d_pw.default", func(b Builder, a []int32) error { return q8ConvOp(b, a, false, false) })
	Register("et_vk.q8ta_conv2d_dw.default", func(b Builder, a []int32) error { return q8ConvOp(b, a, true, false) })
	Register("et_vk.q8ta_conv2d_transposed.default", func(b Builder, a []int32) error { return q8ConvOp(b, a, false, true) })
}

// q8ConvTileOC is the output channels per invocation of the tiled kernel
// (4 when OC_pg is not a multiple of it). Measured on lavapipe, 3×3
// 64→64 28², against the float32 packed conv in the same runs: one channel
// 0.20x, 4 channels 0.37–0.75x, 8 channels 0.94–1.09x, and loading a
// tile's 4 columns as one unaligned word when stride_w is 1 (Stride1)
// 1.01–2.41x (median of 4 1.67; 1×1 64→128: 1.02–1.54x) (noisy host).
const q8ConvTileOC = 8

// q8ConvMaxTrips caps the loop trips of one invocation.
const q8ConvMaxTrips = 60000

// q8ConvShader is the template data of shaders/q8ta_conv.wgsl.
type q8ConvShader struct {
	DW, Transposed, Aligned, Bias bool
	// Tiled: len(OCs) output channels × 4 columns per invocation
	// (TileElems outputs), weights read a word (4 input channels) at a time.
	Tiled     bool
	Stride1   bool // stride_w 1, not transposed: 4 columns are 4 consecutive bytes
	OCs       []int
	TileElems int
	WG        int
}

// q8Pair reads an IntList of two positive (nonneg) values at arg.
func q8Pair(b Builder, arg int, id int32, min int64) ([2]int64, error) {
	l, err := b.IntList(id)
	if err != nil {
		return [2]int64{}, argErr(arg, err)
	}
	if len(l) == 1 {
		l = []int64{l[0], l[0]}
	}
	if len(l) != 2 || l[0] < min || l[1] < min || l[0] > 1<<15 || l[1] > 1<<15 {
		return [2]int64{}, Errorf(arg, "%v: want two values in [%d, 32768]", l, min)
	}
	return [2]int64{l[0], l[1]}, nil
}

func q8ConvOp(b Builder, args []int32, dw, transposed bool) error {
	want := 16
	layout := "[input, input_scale, input_zero_point, weights, weight_sums, weight_scales, output_scale, output_zero_point, bias, kernel_size, stride, padding, dilation, groups, activation, out]"
	if transposed {
		want = 17
		layout = "[input, input_scale, input_zero_point, weights, weight_sums, weight_scales, output_scale, output_zero_point, bias, kernel_size, stride, padding, output_padding, dilation, groups, activation, out]"
	}
	if len(args) != want {
		return Errorf(-1, "want %d args %s, have %d", want, layout, len(args))
	}
	x, err := q8Input(b, 0, args[0], serialization.Int8)
	if err != nil {
		return err
	}
	if len(x.Dims) != 4 {
		return Errorf(0, "dims %v: want [N, C, H, W]", x.Dims)
	}
	sIn, zpIn, err := q8QParams(b, args, 1)
	if err != nil {
		return err
	}
	invOut, zpOut, err := q8OutQParams(b, args, 6)
	if err != nil {
		return err
	}
	ks, err := q8Pair(b, 9, args[9], 1)
	if err != nil {
		return err
	}
	stride, err := q8Pair(b, 10, args[10], 1)
	if err != nil {
		return err
	}
	pad, err := q8Pair(b, 11, args[11], 0)
	if err != nil {
		return err
	}
	opad := [2]int64{}
	di, gi, ai := 12, 13, 14
	if transposed {
		if opad, err = q8Pair(b, 12, args[12], 0); err != nil {
			return err
		}
		di, gi, ai = 13, 14, 15
	}
	dil, err := q8Pair(b, di, args[di], 1)
	if err != nil {
		return err
	}
	groups, err := b.Int(args[gi])
	if err != nil {
		return argErr(gi, err)
	}
	relu, err := q8Activation(b, ai, args[ai])
	if err != nil {
		return err
	}
	n, ic, h, wd := x.Dims[0], x.Dims[1], x.Dims[2], x.Dims[3]
	if groups < 1 || ic%groups != 0 {
		return Errorf(gi, "groups %d does not divide %d input channels", groups, ic)
	}
	icPG := ic / groups
	w, err := b.Tensor(args[3])
	if err != nil {
		return argErr(3, err)
	}
	if w.DType != serialization.Int8 {
		return Errorf(3, "weights are %v, want int8", w.DType)
	}
	var oc, ld int64
	if dw {
		if len(w.Dims) != 3 || w.Dims[0] != ks[0] || w.Dims[1] != ks[1] {
			return Errorf(3, "depthwise weights dims %v, want [%d, %d, C]", w.Dims, ks[0], ks[1])
		}
		// C channels, the last dim possibly zero-padded past C (the
		// exporter pads it to a multiple of 4, a no-op when it asserts C %
		// 4 == 0).
		oc, ld = ic, w.Dims[2]
		if ld < ic || groups != ic {
			return Errorf(3, "depthwise weights dims %v with groups %d for %d input channels: want groups = C and [KH, KW, ≥C]", w.Dims, groups, ic)
		}
	} else {
		if len(w.Dims) != 2 || w.Dims[1] < ks[0]*ks[1]*icPG {
			return Errorf(3, "weights dims %v, want [OC, ≥%d] (KH·KW·IC/groups)", w.Dims, ks[0]*ks[1]*icPG)
		}
		oc, ld = w.Dims[0], w.Dims[1]
		if oc%groups != 0 {
			return Errorf(3, "%d output channels are not divisible by groups %d", oc, groups)
		}
	}
	bias, err := q8ChannelConsts(b, args, 4, 8, oc)
	if err != nil {
		return err
	}
	var oh, ow int64
	if transposed {
		if opad[0] >= max(stride[0], dil[0]) || opad[1] >= max(stride[1], dil[1]) {
			return Errorf(12, "output_padding %v must be smaller than stride or dilation", opad)
		}
		oh = (h-1)*stride[0] - 2*pad[0] + dil[0]*(ks[0]-1) + opad[0] + 1
		ow = (wd-1)*stride[1] - 2*pad[1] + dil[1]*(ks[1]-1) + opad[1] + 1
	} else {
		oh = (h+2*pad[0]-dil[0]*(ks[0]-1)-1)/stride[0] + 1
		ow = (wd+2*pad[1]-dil[1]*(ks[1]-1)-1)/stride[1] + 1
	}
	if h > 0 && wd > 0 && (oh < 1 || ow < 1) {
		return Errorf(9, "kernel %v with padding %v does not fit the %d×%d input", ks, pad, h, wd)
	}
	oh, ow = max(oh, 0), max(ow, 0)
	out, err := Output(b, want-1, args[want-1], serialization.Int8, []int64{n, oc, oh, ow})
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	if out.Numel > q8taMaxElems {
		return Errorf(want-1, "%d elements exceed the kernels' 32-bit indexing", out.Numel)
	}
	sh := q8ConvShader{DW: dw, Transposed: transposed, Aligned: ow%4 == 0, Bias: bias >= 0, WG: q8taWG}
	sh.Tiled = sh.Aligned && !dw && !transposed && icPG%4 == 0 && (oc/groups)%4 == 0 && ld%4 == 0
	if sh.Tiled {
		oct := q8ConvTileOC
		if (oc/groups)%int64(oct) != 0 {
			oct = 4
		}
		for t := range oct {
			sh.OCs = append(sh.OCs, t)
		}
		sh.TileElems = 4 * oct
	}
	// An unaligned invocation's lanes 1-3 are masked, so lane 0 reading
	// the first of 4 consecutive bytes holds there too.
	sh.Stride1 = stride[1] == 1 && !transposed
	trips := ks[0] * (1 + ks[1]*(1+icPG))
	invocations := (out.Numel + 3) / 4
	switch {
	case sh.Tiled:
		trips = ks[0] * (1 + ks[1]*(1+icPG/4*5))
		invocations = out.Numel / int64(sh.TileElems)
	case !sh.Aligned:
		trips = 4 * (trips + 1)
	}
	if trips > q8ConvMaxTrips {
		return Errorf(9, "kernel %v over %d input channels per group takes %d loop trips per invocation, over %d", ks, icPG, trips, q8ConvMaxTrips)
	}
	inputs := []int32{args[0], args[3], args[5]}
	if sh.Bias {
		inputs = append(inputs, bias)
	}
	kern, err := shaders.Render("q8ta_conv.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), q8taWG)
	if err != nil {
		return err
	}
	groupsGrid, err := Grid(uint64(invocations), q8taWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var r uint32
	if relu {
		r = 1
	}
	var p Params
	p.U32(uint32(n)).U32(uint32(ic)).U32(uint32(h)).U32(uint32(wd))
	p.U32(uint32(oc)).U32(uint32(oh)).U32(uint32(ow)).U32(uint32(ks[0]))
	p.U32(uint32(ks[1])).U32(uint32(stride[0])).U32(uint32(stride[1])).U32(uint32(pad[0]))
	p.U32(uint32(pad[1])).U32(uint32(dil[0])).U32(uint32(dil[1])).U32(uint32(ld))
	p.U32(uint32(icPG)).U32(uint32(oc / groups)).I32(zpIn).I32(zpOut)
	p.F32(sIn).F32(invOut).U32(r).U32(uint32(out.Numel))
	p.U32(0) // zero: keep_rounded's opaque zero (must be 0)
	if err := b.Dispatch(kern, inputs, []int32{args[want-1]}, p.Bytes(), groupsGrid); err != nil {
		return fmt.Errorf("ops: q8ta conv: %w", err)
	}
	return nil
}

package ops

import (
	"errors"
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.convolution.default args:
//
//	[input, weight, bias (tensor or Null), stride, padding, dilation,
//	 transposed (Bool), output_padding, groups, out]
//
// et_vk.conv_with_clamp.default and conv_with_clamp.default args:
//
//	[input, weight, bias, stride, padding, dilation, transposed,
//	 output_padding, groups, output_min (Double/Int or Null),
//	 output_max (Double/Int or Null), out]
//
// float32, NCHW. A 4-D input is conv2d (weight [OC, IC/groups, KH, KW], or
// [IC, OC/groups, KH, KW] when transposed); a 3-D input is conv1d, run as
// conv2d over a height of 1. stride, padding, dilation and output_padding
// hold one entry per spatial dim, or one entry for all of them. Weights and
// bias are usually constants (or et_vk.prepack outputs); any float32 tensor
// works. The output shape is computed as torch does.
//
// Kernels (shaders/conv.wgsl): direct convolution with one flat loop over
// the group's input channels × KH × KW; a forward convolution computes a
// register tile of up to 8 output channels × 4 columns per invocation, a
// transposed one up to 8 channels of one pixel. The reduction is split into
// chunks of at most convMaxTrips loop trips, one accumulating dispatch
// each, because llvmpipe silently cuts loops at 65535 trips per
// invocation; bias is added by the first chunk and the clamp applied by
// the last.
//
// Packed weights: a constant forward-convolution weight whose output
// channels per group are a multiple of 4 is packed once at load into blocks
// of convPackTileOC (or fewer) output channels, [OC/t, ICg·KH·KW, t]
// (ConvBlockSpec), and the Packed kernel reads each reduction step's t
// weights as t/4 vec4s into vec4 accumulators. The weight is read only
// through the graph's Packer (Op.Packed), so a packed weight is on the
// device once, and with a packed-weight cache the next load reads it from
// the cache file. Depthwise and transposed convolutions keep the exported
// layout. BenchmarkConv, packed vs unpacked in one run (medians of 3,
// GFLOP/s): 3×3 64→64 56² 16.4/8.2 (2.0x), 1×1 64→128 56² 10.2/5.6
// (1.8x), 3×3 256→256 14² 15.8/7.9 (2.0x), 1×1 512→512 7² 13.3/6.8
// (2.0x), 7×7/2 3→64 224² 14.5/8.0 (1.8x).
func init() {
	for _, name := range []string{"aten.convolution.default", "et_vk.conv_with_clamp.default", "conv_with_clamp.default"} {
		clamp := name != "aten.convolution.default"
		RegisterOp(Op{Name: name, Run: func(b Builder, args []int32) error { return convOp(b, args, clamp) }, Packed: []int{1}})
	}
}

// convPackTileOC is the most output channels the Packed kernel computes per
// invocation (and the packed block size): 16 channels × convTileOX columns
// as 16 vec4 accumulators.
const convPackTileOC = 16

// convWeight returns the value the kernel reads as convolution weight id
// and whether it is block-packed with tile t. Every call goes through the
// graph's Packer (the op registers it in Op.Packed): ConvBlockSpec when pack, else
// IdentitySpec. A weight that is not a constant (no packer, or a computed
// tensor) is read as it is.
func convWeight(b Builder, id int32, w Tensor, pack bool, t int64) (int32, bool, error) {
	if w.Numel == 0 {
		return id, false, nil
	}
	spec := IdentitySpec(w)
	packed := false
	if pack {
		if s, err := ConvBlockSpec(w, t, b.MaxWorkgroupsPerDim()); err == nil {
			spec, packed = s, true
		}
	}
	pt, err := b.PackWeight(id, spec)
	if (errors.Is(err, ErrArg) && !w.Constant) || errors.Is(err, ErrNotPacked) {
		return id, false, nil // computed on the device, or not packed: as exported
	}
	if err != nil {
		return 0, false, fmt.Errorf("ops: convolution weight: %w", err)
	}
	return pt.ID, packed, nil
}

const (
	convWG       = 64
	convMaxTrips = 16384
)

// convShader is the template data of shaders/conv.wgsl.
type convShader struct {
	Bias       bool
	Transposed bool
	Tiled      bool
	Packed     bool  // block-packed weight read as vec4s (Tiled only)
	OCB, OXB   []int // 0..channels-1 and 0..columns-1 per invocation
	Vec        []int // Packed: 0..len(OCB)/4-1, the vec4 accumulators
	Lanes      []convLane
	WG         int
}

// convLane is output channel J of a Packed tile: component C of
// accumulator vector K.
type convLane struct {
	J, K int
	C    string
}

// Register tile per invocation: up to convTileOC output channels (the
// largest power of two dividing the channels per group) × convTileOX
// output columns (forward kernel; the transposed one does one column). Against one output per
// invocation with a div/mod per trip (0.2 GFLOP/s), 8×4 ran a 3×3 64→64
// conv on 56×56 at 2–6 GFLOP/s on lavapipe (BenchmarkConv; the host was
// shared and noisy, 4×4 and 8×8 were within that noise).
const (
	convTileOC = 8
	convTileOX = 4
)

// iota0 returns 0..n-1, for template ranges.
func iota0(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// convGeom is one validated convolution, as conv2d (conv1d has KH = IH = 1).
type convGeom struct {
	n, ic, ih, iw          int64
	oc, oh, ow             int64
	kh, kw                 int64
	sh, sw, ph, pw, dh, dw int64
	groups                 int64
	transposed             bool
}

// convList reads an IntList argument and expands it to spatial entries
// (one entry stands for all). min is the smallest allowed value.
func convList(b Builder, id int32, arg int, what string, spatial int, min int64) ([]int64, error) {
	l, err := b.IntList(id)
	if err != nil {
		return nil, Errorf(arg, "%s: %s", what, argMsg(err))
	}
	if len(l) == 1 && spatial > 1 {
		l = []int64{l[0], l[0]}
	}
	if len(l) != spatial {
		return nil, Errorf(arg, "%s %v: want %d entries", what, l, spatial)
	}
	for _, v := range l {
		if v < min || v > math.MaxInt32 {
			return nil, Errorf(arg, "%s %v: entries must be in [%d, 2^31)", what, l, min)
		}
	}
	if spatial == 1 {
		// conv1d as conv2d over a height of 1: the height entry is neutral.
		return []int64{min, l[0]}, nil
	}
	return l, nil
}

func convOp(b Builder, args []int32, clamp bool) error {
	nargs := 10
	if clamp {
		nargs = 12
	}
	if len(args) != nargs {
		return Errorf(-1, "want %d args, have %d", nargs, len(args))
	}
	outArg := nargs - 1
	x, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	w, err := b.Tensor(args[1])
	if err != nil {
		return argErr(1, err)
	}
	if x.DType != serialization.Float32 {
		return Errorf(0, "input: unsupported dtype %v (float32 only)", x.DType)
	}
	if w.DType != serialization.Float32 {
		return Errorf(1, "weight: unsupported dtype %v (float32 only)", w.DType)
	}
	rank := len(x.Dims)
	if rank != 3 && rank != 4 {
		return Errorf(0, "input dims %v: want 3-D (conv1d) or 4-D (conv2d)", x.Dims)
	}
	if len(w.Dims) != rank {
		return Errorf(1, "weight dims %v: want rank %d like the input", w.Dims, rank)
	}
	spatial := rank - 2
	transposed, err := b.Bool(args[6])
	if err != nil {
		return argErr(6, err)
	}
	stride, err := convList(b, args[3], 3, "stride", spatial, 1)
	if err != nil {
		return err
	}
	padding, err := convList(b, args[4], 4, "padding", spatial, 0)
	if err != nil {
		return err
	}
	dilation, err := convList(b, args[5], 5, "dilation", spatial, 1)
	if err != nil {
		return err
	}
	outPad := []int64{0, 0}
	if transposed {
		if outPad, err = convList(b, args[7], 7, "output_padding", spatial, 0); err != nil {
			return err
		}
		if spatial == 1 {
			outPad[0] = 0
		}
	} else if !b.IsNull(args[7]) {
		if _, err := b.IntList(args[7]); err != nil {
			return argErr(7, err)
		}
	}
	groups, err := b.Int(args[8])
	if err != nil {
		return argErr(8, err)
	}
	if groups < 1 {
		return Errorf(8, "groups %d must be positive", groups)
	}

	// Both shapes as 4-D.
	xd, wd := x.Dims, w.Dims
	if spatial == 1 {
		xd = []int64{xd[0], xd[1], 1, xd[2]}
		wd = []int64{wd[0], wd[1], 1, wd[2]}
	}
	g := convGeom{n: xd[0], ic: xd[1], ih: xd[2], iw: xd[3], kh: wd[2], kw: wd[3],
		sh: stride[0], sw: stride[1], ph: padding[0], pw: padding[1], dh: dilation[0], dw: dilation[1],
		groups: groups, transposed: transposed}
	if g.kh < 1 || g.kw < 1 {
		return Errorf(1, "weight dims %v: empty kernel", w.Dims)
	}
	if g.ic%groups != 0 {
		return Errorf(8, "input channels %d not divisible by groups %d", g.ic, groups)
	}
	if transposed {
		if wd[0] != g.ic {
			return Errorf(1, "weight dims %v: transposed weight needs %d input channels first", w.Dims, g.ic)
		}
		g.oc = wd[1] * groups
		for i, op := range outPad {
			if op >= stride[i] && op >= dilation[i] {
				return Errorf(7, "output_padding %v must be smaller than stride %v or dilation %v", outPad, stride, dilation)
			}
		}
		g.oh = (g.ih-1)*g.sh - 2*g.ph + g.dh*(g.kh-1) + outPad[0] + 1
		g.ow = (g.iw-1)*g.sw - 2*g.pw + g.dw*(g.kw-1) + outPad[1] + 1
	} else {
		g.oc = wd[0]
		if g.oc%groups != 0 {
			return Errorf(8, "output channels %d not divisible by groups %d", g.oc, groups)
		}
		if wd[1]*groups != g.ic {
			return Errorf(1, "weight dims %v: want %d input channels per group for input %v", w.Dims, g.ic/groups, x.Dims)
		}
		g.oh = (g.ih+2*g.ph-g.dh*(g.kh-1)-1)/g.sh + 1
		g.ow = (g.iw+2*g.pw-g.dw*(g.kw-1)-1)/g.sw + 1
		if g.ih+2*g.ph < g.dh*(g.kh-1)+1 || g.iw+2*g.pw < g.dw*(g.kw-1)+1 {
			return Errorf(0, "input dims %v (padded) smaller than the dilated kernel %v", x.Dims, w.Dims)
		}
	}
	if g.oh < 1 || g.ow < 1 {
		return Errorf(0, "output spatial size %d×%d is not positive", g.oh, g.ow)
	}
	bias := int32(-1)
	if !b.IsNull(args[2]) {
		bt, err := b.Tensor(args[2])
		if err != nil {
			return argErr(2, err)
		}
		if bt.DType != serialization.Float32 {
			return Errorf(2, "bias: unsupported dtype %v (float32 only)", bt.DType)
		}
		if len(bt.Dims) != 1 || bt.Dims[0] != g.oc {
			return Errorf(2, "bias dims %v, want [%d]", bt.Dims, g.oc)
		}
		bias = args[2]
	}
	// An absent bound is -Inf or +Inf, which clamps nothing (the kernel
	// clamps with both; has_min and has_max stay informational).
	lo, hi := math.Inf(-1), math.Inf(1)
	hasLo, hasHi := false, false
	if clamp {
		if !b.IsNull(args[9]) {
			if lo, err = b.Float(args[9]); err != nil {
				return argErr(9, err)
			}
			hasLo = true
		}
		if !b.IsNull(args[10]) {
			if hi, err = b.Float(args[10]); err != nil {
				return argErr(10, err)
			}
			hasHi = true
		}
	}
	outDims := []int64{g.n, g.oc, g.oh, g.ow}
	if spatial == 1 {
		outDims = []int64{g.n, g.oc, g.ow}
	}
	out, err := Output(b, outArg, args[outArg], serialization.Float32, outDims)
	if err != nil {
		return err
	}
	for _, t := range []Tensor{x, w, out} {
		if t.Numel >= 1<<32 {
			return Errorf(-1, "tensor %d has %d elements, over the kernel's 32-bit indexing", t.ID, t.Numel)
		}
	}
	if out.Numel == 0 {
		return nil
	}
	sh := convShader{Bias: bias >= 0, Transposed: transposed, WG: convWG}
	// Each invocation computes a block of output channels (within one
	// group) × columns (forward only; transposed does one column).
	ocg := g.oc / groups
	tileOC := int64(convTileOC)
	pack := !transposed && ocg%4 == 0 && !b.Config().NoConvPacking
	if pack {
		tileOC = convPackTileOC
	}
	for ocg%tileOC != 0 {
		tileOC /= 2
	}
	wid, packed, err := convWeight(b, args[1], w, pack, tileOC)
	if err != nil {
		return err
	}
	if !packed && tileOC > convTileOC {
		tileOC = convTileOC
	}
	tileOX := int64(1)
	if !transposed {
		sh.Tiled, tileOX = true, convTileOX
	}
	sh.OCB, sh.OXB = iota0(int(tileOC)), iota0(int(tileOX))
	if packed {
		sh.Packed, sh.Vec = true, iota0(int(tileOC/4))
		for j := range sh.OCB {
			sh.Lanes = append(sh.Lanes, convLane{J: j, K: j / 4, C: "xyzw"[j%4 : j%4+1]})
		}
	}
	owb, ocb := (g.ow+tileOX-1)/tileOX, g.oc/tileOC
	invocations := g.n * ocb * g.oh * owb
	inputs := []int32{args[0], wid}
	if sh.Bias {
		inputs = append(inputs, bias)
	}
	k, err := shaders.Render("conv.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), convWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(invocations), convWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	trips := (g.ic / groups) * g.kh * g.kw
	// One dispatch per chunk; an empty reduction still needs one.
	for begin := int64(0); begin == 0 || begin < trips; begin += convMaxTrips {
		end := min(begin+convMaxTrips, trips)
		var p Params
		p.U32(uint32(invocations)).U32(uint32(g.oc)).U32(uint32(g.oh)).U32(uint32(g.ow))
		p.U32(uint32(g.ic)).U32(uint32(g.ih)).U32(uint32(g.iw)).U32(uint32(g.ic / groups))
		p.U32(uint32(g.oc / groups)).U32(uint32(g.kh)).U32(uint32(g.kw)).U32(uint32(begin))
		p.U32(uint32(end)).U32(b2u(begin > 0)).U32(b2u(end >= trips)).U32(b2u(hasLo))
		p.U32(b2u(hasHi)).F32(float32(lo)).F32(float32(hi)).U32(0)
		for _, v := range []int64{g.sh, g.sw, g.ph, g.pw, g.dh, g.dw} {
			p.I32(int32(v)) // each < 2^31 (convList)
		}
		p.U32(uint32(owb)).U32(uint32(ocb))
		p.I32(int32(g.dh / g.sh)).I32(int32(g.dh % g.sh)).I32(int32(g.dw / g.sw)).I32(int32(g.dw % g.sw))
		if err := b.Dispatch(k, inputs, []int32{args[outArg]}, p.Bytes(), grid); err != nil {
			return fmt.Errorf("ops: convolution: %w", err)
		}
	}
	return nil
}

// b2u is 1 for true, 0 for false.
func b2u(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}

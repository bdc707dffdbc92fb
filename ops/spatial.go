package ops

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.upsample_nearest2d.vec args:
//
//	[input, output_size (IntList or Null), scale_factors (DoubleList or Null), out]
//
// aten.upsample_bilinear2d.vec args:
//
//	[input, output_size, align_corners (Bool), scale_factors, out]
//
// aten.pixel_shuffle.default args:    [self, upscale_factor (Int), out]
// aten.constant_pad_nd.default args:  [self, pad (IntList), value (Double/Int), out]
// aten.grid_sampler_2d.default args:
//
//	[input, grid, interpolation_mode (Int), padding_mode (Int), align_corners (Bool), out]
//
// et_vk.grid_priors.default args:     [self, stride (Int), offset (Double), out]
//
// upsample: float32 [N, C, H, W]; exactly one of output_size and
// scale_factors is given, and the output size is output_size or
// floor(in·scale). Source indices follow torch's CPU kernels, in float32:
// nearest takes min(floor(dst·s), in-1) with s = 1/scale when scale_factors
// are given and in/out otherwise (same size and exact doubling are
// special-cased); bilinear takes src = s·dst (align_corners, s =
// (in-1)/(out-1)) or max(s·(dst+0.5)-0.5, 0), then interpolates between
// floor(src) and the next index (clamped to the edge).
//
// pixel_shuffle: [..., C·r², H, W] → [..., C, H·r, W·r].
// constant_pad_nd: pad holds (left, right) pairs starting from the last
// dim; negative entries crop; any rank up to 8; value is converted like
// torch's fill_ (truncated toward zero for integers, != 0 for bool).
// Both move float32, int32, bool, uint8 and int8 elements.
//
// grid_sampler_2d: float32 input [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y)
// in [-1, 1]; out [N, C, Ho, Wo]. interpolation_mode 0 bilinear, 1
// nearest (round half to even); padding_mode 0 zeros, 1 border. Bicubic
// and reflection are refused.
//
// grid_priors (et_vk): self's last two dims are H, W; out is float32 [H·W,
// 2] with row h·W+w = ((w + offset)·stride, (h + offset)·stride).
//
// Every kernel is one invocation per output element with no loops over
// data (shaders/upsample.wgsl, pixel_shuffle.wgsl, pad.wgsl,
// grid_sample.wgsl).
func init() {
	Register("aten.upsample_nearest2d.vec", func(b Builder, args []int32) error { return upsampleOp(b, args, false) })
	Register("aten.upsample_bilinear2d.vec", func(b Builder, args []int32) error { return upsampleOp(b, args, true) })
	Register("aten.pixel_shuffle.default", pixelShuffleOp)
	Register("aten.constant_pad_nd.default", constantPadOp)
	Register("aten.grid_sampler_2d.default", gridSamplerOp)
	Register("et_vk.grid_priors.default", gridPriorsOp)
}

const (
	spatialWG      = 64
	padMaxRank     = 8
	spatialMaxElem = 1<<32 - 1
)

// spatialDispatch renders file with data and dispatches one invocation
// per output element (n of them).
func spatialDispatch(b Builder, file string, data any, inputs, outputs []int32, p *Params, n int64) error {
	k, err := shaders.Render(file, data, "main", shaders.Layout(len(inputs), len(outputs), true), spatialWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(n), spatialWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	if err := b.Dispatch(k, inputs, outputs, p.Bytes(), grid); err != nil {
		return fmt.Errorf("ops: %s: %w", file, err)
	}
	return nil
}

// spatialInput fetches tensor arg, checks its dtype and (rank > 0) rank.
func spatialInput(b Builder, id int32, arg int, rank int, dts ...serialization.DataType) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	ok := false
	for _, dt := range dts {
		ok = ok || t.DType == dt
	}
	if !ok {
		return Tensor{}, Errorf(arg, "unsupported dtype %v (want %v)", t.DType, dts)
	}
	if rank > 0 && len(t.Dims) != rank {
		return Tensor{}, Errorf(arg, "dims %v: want rank %d", t.Dims, rank)
	}
	if t.Numel > spatialMaxElem {
		return Tensor{}, Errorf(arg, "%d elements exceed the kernels' 32-bit indexing", t.Numel)
	}
	return t, nil
}

// spatialOutput sets the dims of output id (arg) like Output and checks
// that its elements fit the kernels' 32-bit indexing.
func spatialOutput(b Builder, arg int, id int32, dt serialization.DataType, dims []int64) (Tensor, error) {
	out, err := Output(b, arg, id, dt, dims)
	if err != nil {
		return Tensor{}, err
	}
	if out.Numel > spatialMaxElem {
		return Tensor{}, Errorf(arg, "%d elements exceed the kernels' 32-bit indexing", out.Numel)
	}
	return out, nil
}

// upsampleDim is one spatial dim's source-index rule, as the kernels take it.
type upsampleDim struct {
	kind  uint32  // 0 identity, 1 halve (nearest, out = 2·in), 2 scaled
	scale float32 // the float32 source/destination ratio
}

func upsampleOp(b Builder, args []int32, bilinear bool) error {
	nargs, sizeArg, scaleArg, alignArg := 4, 1, 2, -1
	if bilinear {
		nargs, scaleArg, alignArg = 5, 3, 2
	}
	if len(args) != nargs {
		return Errorf(-1, "want %d args, have %d", nargs, len(args))
	}
	x, err := spatialInput(b, args[0], 0, 4, serialization.Float32)
	if err != nil {
		return err
	}
	align := false
	if bilinear {
		if align, err = b.Bool(args[alignArg]); err != nil {
			return argErr(alignArg, err)
		}
	}
	in := x.Dims[2:]
	var size []int64
	var scales []float64
	if !b.IsNull(args[sizeArg]) {
		if size, err = b.IntList(args[sizeArg]); err != nil {
			return argErr(sizeArg, err)
		}
		if len(size) != 2 {
			return Errorf(sizeArg, "output_size %v: want 2 entries", size)
		}
	}
	if !b.IsNull(args[scaleArg]) {
		if scales, err = b.DoubleList(args[scaleArg]); err != nil {
			return argErr(scaleArg, err)
		}
		if len(scales) != 2 {
			return Errorf(scaleArg, "scale_factors %v: want 2 entries", scales)
		}
	}
	if (size == nil) == (scales == nil) {
		return Errorf(-1, "exactly one of output_size and scale_factors must be given")
	}
	if size == nil {
		size = make([]int64, 2)
		for i, s := range scales {
			v := float64(in[i]) * s
			if !(v >= 0) || v > math.MaxInt32 {
				return Errorf(scaleArg, "scale_factors %v give a bad size for input %v", scales, x.Dims)
			}
			size[i] = int64(v)
		}
	}
	for i, s := range size {
		if s < 1 || in[i] < 1 {
			return Errorf(sizeArg, "input %v and output size %v must be positive", in, size)
		}
	}
	out, err := spatialOutput(b, nargs-1, args[nargs-1], serialization.Float32, []int64{x.Dims[0], x.Dims[1], size[0], size[1]})
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	var dims [2]upsampleDim
	for i := range dims {
		// torch's compute_scales_value: 1/scale when scale factors were
		// given, else in/out; both in float32.
		ratio := float32(in[i]) / float32(size[i])
		if scales != nil && scales[i] > 0 {
			ratio = float32(1.0 / scales[i])
		}
		switch {
		case size[i] == in[i]:
			dims[i] = upsampleDim{kind: 0}
		case !bilinear && size[i] == 2*in[i]:
			dims[i] = upsampleDim{kind: 1}
		case bilinear && align:
			r := float32(0)
			if size[i] > 1 {
				r = float32(in[i]-1) / float32(size[i]-1)
			}
			dims[i] = upsampleDim{kind: 2, scale: r}
		default:
			dims[i] = upsampleDim{kind: 2, scale: ratio}
		}
	}
	var p Params
	p.U32(uint32(out.Numel)).U32(uint32(size[0])).U32(uint32(size[1])).U32(uint32(in[0]))
	p.U32(uint32(in[1])).U32(dims[0].kind).U32(dims[1].kind).U32(b2u(align))
	p.F32(dims[0].scale).F32(dims[1].scale)
	sh := struct {
		Bilinear bool
		WG       int
	}{bilinear, spatialWG}
	return spatialDispatch(b, "upsample.wgsl", sh, []int32{args[0]}, []int32{args[nargs-1]}, &p, out.Numel)
}

func pixelShuffleOp(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, upscale_factor, out], have %d", len(args))
	}
	x, err := spatialInput(b, args[0], 0, 0, movableTypes...)
	if err != nil {
		return err
	}
	r, err := b.Int(args[1])
	if err != nil {
		return argErr(1, err)
	}
	rank := len(x.Dims)
	if rank < 3 {
		return Errorf(0, "dims %v: want at least 3", x.Dims)
	}
	if r < 1 || r > math.MaxInt16 {
		return Errorf(1, "upscale_factor %d must be positive", r)
	}
	c, h, w := x.Dims[rank-3], x.Dims[rank-2], x.Dims[rank-1]
	if c%(r*r) != 0 {
		return Errorf(1, "channels %d not divisible by upscale_factor² = %d", c, r*r)
	}
	outDims := append(append([]int64(nil), x.Dims[:rank-3]...), c/(r*r), h*r, w*r)
	out, err := Output(b, 2, args[2], x.DType, outDims)
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	sh, n := moveVariant(x.DType, out.Numel)
	var p Params
	p.U32(uint32(n)).U32(uint32(h)).U32(uint32(w)).U32(uint32(r)).U32(uint32(out.Numel))
	return spatialDispatch(b, "pixel_shuffle.wgsl", sh, []int32{args[0]}, []int32{args[2]}, &p, n)
}

func constantPadOp(b Builder, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [self, pad, value, out], have %d", len(args))
	}
	x, err := spatialInput(b, args[0], 0, 0, movableTypes...)
	if err != nil {
		return err
	}
	pad, err := b.IntList(args[1])
	if err != nil {
		return argErr(1, err)
	}
	value, err := b.Float(args[2])
	if err != nil {
		return argErr(2, err)
	}
	rank := len(x.Dims)
	if rank > padMaxRank {
		return Errorf(0, "rank %d exceeds %d", rank, padMaxRank)
	}
	if len(pad)%2 != 0 || len(pad) > 2*rank {
		return Errorf(1, "pad %v: want an even length of at most 2·rank = %d", pad, 2*rank)
	}
	left := make([]int64, rank)
	outDims := append([]int64(nil), x.Dims...)
	for i := 0; i < len(pad)/2; i++ {
		d := rank - 1 - i
		l, r := pad[2*i], pad[2*i+1]
		if l < math.MinInt32 || l > math.MaxInt32 || r < math.MinInt32 || r > math.MaxInt32 {
			return Errorf(1, "pad %v is out of range", pad)
		}
		outDims[d] = x.Dims[d] + l + r
		left[d] = l
		if outDims[d] < 0 {
			return Errorf(1, "pad %v makes dim %d of %v negative", pad, d, x.Dims)
		}
	}
	out, err := spatialOutput(b, 3, args[3], x.DType, outDims)
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	bits, err := padValueBits(x.DType, value)
	if err != nil {
		return err
	}
	od, id, ld := make([]uint32, rank), make([]uint32, rank), make([]uint32, rank)
	for i := 0; i < rank; i++ {
		// Innermost first.
		od[i], id[i], ld[i] = uint32(outDims[rank-1-i]), uint32(x.Dims[rank-1-i]), uint32(int32(left[rank-1-i]))
	}
	sh, n := moveVariant(x.DType, out.Numel)
	var p Params
	p.U32(uint32(n)).U32(uint32(rank)).U32(bits).U32(uint32(out.Numel))
	p.U32s(od, padMaxRank).U32s(id, padMaxRank).U32s(ld, padMaxRank)
	return spatialDispatch(b, "pad.wgsl", sh, []int32{args[0]}, []int32{args[3]}, &p, n)
}

// movableTypes are the dtypes the data-movement kernels (pad,
// pixel_shuffle) take: 4-byte elements as words, 1-byte ones packed.
var movableTypes = []serialization.DataType{serialization.Float32, serialization.Int32,
	serialization.Bool, serialization.Uint8, serialization.Int8}

// moveVariant returns the template data of a data-movement kernel and its
// invocation count for numel output elements: one per element, or one per
// 4-element word for 1-byte types.
func moveVariant(dt serialization.DataType, numel int64) (struct {
	Bytes bool
	WG    int
}, int64) {
	v := struct {
		Bytes bool
		WG    int
	}{dt.Size() == 1, spatialWG}
	if v.Bytes {
		return v, (numel + 3) / 4
	}
	return v, numel
}

// padValueBits converts constant_pad_nd's value to dt's element bits, as
// torch's fill_ does: float32 rounds, integers truncate toward zero (and
// must fit), bool is value != 0.
func padValueBits(dt serialization.DataType, value float64) (uint32, error) {
	v := math.Trunc(value)
	switch dt {
	case serialization.Float32:
		return math.Float32bits(float32(value)), nil
	case serialization.Bool:
		if value != 0 {
			return 1, nil
		}
		return 0, nil
	case serialization.Int32:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return uint32(int32(v)), nil
		}
	case serialization.Uint8:
		if v >= 0 && v <= math.MaxUint8 {
			return uint32(v), nil
		}
	case serialization.Int8:
		if v >= math.MinInt8 && v <= math.MaxInt8 {
			return uint32(uint8(int8(v))), nil
		}
	}
	return 0, Errorf(2, "value %v does not fit %v", value, dt)
}

func gridSamplerOp(b Builder, args []int32) error {
	if len(args) != 6 {
		return Errorf(-1, "want 6 args [input, grid, interpolation_mode, padding_mode, align_corners, out], have %d", len(args))
	}
	x, err := spatialInput(b, args[0], 0, 4, serialization.Float32)
	if err != nil {
		return err
	}
	g, err := spatialInput(b, args[1], 1, 4, serialization.Float32)
	if err != nil {
		return err
	}
	interp, err := b.Int(args[2])
	if err != nil {
		return argErr(2, err)
	}
	padding, err := b.Int(args[3])
	if err != nil {
		return argErr(3, err)
	}
	align, err := b.Bool(args[4])
	if err != nil {
		return argErr(4, err)
	}
	if interp != 0 && interp != 1 {
		return Errorf(2, "interpolation_mode %d unsupported (0 bilinear, 1 nearest)", interp)
	}
	if padding != 0 && padding != 1 {
		return Errorf(3, "padding_mode %d unsupported (0 zeros, 1 border)", padding)
	}
	if g.Dims[0] != x.Dims[0] || g.Dims[3] != 2 {
		return Errorf(1, "grid dims %v: want [%d, Ho, Wo, 2]", g.Dims, x.Dims[0])
	}
	if x.Dims[2] < 1 || x.Dims[3] < 1 {
		return Errorf(0, "input dims %v: spatial dims must be positive", x.Dims)
	}
	out, err := spatialOutput(b, 5, args[5], serialization.Float32, []int64{x.Dims[0], x.Dims[1], g.Dims[1], g.Dims[2]})
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	var p Params
	p.U32(uint32(out.Numel)).U32(uint32(x.Dims[1])).U32(uint32(g.Dims[1])).U32(uint32(g.Dims[2]))
	p.U32(uint32(x.Dims[2])).U32(uint32(x.Dims[3])).U32(b2u(align)).U32(0)
	sh := struct {
		Op      string
		Nearest bool
		Border  bool
		WG      int
	}{"sample", interp == 1, padding == 1, spatialWG}
	return spatialDispatch(b, "grid_sample.wgsl", sh, []int32{args[0], args[1]}, []int32{args[5]}, &p, out.Numel)
}

func gridPriorsOp(b Builder, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [self, stride, offset, out], have %d", len(args))
	}
	x, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	stride, err := b.Int(args[1])
	if err != nil {
		return argErr(1, err)
	}
	offset, err := b.Float(args[2])
	if err != nil {
		return argErr(2, err)
	}
	r := len(x.Dims)
	if r < 2 {
		return Errorf(0, "dims %v: want at least 2", x.Dims)
	}
	h, w := x.Dims[r-2], x.Dims[r-1]
	if stride < math.MinInt32 || stride > math.MaxInt32 {
		return Errorf(1, "stride %d is out of range", stride)
	}
	out, err := spatialOutput(b, 3, args[3], serialization.Float32, []int64{h * w, 2})
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	var p Params
	p.U32(uint32(out.Numel)).U32(uint32(w)).F32(float32(stride)).F32(float32(offset))
	sh := struct {
		Op      string
		Nearest bool
		Border  bool
		WG      int
	}{"priors", false, false, spatialWG}
	return spatialDispatch(b, "grid_sample.wgsl", sh, nil, []int32{args[3]}, &p, out.Numel)
}

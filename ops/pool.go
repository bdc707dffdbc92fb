package ops

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.max_pool2d.default args:
//
//	[self, kernel_size, stride, padding, dilation, ceil_mode, out]
//
// aten.max_pool2d_with_indices.default args: the same inputs, then
// ValueList[out, indices].
//
// aten.avg_pool2d.default args:
//
//	[self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//	 divisor_override (Int or Null), out]
//
// self is float32 [N, C, H, W] or [C, H, W]. kernel_size, stride, padding
// and dilation hold one entry (for both dims) or two; an empty stride means
// kernel_size. Padding may be at most half the kernel. The output size is
// torch's: floor((H + 2p - d(k-1) - 1) / s) + 1, or with ceil_mode rounded
// up unless the last window would start past the input and left padding.
//
// max takes the first maximum in window order and propagates NaN (each NaN
// replaces the running maximum, as torch's CPU kernel does); indices are
// the flat h·W + w positions within each plane, int32 on the device (the
// exporter downcasts torch's int64). avg divides by divisor_override when
// given, else by the window size clipped to the padded input
// (count_include_pad) or to the input.
//
// Kernel (shaders/pool.wgsl): one invocation per output element, one flat
// loop over the KH×KW window, split into chunks of at most poolMaxTrips
// trips (one accumulating dispatch each) because llvmpipe cuts loops at
// 65535 trips per invocation.
func init() {
	Register("aten.max_pool2d.default", func(b Builder, args []int32) error { return poolOp(b, args, "max") })
	Register("aten.max_pool2d_with_indices.default", func(b Builder, args []int32) error { return poolOp(b, args, "maxidx") })
	Register("aten.avg_pool2d.default", func(b Builder, args []int32) error { return poolOp(b, args, "avg") })
}

const (
	poolWG       = 64
	poolMaxTrips = 16384
)

// poolShader is the template data of shaders/pool.wgsl.
type poolShader struct {
	Avg     bool
	Indices bool
	WG      int
}

// poolPair reads a 2-entry IntList (one entry stands for both); empty, when
// allowed, yields def.
func poolPair(b Builder, id int32, arg int, what string, def []int64, min int64) ([]int64, error) {
	l, err := b.IntList(id)
	if err != nil {
		return nil, Errorf(arg, "%s: %s", what, argMsg(err))
	}
	switch len(l) {
	case 0:
		if def == nil {
			return nil, Errorf(arg, "%s is empty", what)
		}
		l = def
	case 1:
		l = []int64{l[0], l[0]}
	case 2:
	default:
		return nil, Errorf(arg, "%s %v: want 1 or 2 entries", what, l)
	}
	for _, v := range l {
		if v < min || v > math.MaxInt32 {
			return nil, Errorf(arg, "%s %v: entries must be in [%d, 2^31)", what, l, min)
		}
	}
	return l, nil
}

// poolOutSize is torch's pooling output size along one dim.
func poolOutSize(in, k, pad, stride, dil int64, ceil bool) int64 {
	num := in + 2*pad - dil*(k-1) - 1
	if ceil {
		num += stride - 1
	}
	// Floor division (num may be negative).
	q := num / stride
	if num%stride != 0 && num < 0 {
		q--
	}
	out := q + 1
	if ceil && (out-1)*stride >= in+pad {
		out--
	}
	return out
}

func poolOp(b Builder, args []int32, op string) error {
	avg := op == "avg"
	nargs := 7
	if avg {
		nargs = 8
	}
	if len(args) != nargs {
		return Errorf(-1, "want %d args, have %d", nargs, len(args))
	}
	outArg := nargs - 1
	x, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	if x.DType != serialization.Float32 {
		return Errorf(0, "unsupported dtype %v (float32 only)", x.DType)
	}
	if r := len(x.Dims); r != 3 && r != 4 {
		return Errorf(0, "self dims %v: want [N, C, H, W] or [C, H, W]", x.Dims)
	}
	kernel, err := poolPair(b, args[1], 1, "kernel_size", nil, 1)
	if err != nil {
		return err
	}
	stride, err := poolPair(b, args[2], 2, "stride", kernel, 1)
	if err != nil {
		return err
	}
	pad, err := poolPair(b, args[3], 3, "padding", nil, 0)
	if err != nil {
		return err
	}
	dil := []int64{1, 1}
	ceilArg := 4
	if !avg {
		if dil, err = poolPair(b, args[4], 4, "dilation", nil, 1); err != nil {
			return err
		}
		ceilArg = 5
	}
	ceil, err := b.Bool(args[ceilArg])
	if err != nil {
		return argErr(ceilArg, err)
	}
	mode, divisor := uint32(0), int64(0)
	if avg {
		incl, err := b.Bool(args[5])
		if err != nil {
			return argErr(5, err)
		}
		if incl {
			mode = 1
		}
		if !b.IsNull(args[6]) {
			if divisor, err = b.Int(args[6]); err != nil {
				return argErr(6, err)
			}
			if divisor == 0 {
				return Errorf(6, "divisor_override must be non-zero")
			}
			mode = 2
		}
	}
	for i := range pad {
		if pad[i] > kernel[i]/2 {
			return Errorf(3, "padding %v must be at most half of kernel_size %v", pad, kernel)
		}
	}
	r := len(x.Dims)
	ih, iw := x.Dims[r-2], x.Dims[r-1]
	oh := poolOutSize(ih, kernel[0], pad[0], stride[0], dil[0], ceil)
	ow := poolOutSize(iw, kernel[1], pad[1], stride[1], dil[1], ceil)
	if oh < 1 || ow < 1 {
		return Errorf(0, "self dims %v give a non-positive output size %d×%d", x.Dims, oh, ow)
	}
	outDims := append(append([]int64(nil), x.Dims[:r-2]...), oh, ow)
	outID, idxID := args[outArg], int32(-1)
	if op == "maxidx" {
		ids, err := b.ValueList(args[outArg])
		if err != nil || len(ids) != 2 {
			return Errorf(outArg, "want ValueList[out, indices], have %v", b.Kind(args[outArg]))
		}
		outID, idxID = ids[0], ids[1]
	}
	out, err := Output(b, outArg, outID, serialization.Float32, outDims)
	if err != nil {
		return err
	}
	if idxID >= 0 {
		if _, err := Output(b, outArg, idxID, serialization.Int32, outDims); err != nil {
			return err
		}
	}
	if x.Numel >= 1<<32 {
		return Errorf(0, "%d elements exceed the kernel's 32-bit indexing", x.Numel)
	}
	if out.Numel == 0 {
		return nil
	}
	sh := poolShader{Avg: avg, Indices: idxID >= 0, WG: poolWG}
	outs := []int32{outID}
	if sh.Indices {
		outs = append(outs, idxID)
	}
	k, err := shaders.Render("pool.wgsl", sh, "main", shaders.Layout(1, len(outs), true), poolWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(out.Numel), poolWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	trips := kernel[0] * kernel[1]
	for begin := int64(0); begin < trips; begin += poolMaxTrips {
		end := min(begin+poolMaxTrips, trips)
		var p Params
		p.U32(uint32(out.Numel)).U32(uint32(oh)).U32(uint32(ow)).U32(uint32(ih))
		p.U32(uint32(iw)).U32(uint32(kernel[0])).U32(uint32(kernel[1])).U32(uint32(begin))
		p.U32(uint32(end)).U32(b2u(begin > 0)).U32(b2u(end >= trips)).U32(mode)
		p.I32(int32(stride[0])).I32(int32(stride[1])).I32(int32(pad[0])).I32(int32(pad[1]))
		p.I32(int32(dil[0])).I32(int32(dil[1])).F32(float32(divisor)).U32(0)
		if err := b.Dispatch(k, []int32{args[0]}, outs, p.Bytes(), grid); err != nil {
			return fmt.Errorf("ops: %s pool: %w", op, err)
		}
	}
	return nil
}

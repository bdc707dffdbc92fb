package ops

import (
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.full.default args:          [size, fill_value, dtype, layout, device, pin_memory, out]
// aten.full_like.default args:     [self, fill_value, dtype, layout, device, pin_memory, memory_format, out]
// aten.zeros.default args:         [size, dtype, layout, device, pin_memory, out]
// aten.ones.default args:          [size, dtype, layout, device, pin_memory, out]
// aten.zeros_like.default args:    [self, dtype, layout, device, pin_memory, memory_format, out]
// aten.ones_like.default args:     [self, dtype, layout, device, pin_memory, memory_format, out]
// aten.scalar_tensor.default args: [s, dtype, layout, device, pin_memory, out]
// aten.arange.start_step args:     [start, end, step, dtype, layout, device, pin_memory, out]
//
// out's dtype is the result dtype (the exporter turns dtype into Null). size
// is an IntList or a ValueList of Int/SymInt; a *_like op takes self's dims
// (not its values); scalar_tensor is rank 0. fill values (and arange's
// bounds) are Int, Double, Bool or SymInt, converted as torch does: to an integer type by truncation toward
// zero, refused when out of range; to bool as != 0. full and friends take
// every device dtype; arange takes float32 or int32 and has
// ceil((end-start)/step) elements, start + i*step (computed in float32
// for a float32 out, within an ulp of max(|start|, |end|)).
func init() {
	Register("aten.full.default", func(b Builder, args []int32) error { return fillOp(b, args, 7, fillSize, 1) })
	Register("aten.full_like.default", func(b Builder, args []int32) error { return fillOp(b, args, 8, fillLike, 1) })
	Register("aten.zeros.default", func(b Builder, args []int32) error { return fillOp(b, args, 6, fillSize, 0) })
	Register("aten.ones.default", func(b Builder, args []int32) error { return fillOp(b, args, 6, fillSize, 1) })
	Register("aten.zeros_like.default", func(b Builder, args []int32) error { return fillOp(b, args, 7, fillLike, 0) })
	Register("aten.ones_like.default", func(b Builder, args []int32) error { return fillOp(b, args, 7, fillLike, 1) })
	Register("aten.scalar_tensor.default", func(b Builder, args []int32) error { return fillOp(b, args, 6, fillScalar, 0) })
	Register("aten.arange.start_step", arangeOp)
}

const fillWG = 256

// How a fill op gets its output dims from args[0].
const (
	fillSize   = iota // args[0] is size
	fillLike          // args[0] is a tensor whose dims are copied
	fillScalar        // args[0] is the value; rank 0
)

// fillVariant is the template data of shaders/fill.wgsl.
type fillVariant struct {
	Op string // fill or arange
	YB string // y's array element type
	S  string // arange's compute type: f32 or i32
	T  string // S or vec4<S>
	W  int    // arange elements per invocation: 1 or 4
	WG int
}

// fillParams is the Go twin of fill.wgsl's Params (32 bytes).
type fillParams struct {
	N      uint32 // invocations with work
	Word   uint32 // fill: the repeated element bits
	AI, BI int32  // arange start and step (int32)
	AF, BF float32
}

func (p *fillParams) bytes() []byte {
	var q Params
	q.U32(p.N).U32(p.Word).I32(p.AI).I32(p.BI).F32(p.AF).F32(p.BF)
	return q.Bytes()
}

// fillOp implements full (value = args[1]), zeros/ones (value = def) and
// their _like forms, and scalar_tensor (value = args[0]). n is the arg
// count.
func fillOp(b Builder, args []int32, n, shape int, def float64) error {
	if len(args) != n {
		return Errorf(-1, "want %d args, have %d", n, len(args))
	}
	outArg := n - 1
	out, err := b.Tensor(args[outArg])
	if err != nil {
		return argErr(outArg, err)
	}
	var dims []int64
	switch shape {
	case fillSize:
		if dims, err = b.IntList(args[0]); err != nil {
			return argErr(0, err)
		}
		for _, d := range dims {
			if d < 0 {
				return Errorf(0, "negative size in %v", dims)
			}
		}
	case fillLike:
		t, err := b.Tensor(args[0])
		if err != nil {
			return argErr(0, err)
		}
		dims = t.Dims
	case fillScalar:
		dims = []int64{}
	}
	valArg := -1
	switch {
	case shape == fillScalar:
		valArg = 0
	case n == 7 && shape == fillSize, n == 8:
		valArg = 1 // full, full_like
	}
	word, err := fillWord(b, valArg, args, out.DType, def)
	if err != nil {
		return err
	}
	out, err = Output(b, outArg, args[outArg], out.DType, dims)
	if err != nil {
		return err
	}
	if out.NBytes == 0 {
		return nil
	}
	p := fillParams{N: uint32((out.NBytes + 15) / 16), Word: word}
	v := fillVariant{Op: "fill", YB: "vec4<u32>", WG: fillWG}
	return fillDispatch(b, v, p, args[outArg])
}

// fillWord converts the fill value (args[valArg], or def when valArg < 0)
// to dt and returns its bits repeated to fill a u32.
func fillWord(b Builder, valArg int, args []int32, dt serialization.DataType, def float64) (uint32, error) {
	v := def
	if valArg >= 0 {
		f, err := scalarArg(b, valArg, args[valArg])
		if err != nil {
			return 0, err
		}
		v = f.F
	}
	intRange := func(lo, hi float64) (int64, error) {
		t := math.Trunc(v)
		if math.IsNaN(v) || t < lo || t > hi {
			return 0, Errorf(valArg, "value %v cannot be converted to %v without overflow", v, dt)
		}
		return int64(t), nil
	}
	switch dt {
	case serialization.Float32:
		return math.Float32bits(float32(v)), nil
	case serialization.Int32:
		i, err := intRange(math.MinInt32, math.MaxInt32)
		return uint32(int32(i)), err
	case serialization.Bool:
		if v != 0 { // NaN too
			return 0x01010101, nil
		}
		return 0, nil
	case serialization.Uint8:
		i, err := intRange(0, math.MaxUint8)
		return uint32(uint8(i)) * 0x01010101, err
	case serialization.Int8:
		i, err := intRange(math.MinInt8, math.MaxInt8)
		return uint32(uint8(int8(i))) * 0x01010101, err
	}
	return 0, Errorf(len(args)-1, "unsupported dtype %v", dt)
}

func arangeOp(b Builder, args []int32) error {
	if len(args) != 8 {
		return Errorf(-1, "want 8 args [start, end, step, dtype, layout, device, pin_memory, out], have %d", len(args))
	}
	var s [3]float64
	for k := range s {
		sk, err := scalarArg(b, k, args[k])
		if err != nil {
			return err
		}
		f := sk.F
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Errorf(k, "%v is not finite", f)
		}
		s[k] = f
	}
	start, end, step := s[0], s[1], s[2]
	switch {
	case step == 0:
		return Errorf(2, "step must be nonzero")
	case (step > 0 && end < start) || (step < 0 && end > start):
		return Errorf(2, "upper bound %v and lower bound %v inconsistent with step sign %v", end, start, step)
	}
	size := math.Ceil((end - start) / step)
	if size >= 1<<31 {
		return Errorf(1, "arange of %v elements is too large", size)
	}
	out, err := b.Tensor(args[7])
	if err != nil {
		return argErr(7, err)
	}
	v := fillVariant{Op: "arange", WG: fillWG}
	var p fillParams
	switch out.DType {
	case serialization.Float32:
		v.S = "f32"
	case serialization.Int32:
		// As torch: the count comes from the float arguments, the values
		// from start and step cast to the integer type first (arange(0.5,
		// 9.5, 1.5, dtype=int) is 0, 1, ..., 5).
		v.S = "i32"
		if step = math.Trunc(step); step == 0 {
			return Errorf(2, "step %v truncates to 0 for an integer arange", s[2])
		}
		start = math.Trunc(start)
	default:
		return Errorf(7, "out is %v, want float32 or int32", out.DType)
	}
	if v.S == "i32" {
		if math.Abs(start) > math.MaxInt32 || math.Abs(step) > math.MaxInt32 {
			return Errorf(0, "start %v or step %v overflows int32", start, step)
		}
		p.AI, p.BI = int32(start), int32(step)
	} else {
		p.AF, p.BF = float32(start), float32(step)
	}
	out, err = Output(b, 7, args[7], out.DType, []int64{int64(size)})
	if err != nil {
		return err
	}
	if out.Numel == 0 {
		return nil
	}
	y, _ := elemName(out.DType)
	v.W = 1
	if out.Numel%4 == 0 {
		v.W = 4
	}
	v.T, v.YB = vecType(v.S, v.W), vecType(y, v.W)
	p.N = uint32(out.Numel / int64(v.W))
	return fillDispatch(b, v, p, args[7])
}

func fillDispatch(b Builder, v fillVariant, p fillParams, out int32) error {
	k, err := shaders.Render("fill.wgsl", v, "main", shaders.Layout(0, 1, true), fillWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(p.N), fillWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, nil, []int32{out}, p.bytes(), grid)
}

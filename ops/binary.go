package ops

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.add.Tensor args:      [self, other, alpha, out]
// aten.sub.Tensor args:      [self, other, alpha, out]
// aten.mul.Tensor args:      [self, other, out]
// aten.div.Tensor args:      [self, other, out]
// aten.div.Tensor_mode args: [self, other, rounding_mode, out]
// aten.minimum.default args: [self, other, out]
// aten.maximum.default args: [self, other, out]
// aten.pow.Tensor_Tensor args: [self, other, out]
// aten.bitwise_{and,or,xor}.Tensor args: [self, other, out]
// aten.add.Scalar / aten.sub.Scalar / aten.rsub.Scalar args: [self, other, alpha, out]
// aten.mul.Scalar / aten.div.Scalar args: [self, other, out]
//
// Elementwise arithmetic with NumPy/PyTorch broadcasting of self and other;
// out's live shape is the broadcast of theirs (any rank 0..8 after merging
// dims). alpha may be Int or Double (the exporter deduplicates 1 and 1.0)
// or Null (1); a .Scalar other is Int, Double or Bool. rsub is
// other - alpha*self.
//
// Elements are float32, int32 or bool, mixed freely; out's dtype must be
// torch's promotion of the inputs (float32 if either is float32, else int32
// if either is int32), and ops compute in it. So int32 results wrap. True
// division (div.Tensor, div.Scalar, div.Tensor_mode with a Null mode)
// always yields float32. A .Scalar op with a float32 out accepts any
// tensor, since an integral float scalar may be stored as an Int; an int32
// out needs an int32 or bool tensor and an integral scalar in int32 range.
//
// rounding_mode "trunc" is trunc(a/b) and "floor" is Python's floor
// division (1 // 0.1 is 9, inf // 2 is nan, -5 // inf is -1, x // 0 is
// x/0). Integer division by zero, which torch raises on, yields 0 here in
// both modes (as NumPy does); INT_MIN // -1 wraps to INT_MIN.
//
// minimum and maximum propagate NaN. pow follows C's pow (pow(x, 0) = 1,
// a negative base to a non-integer power is NaN, odd integer powers keep
// the sign) and is evaluated as exp2(y*log2|x|) in float32; int32 pow wraps,
// and a negative exponent gives 1, ±1 or 0 as torch's does.
//
// bitwise_* take int32 and bool (not float); with a bool out they run on
// the comparison kernel (ops/compare.go).
//
// float32 add, sub, rsub, mul, div, minimum and maximum start or join a
// fused chain of elementwise ops when fusion applies (ops/fuse.go).
func init() {
	arith := func(name, op string, layout binaryLayout) {
		Register(name, func(b Builder, args []int32) error { return binaryOp(b, op, layout, args) })
	}
	arith("aten.add.Tensor", "add", layoutAlpha)
	arith("aten.sub.Tensor", "sub", layoutAlpha)
	arith("aten.mul.Tensor", "mul", layoutPlain)
	arith("aten.div.Tensor", "div", layoutPlain)
	arith("aten.div.Tensor_mode", "div", layoutMode)
	arith("aten.minimum.default", "minimum", layoutPlain)
	arith("aten.maximum.default", "maximum", layoutPlain)
	arith("aten.pow.Tensor_Tensor", "pow", layoutPlain)
	arith("aten.bitwise_and.Tensor", "bitand", layoutPlain)
	arith("aten.bitwise_or.Tensor", "bitor", layoutPlain)
	arith("aten.bitwise_xor.Tensor", "bitxor", layoutPlain)
	arith("aten.add.Scalar", "add", layoutAlpha|layoutScalar)
	arith("aten.sub.Scalar", "sub", layoutAlpha|layoutScalar)
	arith("aten.rsub.Scalar", "rsub", layoutAlpha|layoutScalar)
	arith("aten.mul.Scalar", "mul", layoutScalar)
	arith("aten.div.Scalar", "div", layoutScalar)
}

// binaryLayout describes an arithmetic op's argument list.
type binaryLayout int

const (
	layoutPlain  binaryLayout = 0         // [self, other, out]
	layoutAlpha  binaryLayout = 1 << iota // [self, other, alpha, out]
	layoutMode                            // [self, other, rounding_mode, out]
	layoutScalar                          // other is a Scalar, not a tensor
)

func (l binaryLayout) nargs() int {
	if l&(layoutAlpha|layoutMode) != 0 {
		return 4
	}
	return 3
}

func (l binaryLayout) String() string {
	switch {
	case l&layoutAlpha != 0:
		return "[self, other, alpha, out]"
	case l&layoutMode != 0:
		return "[self, other, rounding_mode, out]"
	}
	return "[self, other, out]"
}

const (
	// binaryWG: on llvmpipe 256 ran a 4M-element add about twice as fast as
	// 64 (fewer, longer workgroups; see BenchmarkAdd in ops/opstest).
	binaryWG = 256
	// binaryPer is how many outputs an invocation of the rank-1 kernel
	// computes once there are binaryPerMin of them: on llvmpipe 4 ran a
	// 16M-element add 10-15% faster than 1 (BenchmarkElementwiseAdd).
	binaryPer    = 4
	binaryPerMin = 1 << 16
	// ewMaxRank is how many merged dims the elementwise kernels' params
	// hold (two vec4<u32> per array).
	ewMaxRank = 8
)

// binaryVariant is the template data of shaders/binary.wgsl.
type binaryVariant struct {
	// Op: add, sub, rsub, mul, div, floordiv, truncdiv, minimum, maximum,
	// pow, bitand, bitor, bitxor.
	Op           string
	AT, BT       string // element types of self and other: f32, i32, u8
	ABuf, BBuf   string // array element types of the bindings
	OBuf         string
	CS, CT       string // compute scalar type, and its W-wide value type
	W            int    // outputs per invocation: 1 or 4
	AVec, BVec   bool   // input read W-wide (else one element, splatted)
	Rank         int    // merged dims: 1 is plain elementwise
	Per          int    // Rank 1: outputs (of W elements) per invocation
	BScalar      bool   // other is params.s_f / s_i, not a binding
	OBind, PBind int    // binding indices of out and params
	WG           int
}

// ewParams is the Go twin of the Params struct shared by binary.wgsl,
// compare.wgsl and where.wgsl: 8 scalars then four array<vec4<u32>, 2>,
// 160 bytes with no implicit padding.
type ewParams struct {
	N      uint32 // invocations with work
	Numel  uint32 // output elements
	AlphaF float32
	AlphaI int32
	SF     float32 // a scalar operand, as f32
	SI     int32   // and as i32
	Rank   uint32  // merged rank; kernels bake it in, so this is for debugging
	_      uint32
	Dims   [ewMaxRank]uint32    // merged out dims, innermost first
	S      [3][ewMaxRank]uint32 // each input's element strides, 0 where broadcast
}

func (p *ewParams) bytes() []byte {
	var q Params
	q.U32(p.N).U32(p.Numel).F32(p.AlphaF).I32(p.AlphaI).F32(p.SF).I32(p.SI).U32(p.Rank).U32(0)
	q.U32s(p.Dims[:], ewMaxRank)
	for i := range p.S {
		q.U32s(p.S[i][:], ewMaxRank)
	}
	return q.Bytes()
}

// setShape fills Dims, S and Rank from a merged broadcast.
func (p *ewParams) setShape(dims []int64, strides [][]int64) {
	p.Rank = uint32(len(dims))
	for k := range dims {
		p.Dims[k] = uint32(dims[k])
		for i := range strides {
			p.S[i][k] = uint32(strides[i][k])
		}
	}
}

// wgslElem maps the element types the elementwise kernels handle.
func wgslElem(dt serialization.DataType) (string, bool) {
	switch dt {
	case serialization.Float32:
		return "f32", true
	case serialization.Int32:
		return "i32", true
	}
	return "", false
}

// ewElem maps an elementwise operand's dtype to its kernel element type:
// f32, i32, or u8 for bool (packed four to a u32 word).
func ewElem(dt serialization.DataType) (string, bool) {
	if dt == serialization.Bool {
		return "u8", true
	}
	return wgslElem(dt)
}

// ewBuf is the storage array element type holding elements of type t.
func ewBuf(t string) string {
	if t == "u8" {
		return "u32"
	}
	return t
}

// promote is torch's result type for the dtypes the elementwise kernels
// take: float32 beats int32 beats bool.
func promote(dts ...serialization.DataType) serialization.DataType {
	r := serialization.Bool
	for _, dt := range dts {
		switch {
		case dt == serialization.Float32:
			r = dt
		case dt == serialization.Int32 && r == serialization.Bool:
			r = dt
		}
	}
	return r
}

// ewTensor reads operand arg of an elementwise op: a float32, int32 or bool
// tensor.
func ewTensor(b Builder, args []int32, arg int) (Tensor, string, error) {
	t, err := b.Tensor(args[arg])
	if err != nil {
		return Tensor{}, "", argErr(arg, err)
	}
	s, ok := ewElem(t.DType)
	if !ok {
		return Tensor{}, "", Errorf(arg, "unsupported dtype %v (want float32, int32 or bool)", t.DType)
	}
	return t, s, nil
}

// ewScalar is a Scalar argument: its value as float64, and as int64 when
// it is integral (an Int, a Bool, or a Double with an integral value).
type ewScalar struct {
	F        float64
	I        int64
	Integral bool
}

func scalarArg(b Builder, arg int, id int32) (ewScalar, error) {
	switch b.Kind(id) {
	case serialization.KindBool:
		v, err := b.Bool(id)
		if err != nil {
			return ewScalar{}, argErr(arg, err)
		}
		if v {
			return ewScalar{F: 1, I: 1, Integral: true}, nil
		}
		return ewScalar{Integral: true}, nil
	case serialization.KindInt, serialization.KindSymInt:
		v, err := b.Int(id)
		if err != nil {
			return ewScalar{}, argErr(arg, err)
		}
		return ewScalar{F: float64(v), I: v, Integral: true}, nil
	case serialization.KindDouble:
		v, err := b.Float(id)
		if err != nil {
			return ewScalar{}, argErr(arg, err)
		}
		s := ewScalar{F: v}
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			s.I, s.Integral = int64(v), true
		}
		return s, nil
	}
	return ewScalar{}, Errorf(arg, "scalar is %v, want Int, Double or Bool", b.Kind(id))
}

// fitsInt32 reports whether v is an int32.
func fitsInt32(v int64) bool { return v == int64(int32(v)) }

func binaryOp(b Builder, op string, layout binaryLayout, args []int32) error {
	if want := layout.nargs(); len(args) != want {
		return Errorf(-1, "want %d args %s, have %d", want, layout, len(args))
	}
	outArg := len(args) - 1
	scalar := layout&layoutScalar != 0

	self, at, err := ewTensor(b, args, 0)
	if err != nil {
		return err
	}
	var other Tensor
	var bt string
	var sc ewScalar
	if scalar {
		if sc, err = scalarArg(b, 1, args[1]); err != nil {
			return err
		}
	} else if other, bt, err = ewTensor(b, args, 1); err != nil {
		return err
	}
	outT, err := b.Tensor(args[outArg])
	if err != nil {
		return argErr(outArg, err)
	}

	// Bitwise ops on bools are logical ops and produce packed bools.
	if outT.DType == serialization.Bool && !scalar {
		if logical, ok := map[string]string{"bitand": "and", "bitor": "or", "bitxor": "xor"}[op]; ok {
			if self.DType != serialization.Bool || other.DType != serialization.Bool {
				return Errorf(outArg, "out is bool, but self is %v and other %v (bool out needs bool inputs)", self.DType, other.DType)
			}
			return compareTensors(b, logical, args, self, other)
		}
	}

	if layout&layoutMode != 0 && !b.IsNull(args[2]) {
		mode, err := b.String(args[2])
		if err != nil {
			return Errorf(2, "rounding_mode: %s", argMsg(err))
		}
		switch mode {
		case "floor":
			op = "floordiv"
		case "trunc":
			op = "truncdiv"
		default:
			return Errorf(2, "rounding_mode %q (want \"floor\", \"trunc\" or Null)", mode)
		}
	}

	// The result type: torch's promotion, and float32 for true division.
	var want serialization.DataType
	switch {
	case !scalar:
		want = promote(self.DType, other.DType)
	case outT.DType == serialization.Float32 || !sc.Integral:
		// A float32 out may come from an int tensor and a float scalar
		// that happens to be stored as an Int.
		want = serialization.Float32
	default:
		want = promote(self.DType, serialization.Int32)
	}
	if op == "div" {
		want = serialization.Float32
	}
	isBit := op == "bitand" || op == "bitor" || op == "bitxor"
	if isBit && want == serialization.Float32 {
		return Errorf(-1, "bitwise ops take int32 or bool, not %v and %v", self.DType, other.DType)
	}
	if want == serialization.Bool {
		return Errorf(outArg, "%s of bools (a bool result) is not supported", op)
	}
	if outT.DType != want {
		return Errorf(outArg, "out is %v, but the result type is %v", outT.DType, want)
	}
	cs, _ := wgslElem(want)

	p := ewParams{AlphaF: 1, AlphaI: 1}
	if layout&layoutAlpha != 0 && !b.IsNull(args[2]) {
		if cs == "i32" {
			alpha, err := b.Int(args[2])
			if err != nil {
				return Errorf(2, "alpha for an int32 result: %s", argMsg(err))
			}
			if !fitsInt32(alpha) {
				return Errorf(2, "alpha %d overflows int32", alpha)
			}
			p.AlphaI = int32(alpha)
		} else {
			alpha, err := b.Float(args[2])
			if err != nil {
				return Errorf(2, "alpha: %s", argMsg(err))
			}
			p.AlphaF = float32(alpha)
		}
	}
	if scalar {
		p.SF = float32(sc.F)
		if cs == "i32" {
			if !fitsInt32(sc.I) {
				return Errorf(1, "scalar %d overflows the int32 result", sc.I)
			}
			p.SI = int32(sc.I)
		}
	}

	var dims []int64
	var strides [][]int64
	if scalar {
		if _, err := Output(b, outArg, args[outArg], want, self.Dims); err != nil {
			return err
		}
		dims, strides = coalesce(self.Dims, self.Dims)
		strides = append(strides, make([]int64, len(dims)))
	} else {
		bc, ok := BroadcastShape(self.Dims, other.Dims)
		if !ok {
			return Errorf(-1, "cannot broadcast self %v with other %v", self.Dims, other.Dims)
		}
		if _, err := Output(b, outArg, args[outArg], want, bc); err != nil {
			return err
		}
		dims, strides = coalesce(bc, self.Dims, other.Dims)
	}
	out, err := b.Tensor(args[outArg])
	if err != nil {
		return argErr(outArg, err)
	}
	if out.Numel >= 1<<32 {
		return Errorf(outArg, "%d elements exceed the kernel's 32-bit indexing", out.Numel)
	}
	if out.Numel == 0 {
		return nil
	}
	if len(dims) > ewMaxRank {
		return Errorf(outArg, "broadcast of %v and %v into %v needs %d dims after merging, the kernel holds %d",
			self.Dims, other.Dims, out.Dims, len(dims), ewMaxRank)
	}

	v := binaryVariant{Op: op, AT: at, BT: bt, CS: cs, W: 1, WG: binaryWG, Rank: len(dims), BScalar: scalar, OBind: 2, PBind: 3}
	if scalar {
		v.BT, v.OBind, v.PBind = cs, 1, 2
	}
	if dims[0]%4 == 0 {
		v.W = 4
	}
	v.AVec, v.BVec = strides[0][0] == 1, !scalar && strides[1][0] == 1
	v.CT = vecType(cs, v.W)
	v.ABuf, v.BBuf, v.OBuf = ewBuf(at), ewBuf(v.BT), vecType(cs, v.W)
	if v.AVec && at != "u8" {
		v.ABuf = vecType(at, v.W)
	}
	if v.BVec && v.BT != "u8" {
		v.BBuf = vecType(v.BT, v.W)
	}

	p.Numel = uint32(out.Numel)
	p.N = uint32(out.Numel) / uint32(v.W)
	v.Per = 1
	if v.Rank > 1 {
		p.setShape(dims, strides)
	} else if p.N >= binaryPerMin {
		v.Per = binaryPer
	}
	inputs := []int32{args[0], args[1]}
	if scalar {
		inputs = inputs[:1]
	}
	k, err := shaders.Render("binary.wgsl", v, "main", shaders.Layout(len(inputs), 1, true), binaryWG)
	if err != nil {
		return err
	}
	grid, err := Grid((uint64(p.N)+uint64(v.Per)-1)/uint64(v.Per), binaryWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	// self and other may be the same value (x*x): binding one buffer
	// read-only twice is legal.
	return b.Dispatch(k, inputs, []int32{args[outArg]}, p.bytes(), grid)
}

// argMsg is err's message without the "ops: op:" prefix an accessor's
// *ArgError would print (its Op is not filled in yet).
func argMsg(err error) string {
	if ae, ok := err.(*ArgError); ok {
		return ae.Msg
	}
	return err.Error()
}

// argErr attributes an accessor's error to argument arg.
func argErr(arg int, err error) error { return Errorf(arg, "%s", argMsg(err)) }

func vecType(s string, w int) string {
	if w == 1 {
		return s
	}
	return fmt.Sprintf("vec%d<%s>", w, s)
}

// BroadcastShape returns the NumPy/PyTorch broadcast of shapes a and b:
// right-aligned, and a size-1 dim stretches to the other's size.
func BroadcastShape(a, b []int64) ([]int64, bool) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := 1; i <= n; i++ {
		da, db := int64(1), int64(1)
		if i <= len(a) {
			da = a[len(a)-i]
		}
		if i <= len(b) {
			db = b[len(b)-i]
		}
		switch {
		case da == db, db == 1:
			out[n-i] = da
		case da == 1:
			out[n-i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// coalesceBroadcast is coalesce for two inputs.
func coalesceBroadcast(out, a, b []int64) (dims, sa, sb []int64) {
	dims, s := coalesce(out, a, b)
	return dims, s[0], s[1]
}

// coalesce describes reading each input broadcast to out (a valid
// broadcast) as few dims as possible. It returns out's dims innermost first
// and each input's element stride along them, 0 where the input is
// broadcast. Size-1 dims are dropped, and neighbours merge when every input
// steps through them as one (stride[outer] == stride[inner]*dims[inner]).
// It always returns at least one dim: a one-element out is dims [1] with
// zero strides. Inputs are contiguous and row-major.
func coalesce(out []int64, ins ...[]int64) (dims []int64, strides [][]int64) {
	full := make([][]int64, len(ins))
	for j, x := range ins {
		s := make([]int64, len(out))
		step := int64(1)
		for i := 1; i <= len(out) && i <= len(x); i++ {
			if d := x[len(x)-i]; d != 1 {
				s[len(out)-i] = step
				step *= d
			}
		}
		full[j] = s
	}
	strides = make([][]int64, len(ins))
	for i := len(out) - 1; i >= 0; i-- {
		d := out[i]
		if d == 1 {
			continue
		}
		if k := len(dims) - 1; k >= 0 {
			merge := true
			for j := range ins {
				if full[j][i] != strides[j][k]*dims[k] {
					merge = false
				}
			}
			if merge {
				dims[k] *= d
				continue
			}
		}
		dims = append(dims, d)
		for j := range ins {
			strides[j] = append(strides[j], full[j][i])
		}
	}
	if len(dims) == 0 {
		dims = []int64{1}
		for j := range ins {
			strides[j] = []int64{0}
		}
	}
	return dims, strides
}

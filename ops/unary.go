package ops

import (
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.abs.default, neg, exp, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid,
// relu, relu6, round, log10, hardswish, hardsigmoid, bitwise_not and
// logical_not (all .default) args: [self, out]
// aten.gelu.default args:       [self, approximate(String "none"|"tanh"), out]
// aten.hardtanh.default args:   [self, min_val, max_val, out]
// aten.hardshrink.default args: [self, lambd, out]
// aten.leaky_relu.default args: [self, negative_slope, out]
// aten.clamp.default args:      [self, min(Null|Int|Double), max(Null|Int|Double), out]
// aten.pow.Tensor_Scalar args:  [self, exponent, out]
//
// out has self's dims. Dtypes follow torch:
//   - exp, sqrt, rsqrt, sin, cos, tan, tanh, sigmoid, log10: self of any
//     device dtype (integers and bool promote), out float32.
//   - gelu, hardswish, hardsigmoid, leaky_relu, hardshrink: float32 only.
//   - abs, neg, round, relu, relu6, hardtanh: float32 or int32, out = self
//     (int32 abs/neg wrap at INT32_MIN like torch).
//   - clamp computes in out's dtype: float32 or int32, but a float32 self
//     cannot go to an int32 out, and an int32 out needs integral bounds.
//   - pow: float32 → float32; int32 → int32 (exponent an Int >= 0, the
//     product wraps) or int32 → float32.
//   - bitwise_not: int32, bool (logical), uint8, int8; out = self.
//   - logical_not: any device dtype in, any out (torch gives bool).
//
// NaN propagates as in torch (relu, clamp, hardtanh of NaN is NaN), round
// is round-half-to-even, and pow follows C's pow special cases (with
// torch's sqrt for ±0.5). The float32 results are within the conformance
// suite's default tolerance (1e-5 relative) of a float64 reference:
// tanh, sigmoid and gelu use overflow- and cancellation-free forms, and
// sin/cos/tan reduce every argument past pi/4 in integer arithmetic
// (Payne-Hanek, shaders/common.tmpl "num_trig"): WGSL bounds its own
// sin and cos only on [-pi, pi]. The selections (relu, the clamps, abs,
// neg, hardshrink) work on the bits, so NaN and subnormals come through
// exactly on every adapter.
//
// A float32 op of this family (not sin, cos, tan, pow) starts or joins a
// fused chain of elementwise ops when fusion applies (ops/fuse.go). Its
// formula is written once, in shaders/unary_formulas.tmpl, which the
// unfused kernel (shaders/unary.wgsl), the fused chain and the matmul
// epilogue all render, so fused and unfused compute the same float32
// operations in the same order.
func init() {
	for _, op := range []string{"abs", "neg", "exp", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid",
		"relu", "relu6", "round", "log10", "hardswish", "hardsigmoid", "bitwise_not", "logical_not"} {
		Register("aten."+op+".default", func(b Builder, args []int32) error { return unaryOp(b, op, args) })
	}
	for _, op := range []string{"gelu", "hardtanh", "hardshrink", "leaky_relu", "clamp"} {
		Register("aten."+op+".default", func(b Builder, args []int32) error { return unaryOp(b, op, args) })
	}
	Register("aten.pow.Tensor_Scalar", func(b Builder, args []int32) error { return unaryOp(b, "pow", args) })
}

const unaryWG = 256

// unaryVariant is the template data of shaders/unary.wgsl.
type unaryVariant struct {
	Op   string // formula: an op name, gelu_tanh, or copy (dtype conversion)
	X, Y string // element types of self and out: f32, i32, bool, u8, i8
	S    string // scalar type the formula computes in: f32 or i32
	T    string // S, or vec4<S> when W is 4
	W    int    // elements per invocation: 1 or 4
	// XB, YB are the bindings' array element types: f32/i32, their vec4
	// when read whole, or u32 words of four packed 1-byte elements.
	XB, YB string
	Pow    string // pow's exponent class: int, sqrt, rsqrt, frac, even, inf, nan
	WG     int
}

// unaryParams is the Go twin of unary.wgsl's Params (32 bytes).
type unaryParams struct {
	N      uint32  // invocations with work
	Numel  uint32  // elements
	AI, BI int32   // integer scalars (bounds, exponent)
	AF, BF float32 // float scalars
	NaN    float32 // a quiet NaN, which WGSL cannot spell as a constant
	Inf    float32 // +Inf, likewise
}

func (p *unaryParams) bytes() []byte {
	var q Params
	q.U32(p.N).U32(p.Numel).I32(p.AI).I32(p.BI).F32(p.AF).F32(p.BF).F32(p.NaN).F32(p.Inf)
	return q.Bytes()
}

// elemName maps the device dtypes to the kernel's element names.
func elemName(dt serialization.DataType) (string, bool) {
	switch dt {
	case serialization.Float32:
		return "f32", true
	case serialization.Int32:
		return "i32", true
	case serialization.Bool:
		return "bool", true
	case serialization.Uint8:
		return "u8", true
	case serialization.Int8:
		return "i8", true
	}
	return "", false
}

// unaryScalars is how many scalar args each op has between self and out.
var unaryScalars = map[string]int{"gelu": 1, "hardtanh": 2, "hardshrink": 1, "leaky_relu": 1, "clamp": 2, "pow": 1}

// unaryArgNames are the layouts, for errors.
var unaryArgNames = map[string]string{
	"gelu": "[self, approximate, out]", "hardtanh": "[self, min_val, max_val, out]",
	"hardshrink": "[self, lambd, out]", "leaky_relu": "[self, negative_slope, out]",
	"clamp": "[self, min, max, out]", "pow": "[self, exponent, out]",
}

func unaryOp(b Builder, op string, args []int32) error {
	ns := unaryScalars[op]
	if len(args) != ns+2 {
		layout := unaryArgNames[op]
		if layout == "" {
			layout = "[self, out]"
		}
		return Errorf(-1, "want %d args %s, have %d", ns+2, layout, len(args))
	}
	outArg := ns + 1
	in, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	outT, err := b.Tensor(args[outArg])
	if err != nil {
		return argErr(outArg, err)
	}
	x, okx := elemName(in.DType)
	y, oky := elemName(outT.DType)
	if !okx {
		return Errorf(0, "unsupported dtype %v", in.DType)
	}
	if !oky {
		return Errorf(outArg, "unsupported dtype %v", outT.DType)
	}
	v := unaryVariant{Op: op, X: x, Y: y}
	p := unaryParams{NaN: float32(math.NaN()), Inf: float32(math.Inf(1))}
	if err := unaryTypes(b, &v, &p, args, in.DType, outT.DType); err != nil {
		return err
	}
	if _, err := Output(b, outArg, args[outArg], outT.DType, in.Dims); err != nil {
		return err
	}
	return unaryDispatch(b, v, p, args[0], args[outArg], in.Numel, outArg)
}

// unaryTypes checks self's and out's dtypes for op, picks the compute type
// and reads the scalar args into p.
func unaryTypes(b Builder, v *unaryVariant, p *unaryParams, args []int32, xt, yt serialization.DataType) error {
	outArg := len(args) - 1
	f32, i32 := serialization.Float32, serialization.Int32
	needOut := func(want serialization.DataType) error {
		if yt != want {
			return Errorf(outArg, "out is %v, want %v", yt, want)
		}
		return nil
	}
	needSelf := func(want string, ok bool) error {
		if !ok {
			return Errorf(0, "unsupported dtype %v (want %s)", xt, want)
		}
		return nil
	}
	switch v.Op {
	case "exp", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "log10":
		v.S = "f32"
		return needOut(f32)
	case "gelu", "hardswish", "hardsigmoid", "leaky_relu", "hardshrink":
		v.S = "f32"
		if err := needSelf("float32", xt == f32); err != nil {
			return err
		}
		if err := needOut(f32); err != nil {
			return err
		}
		switch v.Op {
		case "gelu":
			a := "none"
			if !b.IsNull(args[1]) {
				s, err := b.String(args[1])
				if err != nil {
					return argErr(1, err)
				}
				a = s
			}
			switch a {
			case "none":
			case "tanh":
				v.Op = "gelu_tanh"
			default:
				return Errorf(1, "approximate %q (want \"none\" or \"tanh\")", a)
			}
		case "leaky_relu", "hardshrink":
			f, err := b.Float(args[1])
			if err != nil {
				return argErr(1, err)
			}
			p.AF = float32(f)
		}
		return nil
	case "abs", "neg", "round", "relu", "relu6", "hardtanh":
		if err := needSelf("float32 or int32", xt == f32 || xt == i32); err != nil {
			return err
		}
		if err := needOut(xt); err != nil {
			return err
		}
		v.S = v.X
		if v.Op == "hardtanh" {
			return unaryBounds(b, v, p, args, false)
		}
		return nil
	case "clamp":
		if err := needSelf("float32 or int32", xt == f32 || xt == i32); err != nil {
			return err
		}
		switch {
		case yt == i32 && xt == f32:
			return Errorf(outArg, "out is int32 but self is float32 (torch does not cast the float result to int)")
		case yt != f32 && yt != i32:
			return Errorf(outArg, "out is %v, want float32 or int32", yt)
		}
		v.S = v.Y
		return unaryBounds(b, v, p, args, true)
	case "pow":
		if err := needSelf("float32 or int32", xt == f32 || xt == i32); err != nil {
			return err
		}
		if yt != f32 && !(xt == i32 && yt == i32) {
			return Errorf(outArg, "out is %v, want float32 (or int32 for an int32 self)", yt)
		}
		v.S = v.Y
		return unaryPow(b, v, p, args[1])
	case "bitwise_not":
		if err := needSelf("int32, bool, uint8 or int8", xt != f32); err != nil {
			return err
		}
		v.S = "i32"
		return needOut(xt)
	case "logical_not", "copy":
		v.S = "i32"
		if xt == f32 {
			v.S = "f32"
		}
		return nil
	}
	return Errorf(-1, "unknown unary op %q", v.Op)
}

// unaryBounds reads hardtanh's or clamp's bounds (args 1 and 2); nullable
// lets them be Null (unbounded).
func unaryBounds(b Builder, v *unaryVariant, p *unaryParams, args []int32, nullable bool) error {
	for k, arg := range []int{1, 2} {
		id := args[arg]
		inf := math.Inf(2*k - 1) // -Inf for min, +Inf for max
		if nullable && b.IsNull(id) {
			if k == 0 {
				p.AF, p.AI = float32(inf), math.MinInt32
			} else {
				p.BF, p.BI = float32(inf), math.MaxInt32
			}
			continue
		}
		f, err := b.Float(id)
		if err != nil {
			return argErr(arg, err)
		}
		var iv int32
		if v.S == "i32" {
			if f != math.Trunc(f) {
				return Errorf(arg, "bound %v is not integral, but the result is int32", f)
			}
			// Bounds past the int32 range clamp nothing more than the
			// range's ends do.
			iv = int32(max(min(f, math.MaxInt32), math.MinInt32))
		}
		if k == 0 {
			p.AF, p.AI = float32(f), iv
		} else {
			p.BF, p.BI = float32(f), iv
		}
	}
	return nil
}

// unaryPow classifies pow's exponent: an integer (binary powering, exact
// for 2 and 3 as torch's x*x and x*x*x), ±0.5 (sqrt, as torch), a
// fraction, an even integer too big to loop over, ±Inf or NaN.
func unaryPow(b Builder, v *unaryVariant, p *unaryParams, id int32) error {
	e, err := b.Float(id)
	if err != nil {
		return argErr(1, err)
	}
	if v.S == "i32" {
		if e != math.Trunc(e) || e < 0 || e > math.MaxInt32 {
			return Errorf(1, "exponent %v for an int32 result: want an integer in [0, 2^31) (torch refuses negative integer powers)", e)
		}
		v.Pow, p.AI = "int", int32(e)
		return nil
	}
	// torch casts the exponent to the tensor's float type.
	e = float64(float32(e))
	p.AF = float32(e)
	switch {
	case math.IsNaN(e):
		v.Pow = "nan"
	case math.IsInf(e, 0):
		v.Pow = "inf"
	case e == 0.5:
		v.Pow = "sqrt"
	case e == -0.5:
		v.Pow = "rsqrt"
	case e == math.Trunc(e) && math.Abs(e) <= 1<<30:
		v.Pow, p.AI = "int", int32(e)
	case e == math.Trunc(e):
		v.Pow = "even" // float32 integers this large are all even
	default:
		v.Pow = "frac"
	}
	return nil
}

// unaryDispatch picks the vector width and records the kernel of v from
// tensor in to tensor out (n elements; outArg for errors).
func unaryDispatch(b Builder, v unaryVariant, p unaryParams, in, out int32, n int64, outArg int) error {
	if n >= 1<<32-4 {
		return Errorf(outArg, "%d elements exceed the kernel's 32-bit indexing", n)
	}
	if n == 0 {
		return nil
	}
	packed := func(s string) bool { return s == "bool" || s == "u8" || s == "i8" }
	// A 1-byte side forces 4 elements per invocation (one u32 word each);
	// a 4-byte side is then read as vec4 only when no tail is left.
	v.W = 1
	if n%4 == 0 || packed(v.X) || packed(v.Y) {
		v.W = 4
	}
	buf := func(s string) string {
		switch {
		case packed(s):
			return "u32"
		case v.W == 4 && n%4 == 0:
			return "vec4<" + s + ">"
		}
		return s
	}
	v.XB, v.YB, v.T, v.WG = buf(v.X), buf(v.Y), vecType(v.S, v.W), unaryWG
	p.Numel = uint32(n)
	p.N = uint32((n + int64(v.W) - 1) / int64(v.W))
	k, err := shaders.Render("unary.wgsl", v, "main", shaders.Layout(1, 1, true), unaryWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(p.N), unaryWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, []int32{in}, []int32{out}, p.bytes(), grid)
}

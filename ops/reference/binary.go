package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// The elementwise arithmetic ops:
//
//	aten.{add,sub}.Tensor, aten.{add,sub,rsub}.Scalar  [self, other, alpha, out]
//	aten.{mul,div}.Tensor, aten.{mul,div}.Scalar       [self, other, out]
//	aten.div.Tensor_mode                               [self, other, rounding_mode, out]
//	aten.{minimum,maximum}.default, aten.pow.Tensor_Tensor,
//	aten.bitwise_{and,or,xor}.Tensor                   [self, other, out]
//
// Broadcasting is done the obvious way: every output index is split into
// coordinates, and each input reads coordinate 0 along its size-1 (or
// missing leading) dims. The output shape is the broadcast of the inputs'.
//
// Operands are first converted to the compute type, as torch converts them
// to the common dtype: float32 (true division always computes in float32)
// or int32 (bool as 0/1). Integer results are computed in int64 and wrapped
// to int32; float results in float64 and rounded once to float32 by Set.
// Integer division by zero gives 0 (torch raises; the GPU op documents 0).
func init() {
	reg := func(name, op string, alpha, mode, scalar bool) {
		Register(name, func(e *Env, a []int32) error { return binaryOp(e, op, alpha, mode, scalar, a) })
	}
	reg("aten.add.Tensor", "add", true, false, false)
	reg("aten.sub.Tensor", "sub", true, false, false)
	reg("aten.mul.Tensor", "mul", false, false, false)
	reg("aten.div.Tensor", "div", false, false, false)
	reg("aten.div.Tensor_mode", "div", false, true, false)
	reg("aten.minimum.default", "minimum", false, false, false)
	reg("aten.maximum.default", "maximum", false, false, false)
	reg("aten.pow.Tensor_Tensor", "pow", false, false, false)
	reg("aten.bitwise_and.Tensor", "and", false, false, false)
	reg("aten.bitwise_or.Tensor", "or", false, false, false)
	reg("aten.bitwise_xor.Tensor", "xor", false, false, false)
	reg("aten.add.Scalar", "add", true, false, true)
	reg("aten.sub.Scalar", "sub", true, false, true)
	reg("aten.rsub.Scalar", "rsub", true, false, true)
	reg("aten.mul.Scalar", "mul", false, false, true)
	reg("aten.div.Scalar", "div", false, false, true)
}

func binaryOp(e *Env, op string, withAlpha, withMode, scalar bool, args []int32) error {
	n := 3
	if withAlpha || withMode {
		n = 4
	}
	if len(args) != n {
		return fmt.Errorf("%d args, want %d", len(args), n)
	}
	x, err := e.In(args[0])
	if err != nil {
		return err
	}
	var y *Tensor
	if scalar {
		s, err := scalarValue(e, args[1])
		if err != nil {
			return err
		}
		y = &Tensor{DType: serialization.Float64, Shape: []int64{}, V: []float64{s}}
	} else if y, err = e.In(args[1]); err != nil {
		return err
	}
	if withMode && !e.IsNull(args[2]) {
		m, err := e.String(args[2])
		if err != nil {
			return err
		}
		switch m {
		case "floor", "trunc":
			op = m
		default:
			return fmt.Errorf("rounding_mode %q", m)
		}
	}
	shape, ok := broadcastShapes(x.Shape, y.Shape)
	if !ok {
		return fmt.Errorf("cannot broadcast %v and %v", x.Shape, y.Shape)
	}
	z, err := e.NewOut(args[n-1], shape)
	if err != nil {
		return err
	}
	// The compute type: out's, except that true division is float32.
	ct := z.DType
	if op == "div" {
		ct = serialization.Float32
	}
	if ct == serialization.Bool {
		// bitwise ops on bools.
		ct = serialization.Int32
	}
	alpha := 1.0
	if withAlpha && !e.IsNull(args[2]) {
		if alpha, err = e.Float(args[2]); err != nil {
			return err
		}
		alpha = Round(ct, alpha)
	}
	xi, yi := broadcastIndex(x.Shape, z.Shape), broadcastIndex(y.Shape, z.Shape)
	for i := range z.V {
		a, b := Round(ct, x.V[xi(i)]), Round(ct, y.V[yi(i)])
		if ct == serialization.Int32 {
			z.V[i] = float64(int32(intBinary(op, int64(a), int64(b), int64(alpha))))
		} else {
			z.V[i] = floatBinary(op, a, b, alpha)
		}
	}
	e.Set(args[n-1], z)
	return nil
}

// scalarValue reads a Scalar argument: Int, Double or Bool.
func scalarValue(e *Env, id int32) (float64, error) {
	if e.Kind(id) == serialization.KindBool {
		v, err := e.Bool(id)
		if v {
			return 1, err
		}
		return 0, err
	}
	return e.Float(id)
}

// alphaBinary is add, sub, rsub and mul, which torch defines alike for
// integers and floats; ok is false for any other op.
func alphaBinary[T int64 | float64](op string, a, b, alpha T) (v T, ok bool) {
	switch op {
	case "add":
		return a + alpha*b, true
	case "sub":
		return a - alpha*b, true
	case "rsub":
		return b - alpha*a, true
	case "mul":
		return a * b, true
	}
	return 0, false
}

func intBinary(op string, a, b, alpha int64) int64 {
	if v, ok := alphaBinary(op, a, b, alpha); ok {
		return v
	}
	switch op {
	case "trunc", "floor":
		if b == 0 {
			return 0
		}
		q := a / b // Go truncates, and int64 holds INT_MIN / -1
		if op == "floor" && q*b != a && (a < 0) != (b < 0) {
			q--
		}
		return q
	case "minimum":
		return min(a, b)
	case "maximum":
		return max(a, b)
	case "pow":
		return intPow(int32(a), int32(b))
	case "and":
		return a & b
	case "or":
		return a | b
	case "xor":
		return a ^ b
	}
	panic("reference: unknown binary op " + op)
}

// intPow is torch's integer pow: square-and-multiply with int32
// wrap-around; a negative exponent gives 1 for base 1, ±1 for -1, else 0.
func intPow(a, b int32) int64 {
	if b < 0 {
		switch {
		case a == 1:
			return 1
		case a == -1 && b%2 != 0:
			return -1
		case a == -1:
			return 1
		}
		return 0
	}
	r := int32(1)
	for ; b > 0; b >>= 1 {
		if b&1 != 0 {
			r *= a
		}
		a *= a
	}
	return int64(r)
}

func floatBinary(op string, a, b, alpha float64) float64 {
	if v, ok := alphaBinary(op, a, b, alpha); ok {
		return v
	}
	switch op {
	case "div":
		return a / b
	case "trunc":
		// torch truncates the float32 quotient.
		return math.Trunc(float64(float32(a / b)))
	case "floor":
		return floorDiv(a, b)
	case "minimum", "maximum":
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		if op == "minimum" {
			return math.Min(a, b)
		}
		return math.Max(a, b)
	case "pow":
		return math.Pow(a, b)
	}
	panic("reference: unknown binary op " + op)
}

// floorDiv is Python's float floor division, written as torch's
// div_floor_floating (in float64, where it is exact for float32 operands).
func floorDiv(a, b float64) float64 {
	if b == 0 {
		return a / b
	}
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 && (b < 0) != (mod < 0) {
		div--
	}
	if div == 0 {
		return math.Copysign(0, a/b)
	}
	fd := math.Floor(div)
	if div-fd > 0.5 {
		fd++
	}
	return fd
}

// broadcastShapes is the NumPy broadcast of shapes.
func broadcastShapes(shapes ...[]int64) ([]int64, bool) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			j := n - len(s) + i
			switch {
			case d == out[j], d == 1:
			case out[j] == 1:
				out[j] = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}

// broadcastIndex returns a function from a linear index into out to the
// linear index into a tensor of shape in broadcast to out, or nil when in
// does not broadcast to out.
func broadcastIndex(in, out []int64) func(int) int {
	if len(in) > len(out) {
		return nil
	}
	lead := len(out) - len(in)
	for i, d := range in {
		if d != 1 && d != out[lead+i] {
			return nil
		}
	}
	return func(lin int) int {
		idx := 0
		stride := 1
		rest := lin
		for k := len(out) - 1; k >= 0; k-- {
			c := rest % int(out[k])
			rest /= int(out[k])
			if k >= lead {
				d := int(in[k-lead])
				if d != 1 {
					idx += c * stride
				}
				stride *= d
			}
		}
		return idx
	}
}

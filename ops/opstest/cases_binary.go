package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Short names for the two element types the elementwise ops take.
const (
	binF32 = serialization.Float32
	binI32 = serialization.Int32
)

// binaryExact asks for bit-exact float32 results: 2^-30 relative is far
// below one float32 ulp (2^-23).
var binaryExact = Tolerance{Rel: 0x1p-30}

// binaryCase is one elementwise arithmetic graph: out = op(a, b).
type binaryCase struct {
	name string
	// op: add, sub, mul, div (the .Tensor ops); floor, trunc, true
	// (div.Tensor_mode); minimum, maximum, pow, bitwise_and, bitwise_or,
	// bitwise_xor; or, with scalar set, add, sub, rsub, mul, div (.Scalar).
	op         string
	at, bt, ot serialization.DataType
	as, bs     []int64
	// alpha adds the alpha value of add/sub/rsub; nil means Int 1.
	alpha func(b *serialization.Builder) int32
	// scalar, when set, makes other this Scalar value (bt and bs unused).
	scalar func(b *serialization.Builder) int32
	// a and b, when set, give fixed input values (flat, row-major) instead
	// of random ones.
	a, b []float64
	tol  Tolerance
}

func (c binaryCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	if c.scalar != nil {
		x := b.Tensor(c.at, Dims(c.as), -1)
		z := b.Tensor(c.ot, Dims(c.as), -1)
		args := []int32{x, c.scalar(b)}
		if c.op == "add" || c.op == "sub" || c.op == "rsub" {
			args = append(args, binaryAlpha(b, c.alpha))
		}
		b.Op("aten."+c.op+".Scalar", append(args, z)...)
		b.Inputs(x)
		b.Outputs(z)
		return []*reference.Tensor{binaryInput(r, c.op, 0, c.at, c.as, c.a)}
	}
	os := binaryBroadcast(c.as, c.bs)
	x := b.Tensor(c.at, Dims(c.as), -1)
	y := b.Tensor(c.bt, Dims(c.bs), -1)
	z := b.Tensor(c.ot, Dims(os), -1)
	binaryOpCall(b, c.op, x, y, z, c.alpha)
	b.Inputs(x, y)
	b.Outputs(z)
	return []*reference.Tensor{
		binaryInput(r, c.op, 0, c.at, c.as, c.a),
		binaryInput(r, c.op, 1, c.bt, c.bs, c.b),
	}
}

func binaryAlpha(b *serialization.Builder, alpha func(*serialization.Builder) int32) int32 {
	if alpha == nil {
		return b.Int(1)
	}
	return alpha(b)
}

func binaryOpCall(b *serialization.Builder, op string, x, y, z int32, alpha func(*serialization.Builder) int32) {
	switch op {
	case "add", "sub":
		b.Op("aten."+op+".Tensor", x, y, binaryAlpha(b, alpha), z)
	case "floor", "trunc":
		b.Op("aten.div.Tensor_mode", x, y, b.String(op), z)
	case "true":
		b.Op("aten.div.Tensor_mode", x, y, b.Null(), z)
	case "minimum", "maximum":
		b.Op("aten."+op+".default", x, y, z)
	case "pow":
		b.Op("aten.pow.Tensor_Tensor", x, y, z)
	case "bitwise_and", "bitwise_or", "bitwise_xor":
		b.Op("aten."+op+".Tensor", x, y, z)
	default:
		b.Op("aten."+op+".Tensor", x, y, z)
	}
}

// binaryInput returns fixed values when given (rounded to dt), else random
// ones (operand 0 is self, 1 other): bools 0/1; floats in [-10, 10) (pow:
// a base in [0.1, 4) and an exponent in [-3, 3)); int32 over the whole
// range where results may wrap, and in [-8, 8) for division (so x/0
// occurs) and small ranges for pow.
func binaryInput(r *rand.Rand, op string, operand int, dt serialization.DataType, shape []int64, fixed []float64) *reference.Tensor {
	if fixed != nil {
		t := reference.New(dt, shape)
		for i := range t.V {
			t.V[i] = reference.Round(dt, fixed[i])
		}
		return t
	}
	switch {
	case dt == serialization.Bool:
		return RandTensor(r, dt, shape, 0, 2)
	case dt == binF32 && op == "pow" && operand == 0:
		return RandTensor(r, dt, shape, 0.1, 4)
	case dt == binF32 && op == "pow":
		return RandTensor(r, dt, shape, -3, 3)
	case dt == binF32:
		return RandTensor(r, dt, shape, -10, 10)
	case op == "div" || op == "floor" || op == "trunc" || op == "true":
		return RandTensor(r, dt, shape, -8, 8)
	case op == "pow" && operand == 0:
		return RandTensor(r, dt, shape, -5, 6)
	case op == "pow":
		return RandTensor(r, dt, shape, -2, 12)
	}
	return RandTensor(r, dt, shape, math.MinInt32, math.MaxInt32+1)
}

// broadcast is the right-aligned NumPy broadcast of two valid shapes.
func binaryBroadcast(a, b []int64) []int64 {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	for i, d := range a {
		out[n-len(a)+i] = d
	}
	for i, d := range b {
		if j := n - len(b) + i; d != 1 {
			out[j] = d
		}
	}
	return out
}

func binaryAlphaInt(v int64) func(*serialization.Builder) int32 {
	return func(b *serialization.Builder) int32 { return b.Int(v) }
}

func binaryAlphaDouble(v float64) func(*serialization.Builder) int32 {
	return func(b *serialization.Builder) int32 { return b.Double(v) }
}

func binaryAlphaNull(b *serialization.Builder) int32 { return b.Null() }

func init() {
	var cs []binaryCase
	// Shapes, as pairs (self, other), chosen to hit every kernel path:
	// same-shape scalar and vec4, a one-element input on either side,
	// row/column broadcasts with and without a vec4 inner dim, different
	// ranks, and a rank-0 other.
	pairs := [][2][]int64{
		{{1}, {1}},
		{{7}, {7}},
		{{3, 5}, {3, 5}},
		{{2, 3, 7}, {2, 3, 7}},
		{{2, 3, 8}, {2, 3, 8}},
		{{2, 3, 7}, {1}},
		{{1}, {2, 3, 8}},
		{{4, 5}, {}},
		{{}, {3, 5}},
		{{}, {}},
		{{3, 5}, {5}},
		{{6, 8}, {8}},
		{{6, 8}, {6, 1}},
		{{4, 1, 5}, {3, 1}},
		{{4, 1}, {1, 8}},
		{{2, 1, 3, 4}, {3, 1}},
		{{5, 1, 1, 3}, {4, 1}},
		// Nine dims that merge into few; eight that cannot merge, with a
		// scalar and a vec4 inner dim.
		{{1, 2, 1, 3, 1, 2, 1, 3, 2}, {2, 1, 3, 1, 2, 1, 3, 1}},
		{{2, 1, 2, 1, 2, 1, 2, 1}, {1, 3, 1, 3, 1, 3, 1, 3}},
		{{2, 1, 2, 1, 2, 1, 2, 4}, {1, 3, 1, 3, 1, 3, 1, 4}},
		// Rank 6 broadcast in every position, and a row over rank 6.
		{{2, 1, 3, 1, 5, 1}, {1, 4, 1, 3, 1, 2}},
		{{2, 3, 4, 5, 6, 7}, {7}},
		// Size 0, also from a size-1 dim broadcast against 0.
		{{0, 3}, {3}},
		{{6, 1}, {1, 0}},
		// Many workgroups on each path.
		{{1000, 257}, {1000, 257}},
		{{300, 1001}, {1001}},
		{{256, 1024}, {256, 1}},
		// Over 2^16 invocations of the rank-1 kernel: 4 per invocation
		// (vec4, and scalar with a single-element other), with a tail.
		{{4, 65539}, {4, 65539}},
		{{262147}, {1}},
	}
	for _, op := range []string{"add", "sub", "mul", "div"} {
		for _, p := range pairs {
			cs = append(cs, binaryCase{op: op, at: binF32, bt: binF32, ot: binF32, as: p[0], bs: p[1]})
		}
		// Integer and mixed element types on a few paths.
		intOut := binI32
		if op == "div" {
			intOut = binF32
		}
		for _, p := range [][2][]int64{{{7}, {7}}, {{2, 3, 8}, {2, 3, 8}}, {{3, 5}, {5}}, {{4, 1, 5}, {3, 1}}, {{6, 8}, {1}}} {
			cs = append(cs,
				binaryCase{op: op, at: binI32, bt: binI32, ot: intOut, as: p[0], bs: p[1]},
				binaryCase{op: op, at: binI32, bt: binF32, ot: binF32, as: p[0], bs: p[1]},
				binaryCase{op: op, at: binF32, bt: binI32, ot: binF32, as: p[1], bs: p[0]},
			)
		}
	}
	// alpha as Int, Double (integral or not), negative, and Null.
	for _, op := range []string{"add", "sub"} {
		for _, a := range []struct {
			name  string
			alpha func(*serialization.Builder) int32
			dt    serialization.DataType
		}{
			{"int2", binaryAlphaInt(2), binF32},
			{"double0.5", binaryAlphaDouble(0.5), binF32},
			{"null", binaryAlphaNull, binF32},
			{"int-3", binaryAlphaInt(-3), binI32},
			{"double2", binaryAlphaDouble(2), binI32},
			{"null", binaryAlphaNull, binI32},
		} {
			for _, p := range [][2][]int64{{{3, 8}, {3, 8}}, {{4, 1, 5}, {3, 1}}} {
				cs = append(cs, binaryCase{name: "alpha=" + a.name, op: op, at: a.dt, bt: a.dt, ot: a.dt,
					as: p[0], bs: p[1], alpha: a.alpha})
			}
		}
	}
	// int32 wrap-around at the edges of the range.
	const maxI, minI = math.MaxInt32, math.MinInt32
	edge := []float64{maxI, minI, maxI, minI, -1, 0, 1 << 30, 46341}
	cs = append(cs,
		binaryCase{name: "wrap", op: "add", at: binI32, bt: binI32, ot: binI32, as: []int64{8}, bs: []int64{8},
			a: edge, b: []float64{1, -1, maxI, minI, minI, minI, 1 << 30, 46341}},
		binaryCase{name: "wrap", op: "sub", at: binI32, bt: binI32, ot: binI32, as: []int64{8}, bs: []int64{8},
			a: edge, b: []float64{-1, 1, minI, maxI, maxI, minI, -(1 << 30), -46341}},
		binaryCase{name: "wrap", op: "mul", at: binI32, bt: binI32, ot: binI32, as: []int64{8}, bs: []int64{8},
			a: edge, b: []float64{2, 2, maxI, minI, minI, 7, 4, 46341}},
		binaryCase{name: "wrap_alpha", op: "add", at: binI32, bt: binI32, ot: binI32, as: []int64{8}, bs: []int64{1},
			a: edge, b: []float64{maxI}, alpha: binaryAlphaInt(3)},
	)
	// IEEE division by (signed) zero, and infinities and NaN passing
	// through: 1/0 = inf, -1/0 = -inf, 0/0 = nan, 1/-0 = -inf, x/inf = 0.
	inf, nan := math.Inf(1), math.NaN()
	cs = append(cs,
		binaryCase{name: "ieee", op: "div", at: binF32, bt: binF32, ot: binF32, as: []int64{10}, bs: []int64{10},
			a: []float64{1, -1, 0, 0, 5, -5, 3, inf, nan, inf},
			b: []float64{0, 0, 0, math.Copysign(0, -1), math.Copysign(0, -1), inf, nan, 2, 1, inf}},
		binaryCase{name: "ieee", op: "div", at: binI32, bt: binI32, ot: binF32, as: []int64{5}, bs: []int64{5},
			a: []float64{1, -1, 0, 7, minI}, b: []float64{0, 0, 0, -2, -1}},
		binaryCase{name: "ieee", op: "mul", at: binF32, bt: binF32, ot: binF32, as: []int64{4}, bs: []int64{4},
			a: []float64{inf, inf, nan, 0}, b: []float64{0, -2, 1, -inf}},
		binaryCase{name: "ieee", op: "add", at: binF32, bt: binF32, ot: binF32, as: []int64{4}, bs: []int64{4},
			a: []float64{inf, inf, nan, 3.4e38}, b: []float64{-inf, 1, 1, 3.4e38}},
	)
	for _, c := range cs {
		// IEEE add, sub, mul and div are correctly rounded, and so is the
		// reference (float64 then one rounding to float32 is exact for
		// these four), so float32 inputs must match bit for bit. alpha is
		// a power of two here, so a fused multiply-add changes nothing.
		// Mixed inputs round the int32 to float32 first, as torch does,
		// so they keep the default tolerance.
		if c.tol == (Tolerance{}) && c.at == binF32 && c.bt == binF32 {
			c.tol = binaryExact
		}
		Cases = append(Cases, Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol})
	}

	Cases = append(Cases, binaryMoreCases()...)
	Cases = append(Cases,
		Case{Name: "mul/same_id", Build: binarySquare},
		Case{Name: "add/same_id_int32", Build: binarySameIDInt},
		Case{Name: "sub/negative_zero", Build: binaryNegativeZero},
		Case{Name: "add/const_other", Build: binaryConstOther},
		Case{Name: "mul/const_self_scalar", Build: binaryConstSelfScalar},
		Case{Name: "add/chain", Build: binaryChain},
	)
}

func binaryCaseName(c binaryCase) string {
	op := c.op
	switch {
	case c.scalar != nil:
		op += "_scalar"
	case op == "floor" || op == "trunc" || op == "true":
		op = "div_" + op
	}
	n := op + "/"
	if c.name != "" {
		n += c.name + "/"
	}
	if c.scalar != nil {
		return n + c.at.String() + "_" + c.ot.String() + "/" + binaryShapeName(c.as)
	}
	n += c.at.String() + "_" + c.bt.String() + "_" + c.ot.String() + "/" + binaryShapeName(c.as) + "+" + binaryShapeName(c.bs)
	return n
}

func binaryShapeName(s []int64) string {
	if len(s) == 0 {
		return "rank0"
	}
	return shapeName(s)
}

// binarySquare computes x*x with both args the same value id.
func binarySquare(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(binF32, []uint32{5, 7}, -1)
	y := b.Tensor(binF32, []uint32{5, 7}, -1)
	b.Op("aten.mul.Tensor", x, x, y)
	b.Inputs(x)
	b.Outputs(y)
	return []*reference.Tensor{RandTensor(r, binF32, []int64{5, 7}, -10, 10)}
}

// binarySameIDInt computes x + 2x in int32 with both args the same value id.
func binarySameIDInt(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(binI32, []uint32{16}, -1)
	y := b.Tensor(binI32, []uint32{16}, -1)
	b.Op("aten.add.Tensor", x, x, b.Int(2), y)
	b.Inputs(x)
	b.Outputs(y)
	return []*reference.Tensor{RandTensor(r, binI32, []int64{16}, math.MinInt32, math.MaxInt32+1)}
}

// binaryNegativeZero makes signed zeros with sub and add and shows their
// sign by dividing 1 by them: -0 must give -inf, +0 +inf. Compare alone
// cannot tell -0 from +0.
func binaryNegativeZero(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	negz := math.Copysign(0, -1)
	// a - b: -0-0 = -0, 0-0 = +0, -0-(-0) = +0, 0-(-0) = +0.
	// a + b (second op): -0+-0 = -0, -0+0 = +0.
	av := []float64{negz, 0, negz, 0, negz, negz, 0, 5}
	bv := []float64{0, 0, negz, negz, negz, 0, negz, 5}
	sh := []uint32{8}
	a := b.Tensor(binF32, sh, -1)
	bb := b.Tensor(binF32, sh, -1)
	one := b.Tensor(binF32, []uint32{1}, -1)
	d := b.Tensor(binF32, sh, -1)
	s := b.Tensor(binF32, sh, -1)
	q1 := b.Tensor(binF32, sh, -1)
	q2 := b.Tensor(binF32, sh, -1)
	b.Op("aten.sub.Tensor", a, bb, b.Int(1), d)
	b.Op("aten.add.Tensor", a, bb, b.Null(), s)
	b.Op("aten.div.Tensor", one, d, q1)
	b.Op("aten.div.Tensor", one, s, q2)
	b.Inputs(a, bb, one)
	b.Outputs(d, s, q1, q2)
	ta, tb, t1 := reference.New(binF32, []int64{8}), reference.New(binF32, []int64{8}), reference.New(binF32, []int64{1})
	copy(ta.V, av)
	copy(tb.V, bv)
	t1.V[0] = 1
	return []*reference.Tensor{ta, tb, t1}
}

// binaryConstOther adds a named-data constant used directly (no prepack),
// broadcast along rows.
func binaryConstOther(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	w := RandTensor(r, binF32, []int64{12}, -1, 1)
	c, _ := b.NamedConst(binF32, Dims(w.Shape), w.Encode())
	x := b.Tensor(binF32, []uint32{3, 12}, -1)
	y := b.Tensor(binF32, []uint32{3, 12}, -1)
	b.Op("aten.add.Tensor", x, c, b.Double(0.5), y)
	b.Inputs(x)
	b.Outputs(y)
	return []*reference.Tensor{RandTensor(r, binF32, []int64{3, 12}, -10, 10)}
}

// binaryConstSelfScalar multiplies an inline one-element int32 constant (as
// self) by a float32 input.
func binaryConstSelfScalar(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	k := reference.New(binI32, []int64{1})
	k.V[0] = -3
	c := b.InlineConst(binI32, []uint32{1}, k.Encode())
	x := b.Tensor(binF32, []uint32{2, 9}, -1)
	y := b.Tensor(binF32, []uint32{2, 9}, -1)
	b.Op("aten.mul.Tensor", c, x, y)
	b.Inputs(x)
	b.Outputs(y)
	return []*reference.Tensor{RandTensor(r, binF32, []int64{2, 9}, -10, 10)}
}

// binaryChain runs ops back to back through shared (mem_obj_id) buffers:
// relu((x*y - x) / y) + sigmoid(x), so dispatches read earlier ones' output.
func binaryChain(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	sh := []uint32{4, 6}
	x := b.Tensor(binF32, sh, -1)
	y := b.Tensor(binF32, []uint32{6}, -1)
	m := b.Tensor(binF32, sh, 0)
	s := b.Tensor(binF32, sh, 1)
	d := b.Tensor(binF32, sh, 0)
	rl := b.Tensor(binF32, sh, 1)
	sg := b.Tensor(binF32, sh, 0)
	out := b.Tensor(binF32, sh, -1)
	b.Op("aten.mul.Tensor", x, y, m)
	b.Op("aten.sub.Tensor", m, x, b.Int(1), s)
	b.Op("aten.div.Tensor", s, y, d)
	b.Op("aten.relu.default", d, rl)
	b.Op("aten.sigmoid.default", x, sg)
	b.Op("aten.add.Tensor", rl, sg, b.Null(), out)
	b.Inputs(x, y)
	b.Outputs(out)
	return []*reference.Tensor{RandTensor(r, binF32, []int64{4, 6}, -5, 5), RandTensor(r, binF32, []int64{6}, 0.5, 3)}
}

// binaryPowTol: pow is exp2(y*log2|x|) in float32, whose error grows with
// |y*log2|x|| (about 2^-24 of it, relative, before exp2's own error); the
// cases keep that product below about 100.
var binaryPowTol = Tolerance{Abs: 1e-6, Rel: 3e-5}

// binaryMoreCases covers div.Tensor_mode, minimum, maximum, pow, the
// bitwise ops, the .Scalar ops and bool operands.
func binaryMoreCases() []Case {
	const maxI, minI = math.MaxInt32, math.MinInt32
	inf, nan, negz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	b, i, f := serialization.Bool, binI32, binF32
	// Shapes with broadcasting in every position, rank 0 and 6, and size 0.
	pairs := [][2][]int64{
		{{13}, {13}},
		{{2, 3, 8}, {2, 3, 8}},
		{{}, {}},
		{{5, 7}, {}},
		{{}, {3, 4}},
		{{3, 1, 5}, {1, 4, 1}},
		{{1, 4, 1}, {3, 1, 8}},
		{{2, 1, 3, 1, 5, 2}, {1, 4, 1, 3, 1, 2}},
		{{0, 3}, {3}},
	}
	var cs []binaryCase
	for _, op := range []string{"floor", "trunc", "true", "minimum", "maximum", "pow"} {
		for _, p := range pairs {
			cs = append(cs, binaryCase{op: op, at: f, bt: f, ot: f, as: p[0], bs: p[1]})
		}
		intOut := i
		if op == "true" {
			intOut = f
		}
		for _, p := range pairs[:7] {
			cs = append(cs, binaryCase{op: op, at: i, bt: i, ot: intOut, as: p[0], bs: p[1]})
		}
		cs = append(cs,
			binaryCase{op: op, at: i, bt: f, ot: f, as: []int64{4, 1, 5}, bs: []int64{3, 1}},
			binaryCase{op: op, at: f, bt: i, ot: f, as: []int64{6, 8}, bs: []int64{8}},
		)
	}
	for _, op := range []string{"bitwise_and", "bitwise_or", "bitwise_xor"} {
		for _, p := range pairs {
			cs = append(cs,
				binaryCase{op: op, at: i, bt: i, ot: i, as: p[0], bs: p[1]},
				binaryCase{op: op, at: b, bt: b, ot: b, as: p[0], bs: p[1]},
			)
		}
		cs = append(cs,
			binaryCase{op: op, at: b, bt: i, ot: i, as: []int64{3, 1, 5}, bs: []int64{1, 4, 1}},
			binaryCase{op: op, at: i, bt: b, ot: i, as: []int64{2, 3, 8}, bs: []int64{8}},
		)
	}
	// bool operands of arithmetic (a mask times a float), on the W=4 word
	// read, the splatted element and the strided element paths.
	for _, p := range [][2][]int64{{{2, 3, 8}, {2, 3, 8}}, {{4, 1, 8}, {3, 1}}, {{2, 3, 7}, {2, 3, 7}}, {{4, 1, 5}, {3, 1}}} {
		cs = append(cs,
			binaryCase{op: "mul", at: b, bt: f, ot: f, as: p[0], bs: p[1]},
			binaryCase{op: "add", at: f, bt: b, ot: f, as: p[0], bs: p[1]},
			binaryCase{op: "mul", at: b, bt: i, ot: i, as: p[0], bs: p[1]},
		)
	}

	// Edges of floor and trunc division: 1 // 0.1 is 9 (1/0.1 rounds to
	// 10), inf // 2 is nan, -5 // inf is -1, signed zeros, x // 0.
	fa := []float64{1, inf, -5, 5, negz, 0, 3, -3, 0, nan, 7, -7, 7.5, -7.5, 1e-30, -1, 5, 2.5, 1, -1}
	fb := []float64{0.1, 2, inf, inf, 3, -3, 0, 0, 0, 1, -2, 2, 2.5, 2.5, 1e30, 3, -inf, -0.5, 0.3, 0.3}
	// int32: exact division, signs, by zero (0), INT_MIN // -1 (wraps).
	ia := []float64{7, -7, 7, -7, 0, 5, -5, minI, minI, maxI, 1, -1, 6, -6}
	ib := []float64{2, 2, -2, -2, 3, 0, 0, -1, 1, -1, minI, minI, 3, 3}
	n := func(v []float64) []int64 { return []int64{int64(len(v))} }
	for _, op := range []string{"floor", "trunc"} {
		cs = append(cs,
			binaryCase{name: "edges", op: op, at: f, bt: f, ot: f, as: n(fa), bs: n(fb), a: fa, b: fb},
			binaryCase{name: "edges", op: op, at: i, bt: i, ot: i, as: n(ia), bs: n(ib), a: ia, b: ib},
		)
	}
	// Quotients within a rounding of an integer, from either side: x is
	// n*y rounded to float32, so floor(x/y) in float32 is often off by one
	// and the kernel's exact remainder test must catch it.
	nr := rand.New(rand.NewPCG(7, 7))
	na, nb := make([]float64, 999), make([]float64, 999)
	for k := range na {
		y := float64(float32((0.01 + 3*nr.Float64()) * float64(1-2*nr.IntN(2))))
		nb[k], na[k] = y, float64(float32(float64(nr.IntN(1001)-500)*y))
	}
	cs = append(cs,
		binaryCase{name: "near_integer", op: "floor", at: f, bt: f, ot: f, as: n(na), bs: n(nb), a: na, b: nb},
		binaryCase{name: "near_integer", op: "trunc", at: f, bt: f, ot: f, as: n(na), bs: n(nb), a: na, b: nb},
	)
	ma := []float64{nan, 1, nan, inf, -inf, 0, negz, 3, 1e38, -1e-38}
	mb := []float64{1, nan, nan, -inf, 5, 5, -5, 3, -1e38, 1e-38}
	for _, op := range []string{"minimum", "maximum"} {
		cs = append(cs,
			binaryCase{name: "edges", op: op, at: f, bt: f, ot: f, as: n(ma), bs: n(mb), a: ma, b: mb},
			binaryCase{name: "edges", op: op, at: i, bt: i, ot: i, as: []int64{4}, bs: []int64{4},
				a: []float64{minI, maxI, -1, 0}, b: []float64{maxI, minI, 0, -1}},
		)
	}
	nba := make([]float64, 35)
	for k := range nba {
		nba[k] = float64(float32(8*nr.Float64() - 4))
	}
	pa := []float64{0, 0, negz, negz, 2, -2, -2, -2, 1, nan, nan, inf, -inf, -inf, 0.5, 2, -1, -1, 3, 4, -8, 10, inf, 0, -3, 2}
	pb := []float64{0, -1, -3, 3, 0.5, 3, 2, 0.5, nan, 0, 1, -2, 3, 2, inf, -inf, inf, -inf, -2, 0.5, 1.0 / 3, 30, 0.5, 2.5, 5, -20}
	cs = append(cs,
		binaryCase{name: "edges", op: "pow", at: f, bt: f, ot: f, as: n(pa), bs: n(pb), a: pa, b: pb},
		// Bases of either sign to integral int32 powers.
		binaryCase{name: "negative_base", op: "pow", at: f, bt: i, ot: f, as: []int64{7, 5}, bs: []int64{5}, a: nba, b: []float64{-5, -2, 3, 6, 7}},
		// int32 pow: wrap-around (2^31, 3^40), negative exponents, 0^0.
		binaryCase{name: "edges", op: "pow", at: i, bt: i, ot: i, as: []int64{13}, bs: []int64{13},
			a: []float64{2, 2, 3, -3, 1, -1, -1, 0, 0, 2, 5, -2, 7},
			b: []float64{10, 31, 40, 3, -5, -3, -4, 0, -1, -1, 0, 31, 2}},
		binaryCase{name: "edges", op: "bitwise_xor", at: i, bt: i, ot: i, as: []int64{4}, bs: []int64{4},
			a: []float64{minI, maxI, -1, 0}, b: []float64{-1, minI, 1, 0}},
	)

	// The .Scalar ops: Int, Double (integral or not), Bool scalars; alpha.
	sInt := func(v int64) func(*serialization.Builder) int32 {
		return func(b *serialization.Builder) int32 { return b.Int(v) }
	}
	sDbl := func(v float64) func(*serialization.Builder) int32 {
		return func(b *serialization.Builder) int32 { return b.Double(v) }
	}
	sBool := func(b *serialization.Builder) int32 { return b.Bool(true) }
	type sc struct {
		op     string
		at, ot serialization.DataType
		scalar func(*serialization.Builder) int32
		alpha  func(*serialization.Builder) int32
		exact  bool
	}
	for _, c := range []sc{
		{"add", f, f, sDbl(2.5), nil, true},
		{"add", f, f, sInt(3), binaryAlphaDouble(-2), true},
		{"add", i, i, sInt(3), binaryAlphaInt(-2), false},
		{"add", i, f, sDbl(2.5), nil, false},
		{"add", b, i, sInt(3), nil, false},
		{"add", i, i, sBool, binaryAlphaNull, false},
		{"sub", f, f, sDbl(0.75), binaryAlphaDouble(4), true},
		{"sub", i, i, sInt(-7), binaryAlphaInt(3), false},
		{"rsub", f, f, sDbl(1), binaryAlphaDouble(0.5), true},
		{"rsub", i, i, sInt(1), nil, false},
		{"rsub", f, f, sInt(2), binaryAlphaNull, true},
		{"mul", f, f, sDbl(-1.5), nil, true},
		{"mul", i, i, sInt(7), nil, false},
		{"mul", i, f, sDbl(0.5), nil, false},
		{"div", f, f, sDbl(3), nil, true},
		{"div", f, f, sDbl(0), nil, true},
		{"div", i, f, sInt(2), nil, false},
		{"div", i, f, sInt(0), nil, false},
	} {
		for _, sh := range [][]int64{{}, {13}, {2, 3, 8}, {2, 1, 3, 1, 5, 2}, {0, 4}} {
			bc := binaryCase{op: c.op, at: c.at, ot: c.ot, as: sh, scalar: c.scalar, alpha: c.alpha, tol: DefaultTolerance[f]}
			if c.exact {
				bc.tol = binaryExact
			}
			cs = append(cs, bc)
		}
	}
	// Scalar edges: NaN, inf and the wrap of int32 alpha*other.
	cs = append(cs,
		binaryCase{name: "edges", op: "mul", at: f, ot: f, as: n(ma), a: ma, scalar: sDbl(inf), tol: binaryExact},
		binaryCase{name: "edges", op: "add", at: i, ot: i, as: []int64{4}, a: []float64{maxI, minI, 0, -1},
			scalar: sInt(maxI), alpha: binaryAlphaInt(2)},
	)

	var out []Case
	for _, c := range cs {
		// Division with a rounding mode, minimum, maximum and the bitwise
		// ops are exact; float32 pow goes through exp2 and log2.
		if c.tol == (Tolerance{}) && c.at == f && c.bt == f {
			c.tol = binaryExact
			if c.op == "pow" {
				c.tol = binaryPowTol
			}
		}
		if c.op == "pow" && c.ot == f && c.tol == (Tolerance{}) {
			c.tol = binaryPowTol
		}
		out = append(out, Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol})
	}
	return out
}

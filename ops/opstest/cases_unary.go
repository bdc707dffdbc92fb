package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Dtype short names for the elementwise cases.
const (
	uF32  = serialization.Float32
	uI32  = serialization.Int32
	uBool = serialization.Bool
	uU8   = serialization.Uint8
	uI8   = serialization.Int8
)

// Every case here passes at the float32 DefaultTolerance (1e-6 abs +
// 1e-5 rel), transcendental ones included (llvmpipe's exp/log2/sin/cos
// are within a few ulp, and the kernel avoids the cancellations of naive
// formulas), so none sets Tol.

// unaryCase is one elementwise graph: out = op(x, scalars...).
type unaryCase struct {
	name    string // optional qualifier
	op      string // full op name, e.g. aten.abs.default
	scalars func(b *serialization.Builder) []int32
	xt, yt  serialization.DataType
	shape   []int64
	lo, hi  float64   // random input range
	fixed   []float64 // fixed inputs (cycled over the shape) instead of random ones
}

func (c unaryCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(c.xt, Dims(c.shape), -1)
	y := b.Tensor(c.yt, Dims(c.shape), -1)
	args := []int32{x}
	if c.scalars != nil {
		args = append(args, c.scalars(b)...)
	}
	b.Op(c.op, append(args, y)...)
	b.Inputs(x)
	b.Outputs(y)
	return []*reference.Tensor{unaryInput(r, c.xt, c.shape, c.lo, c.hi, c.fixed)}
}

// unaryInput returns fixed values (cycled) when given, else random ones.
func unaryInput(r *rand.Rand, dt serialization.DataType, shape []int64, lo, hi float64, fixed []float64) *reference.Tensor {
	if fixed == nil {
		return RandTensor(r, dt, shape, lo, hi)
	}
	t := reference.New(dt, shape)
	for i := range t.V {
		t.V[i] = reference.Round(dt, fixed[i%len(fixed)])
	}
	return t
}

func (c unaryCase) caseName() string {
	name := c.op[len("aten."):]
	if c.name != "" {
		name += "/" + c.name
	}
	name += "/" + c.xt.String()
	if c.yt != c.xt {
		name += "-" + c.yt.String()
	}
	sh := shapeName(c.shape)
	if len(c.shape) == 0 {
		sh = "scalar"
	}
	return name + "/" + sh
}

// Scalar-arg builders.
func uDouble(vs ...float64) func(*serialization.Builder) []int32 {
	return func(b *serialization.Builder) []int32 {
		ids := make([]int32, len(vs))
		for i, v := range vs {
			ids[i] = b.Double(v)
		}
		return ids
	}
}

func uArgs(f ...func(*serialization.Builder) int32) func(*serialization.Builder) []int32 {
	return func(b *serialization.Builder) []int32 {
		ids := make([]int32, len(f))
		for i, g := range f {
			ids[i] = g(b)
		}
		return ids
	}
}

func uInt(v int64) func(*serialization.Builder) int32 {
	return func(b *serialization.Builder) int32 { return b.Int(v) }
}

func uDbl(v float64) func(*serialization.Builder) int32 {
	return func(b *serialization.Builder) int32 { return b.Double(v) }
}

func uNull(b *serialization.Builder) int32 { return b.Null() }

func uStr(s string) func(*serialization.Builder) []int32 {
	return func(b *serialization.Builder) []int32 { return []int32{b.String(s)} }
}

// unaryShapes reach every kernel path: rank 0, an odd count (scalar
// kernel), a multiple of 4 (vec4 kernel), rank 6 with size-1 dims (90
// elements, scalar) and rank 5 (vec4), and an empty tensor.
var unaryShapes = [][]int64{{}, {7}, {4}, {2, 3, 1, 5, 1, 3}, {2, 1, 3, 2, 2}, {33, 13}, {3, 0, 2}}

var (
	uInf  = math.Inf(1)
	uNaN  = math.NaN()
	uNegZ = math.Copysign(0, -1)
	// uSpecial are float edge values: signed zeros, infinities, NaN,
	// tiny and huge magnitudes.
	uSpecial = []float64{0, uNegZ, 1, -1, 0.5, -0.5, 1e-30, -1e-30, 1e30, -1e30, 3e38, -3e38, uInf, -uInf, uNaN, 100, -100, 7.25, -7.25}
)

func init() {
	var cs []unaryCase
	add := func(c unaryCase) { cs = append(cs, c) }
	// float ops over the shapes, on random values in a sensible range.
	type fop struct {
		op     string
		name   string
		lo, hi float64
		sc     func(*serialization.Builder) []int32
	}
	fops := []fop{
		{op: "abs", lo: -100, hi: 100},
		{op: "neg", lo: -100, hi: 100},
		{op: "exp", lo: -30, hi: 30},
		{op: "sqrt", lo: 0, hi: 1000},
		{op: "rsqrt", lo: 1e-3, hi: 1000},
		{op: "sin", lo: -10, hi: 10},
		{op: "cos", lo: -10, hi: 10},
		{op: "tan", lo: -1.4, hi: 1.4},
		{op: "tanh", lo: -5, hi: 5},
		{op: "sigmoid", lo: -20, hi: 20},
		{op: "relu", lo: -10, hi: 10},
		{op: "relu6", lo: -3, hi: 9},
		{op: "round", lo: -100, hi: 100},
		{op: "log10", lo: 1e-3, hi: 1e4},
		{op: "hardswish", lo: -6, hi: 6},
		{op: "hardsigmoid", lo: -6, hi: 6},
		{op: "gelu", name: "none", lo: -8, hi: 8, sc: uStr("none")},
		{op: "gelu", name: "tanh", lo: -8, hi: 8, sc: uStr("tanh")},
		{op: "hardtanh", lo: -3, hi: 3, sc: uDouble(-1, 1)},
		{op: "hardshrink", lo: -2, hi: 2, sc: uDouble(0.5)},
		{op: "leaky_relu", lo: -10, hi: 10, sc: uDouble(0.01)},
		{op: "clamp", lo: -10, hi: 10, sc: uDouble(-2.5, 3.25)},
	}
	for _, f := range fops {
		for _, sh := range unaryShapes {
			add(unaryCase{name: f.name, op: "aten." + f.op + ".default", scalars: f.sc, xt: uF32, yt: uF32, shape: sh, lo: f.lo, hi: f.hi})
		}
		// Edge values, through the scalar (19 elements) and vec4 (76)
		// kernels.
		for _, n := range []int64{int64(len(uSpecial)), 76} {
			add(unaryCase{name: join(f.name, "special"), op: "aten." + f.op + ".default", scalars: f.sc, xt: uF32, yt: uF32,
				shape: []int64{n}, fixed: uSpecial})
		}
	}
	// Per-op edge values beyond uSpecial.
	add(unaryCase{name: "halves", op: "aten.round.default", xt: uF32, yt: uF32, shape: []int64{13},
		fixed: []float64{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 0.49999997, 8388607.5, -8388608.5, 1e7, 2.5000002}})
	add(unaryCase{name: "near1", op: "aten.log10.default", xt: uF32, yt: uF32, shape: []int64{8},
		fixed: []float64{1, 1.0000001, 0.9999999, 10, 100, 0.1, 1.2e-38, 1e38}})
	add(unaryCase{name: "wide", op: "aten.exp.default", xt: uF32, yt: uF32, shape: []int64{12},
		fixed: []float64{88, 88.7, 89, -87, -103, -104, -110, 1e-7, -1e-7, 10.5, -10.5, 0.69314718}})
	add(unaryCase{name: "none/tails", op: "aten.gelu.default", scalars: uStr("none"), xt: uF32, yt: uF32, shape: []int64{10},
		fixed: []float64{-3, -5, -7, -9, -12, -20, 3, 5, 1e-4, -1e-4}})
	add(unaryCase{name: "tanh/tails", op: "aten.gelu.default", scalars: uStr("tanh"), xt: uF32, yt: uF32, shape: []int64{10},
		fixed: []float64{-3, -5, -7, -9, -12, -20, 3, 5, 1e-4, -1e-4}})
	// Large arguments: the kernel reduces every argument past pi/4 in
	// integers (WGSL bounds its own sin/cos only on [-pi, pi]), here
	// around 2^20 (where llvmpipe's own reduction used to stop), through
	// the largest float32 and at float32s close to multiples of pi/2 (the
	// hardest to reduce), on the scalar and vec4 kernels; numerics/...
	// has many more.
	large := []float64{30, -60, 100, 1000, 1e4, 1e5, 1e6, 3.14159265, 1.5707963, 1e-20, 1e7, -1e7,
		1048575.9, 1048576, -1048577, 1e8, -1e9, 1e12, 1e20, -1e30, 3.4e38, -3.4028235e38,
		16331239353195370, 102940.4, 5.2e8, 1.1e10, 0.5 * math.MaxFloat32, 8.6e37}
	for _, op := range []string{"sin", "cos", "tan"} {
		for _, n := range []int64{int64(len(large)), 4 * int64(len(large))} {
			add(unaryCase{name: "large", op: "aten." + op + ".default", xt: uF32, yt: uF32, shape: []int64{n},
				fixed: large})
		}
	}
	add(unaryCase{name: "small", op: "aten.tanh.default", xt: uF32, yt: uF32, shape: []int64{12},
		fixed: []float64{1e-3, -1e-3, 0.1, -0.3, 0.6, 0.62, 0.63, -0.7, 9, 10, 20, -50}})
	add(unaryCase{name: "boundaries", op: "aten.hardshrink.default", scalars: uDouble(0.5), xt: uF32, yt: uF32,
		shape: []int64{6}, fixed: []float64{0.5, -0.5, 0.50000006, -0.50000006, 0, 0.25}})
	add(unaryCase{name: "int_lambd", op: "aten.hardshrink.default", scalars: uArgs(uInt(1)), xt: uF32, yt: uF32,
		shape: []int64{7}, lo: -3, hi: 3})
	add(unaryCase{name: "slope0.2", op: "aten.leaky_relu.default", scalars: uDouble(0.2), xt: uF32, yt: uF32,
		shape: []int64{16}, lo: -5, hi: 5})
	add(unaryCase{name: "0_6", op: "aten.hardtanh.default", scalars: uArgs(uInt(0), uInt(6)), xt: uF32, yt: uF32,
		shape: []int64{9}, lo: -3, hi: 9})

	// int32 variants.
	full := func(op string, sc func(*serialization.Builder) []int32, sh []int64) unaryCase {
		return unaryCase{op: "aten." + op + ".default", scalars: sc, xt: uI32, yt: uI32, shape: sh, lo: math.MinInt32, hi: math.MaxInt32 + 1}
	}
	for _, sh := range [][]int64{{}, {7}, {2, 1, 3, 2, 2}} {
		add(full("abs", nil, sh))
		add(full("neg", nil, sh))
		add(full("relu", nil, sh))
		add(full("round", nil, sh))
		add(full("bitwise_not", nil, sh))
		add(unaryCase{op: "aten.relu6.default", xt: uI32, yt: uI32, shape: sh, lo: -10, hi: 10})
		add(unaryCase{op: "aten.hardtanh.default", scalars: uArgs(uInt(-3), uInt(4)), xt: uI32, yt: uI32, shape: sh, lo: -10, hi: 10})
		add(unaryCase{op: "aten.clamp.default", scalars: uArgs(uInt(-3), uInt(4)), xt: uI32, yt: uI32, shape: sh, lo: -10, hi: 10})
	}
	intEdges := []float64{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, math.MaxInt32}
	for _, op := range []string{"abs", "neg", "relu", "bitwise_not", "relu6"} {
		add(unaryCase{name: "special", op: "aten." + op + ".default", xt: uI32, yt: uI32, shape: []int64{6}, fixed: intEdges})
	}

	// clamp: Null, Int and Double bounds, an empty range, int32 with
	// bounds past int32, int32 self with float bounds into float32.
	clamps := []struct {
		name   string
		sc     func(*serialization.Builder) []int32
		xt, yt serialization.DataType
	}{
		{"min_only", uArgs(uDbl(-1.5), uNull), uF32, uF32},
		{"max_only", uArgs(uNull, uInt(2)), uF32, uF32},
		{"int_bounds", uArgs(uInt(-2), uInt(3)), uF32, uF32},
		{"min_gt_max", uArgs(uDbl(2), uDbl(-1)), uF32, uF32},
		{"none", uArgs(uNull, uNull), uF32, uF32},
		{"wide_bounds", uArgs(uDbl(-1e12), uInt(5)), uI32, uI32},
		{"max_only", uArgs(uNull, uInt(-4)), uI32, uI32},
		{"float_bounds", uArgs(uDbl(-2.5), uDbl(3.5)), uI32, uF32},
	}
	for _, c := range clamps {
		for _, sh := range [][]int64{{7}, {2, 3, 4}} {
			add(unaryCase{name: c.name, op: "aten.clamp.default", scalars: c.sc, xt: c.xt, yt: c.yt, shape: sh, lo: -10, hi: 10})
		}
	}
	add(unaryCase{name: "min_only/special", op: "aten.clamp.default", scalars: uArgs(uDbl(-2), uNull), xt: uF32, yt: uF32,
		shape: []int64{19}, fixed: uSpecial})

	// pow: the exponent classes (integers incl. 0 and negatives, ±0.5,
	// fractions, a huge even integer, ±Inf, NaN), each on random and
	// on edge values.
	pows := []struct {
		name   string
		e      func(*serialization.Builder) int32
		lo, hi float64
	}{
		{"2", uInt(2), -100, 100},
		{"3", uDbl(3), -100, 100},
		{"0", uInt(0), -10, 10},
		{"1", uInt(1), -10, 10},
		{"7", uInt(7), -5, 5},
		{"-1", uInt(-1), -10, 10},
		{"-2", uDbl(-2), -10, 10},
		{"-5", uInt(-5), -4, 4},
		{"0.5", uDbl(0.5), 0, 100},
		{"-0.5", uDbl(-0.5), 0, 100},
		{"2.5", uDbl(2.5), -2, 50},
		{"-1.7", uDbl(-1.7), 0, 50},
		{"0.1", uDbl(0.1), -1, 1000},
		{"1e10", uDbl(1e10), 0.999, 1.001},
		{"inf", uDbl(math.Inf(1)), -2, 2},
		{"-inf", uDbl(math.Inf(-1)), -2, 2},
		{"nan", uDbl(math.NaN()), -2, 2},
	}
	for _, p := range pows {
		sc := uArgs(p.e)
		add(unaryCase{name: p.name, op: "aten.pow.Tensor_Scalar", scalars: sc, xt: uF32, yt: uF32, shape: []int64{2, 3, 5}, lo: p.lo, hi: p.hi})
		add(unaryCase{name: p.name + "/special", op: "aten.pow.Tensor_Scalar", scalars: sc, xt: uF32, yt: uF32,
			shape: []int64{76}, fixed: uSpecial})
	}
	add(unaryCase{name: "3/wrap", op: "aten.pow.Tensor_Scalar", scalars: uArgs(uInt(3)), xt: uI32, yt: uI32, shape: []int64{2, 3, 5}, lo: -5000, hi: 5000})
	add(unaryCase{name: "0", op: "aten.pow.Tensor_Scalar", scalars: uArgs(uInt(0)), xt: uI32, yt: uI32, shape: []int64{8}, lo: -5, hi: 5})
	add(unaryCase{name: "13", op: "aten.pow.Tensor_Scalar", scalars: uArgs(uDbl(13)), xt: uI32, yt: uI32, shape: []int64{7}, fixed: intEdges})
	add(unaryCase{name: "0.5", op: "aten.pow.Tensor_Scalar", scalars: uArgs(uDbl(0.5)), xt: uI32, yt: uF32, shape: []int64{9}, lo: 0, hi: 1000})

	// Integer and bool inputs to float-valued ops (promote like torch).
	for _, op := range []string{"exp", "sqrt", "sigmoid", "sin", "tanh", "log10"} {
		add(unaryCase{name: "int", op: "aten." + op + ".default", xt: uI32, yt: uF32, shape: []int64{3, 7}, lo: 1, hi: 30})
	}
	add(unaryCase{name: "bool", op: "aten.exp.default", xt: uBool, yt: uF32, shape: []int64{9}, lo: 0, hi: 2})
	add(unaryCase{name: "u8", op: "aten.sqrt.default", xt: uU8, yt: uF32, shape: []int64{11}, lo: 0, hi: 256})
	add(unaryCase{name: "i8", op: "aten.sigmoid.default", xt: uI8, yt: uF32, shape: []int64{8}, lo: -128, hi: 128})

	// bitwise_not and logical_not over the 1-byte types: odd counts leave
	// a partial last word, rank 0 is one element in one word.
	for _, sh := range [][]int64{{}, {5}, {4, 3}, {2, 1, 3, 1, 3}} {
		add(unaryCase{op: "aten.bitwise_not.default", xt: uBool, yt: uBool, shape: sh, lo: 0, hi: 2})
		add(unaryCase{op: "aten.bitwise_not.default", xt: uU8, yt: uU8, shape: sh, lo: 0, hi: 256})
		add(unaryCase{op: "aten.bitwise_not.default", xt: uI8, yt: uI8, shape: sh, lo: -128, hi: 128})
		for _, xt := range []serialization.DataType{uF32, uI32, uBool, uU8, uI8} {
			add(unaryCase{op: "aten.logical_not.default", xt: xt, yt: uBool, shape: sh, lo: -2, hi: 3})
		}
	}
	add(unaryCase{name: "special", op: "aten.logical_not.default", xt: uF32, yt: uBool, shape: []int64{19}, fixed: uSpecial})
	add(unaryCase{name: "to_float", op: "aten.logical_not.default", xt: uI32, yt: uF32, shape: []int64{10}, lo: -2, hi: 3})

	// 16,777,217 elements, one per invocation: 65,537 workgroups, past the
	// 65,535 of one grid dimension, so the dispatch folds into 2-D.
	add(unaryCase{name: "folded", op: "aten.neg.default", xt: uI32, yt: uI32, shape: []int64{1<<24 + 1}, lo: -1000, hi: 1000})

	for _, c := range cs {
		Cases = append(Cases, Case{Name: c.caseName(), Build: c.build})
	}
}

// join joins non-empty name parts with "/".
func join(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "/"
		}
		out += p
	}
	return out
}

package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// compareCase is one comparison or logical-op graph with a bool out:
// out = op(a, b), or op(a, scalar) for the .Scalar comparisons.
type compareCase struct {
	name   string
	op     string // eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor
	at, bt serialization.DataType
	as, bs []int64
	// scalar, when set, makes this a .Scalar op with this other.
	scalar func(b *serialization.Builder) int32
	a, b   []float64 // fixed inputs
}

func (c compareCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(c.at, Dims(c.as), -1)
	if c.scalar != nil {
		z := b.Tensor(serialization.Bool, Dims(c.as), -1)
		b.Op("aten."+c.op+".Scalar", x, c.scalar(b), z)
		b.Inputs(x)
		b.Outputs(z)
		return []*reference.Tensor{compareInput(r, c.at, c.as, c.a)}
	}
	y := b.Tensor(c.bt, Dims(c.bs), -1)
	z := b.Tensor(serialization.Bool, Dims(binaryBroadcast(c.as, c.bs)), -1)
	name := "aten." + c.op + ".Tensor"
	if len(c.op) > 8 && c.op[:8] == "logical_" {
		name = "aten." + c.op + ".default"
	}
	b.Op(name, x, y, z)
	b.Inputs(x, y)
	b.Outputs(z)
	return []*reference.Tensor{compareInput(r, c.at, c.as, c.a), compareInput(r, c.bt, c.bs, c.b)}
}

// compareInput returns fixed values, or random small integers (as floats
// for float32) so that ties are common; a few float32 values get a
// fractional part.
func compareInput(r *rand.Rand, dt serialization.DataType, shape []int64, fixed []float64) *reference.Tensor {
	t := reference.New(dt, shape)
	for i := range t.V {
		switch {
		case fixed != nil:
			t.V[i] = fixed[i]
		case dt == serialization.Bool:
			t.V[i] = float64(r.IntN(2))
		default:
			t.V[i] = float64(r.IntN(7) - 3)
			if dt == serialization.Float32 && r.IntN(4) == 0 {
				t.V[i] += 0.5
			}
		}
		t.V[i] = reference.Round(dt, t.V[i])
	}
	return t
}

func init() {
	f, i, b := serialization.Float32, serialization.Int32, serialization.Bool
	// Broadcasts in every position, rank 0 and 6, odd sizes (a partial last
	// word), size 0, and more than one word per row.
	pairs := [][2][]int64{
		{{1}, {1}},
		{{13}, {13}},
		{{2, 3, 8}, {2, 3, 8}},
		{{}, {}},
		{{5, 7}, {}},
		{{}, {3, 3}},
		{{3, 1, 5}, {1, 4, 1}},
		{{1, 4, 1}, {3, 1, 7}},
		{{2, 1, 3, 1, 5, 2}, {1, 4, 1, 3, 1, 2}},
		{{33, 65}, {65}},
		{{0, 3}, {3}},
		{{6, 1}, {1, 0}},
	}
	var cs []compareCase
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		for _, p := range pairs {
			cs = append(cs, compareCase{op: op, at: f, bt: f, as: p[0], bs: p[1]})
		}
		for _, dts := range [][2]serialization.DataType{{i, i}, {f, i}, {i, f}, {b, b}, {b, i}, {f, b}} {
			cs = append(cs,
				compareCase{op: op, at: dts[0], bt: dts[1], as: []int64{13}, bs: []int64{13}},
				compareCase{op: op, at: dts[0], bt: dts[1], as: []int64{3, 1, 5}, bs: []int64{1, 4, 1}},
			)
		}
	}
	for _, op := range []string{"logical_and", "logical_or", "logical_xor"} {
		for _, p := range pairs {
			cs = append(cs, compareCase{op: op, at: b, bt: b, as: p[0], bs: p[1]})
		}
		for _, dts := range [][2]serialization.DataType{{f, f}, {i, i}, {f, i}, {i, b}, {b, f}} {
			cs = append(cs, compareCase{op: op, at: dts[0], bt: dts[1], as: []int64{3, 1, 5}, bs: []int64{1, 4, 1}})
		}
	}
	// NaN compares unequal to everything (and is true for logical ops);
	// -0 == 0; infinities; an int32 that float32 cannot hold.
	inf, nan, negz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	ea := []float64{nan, nan, 1, inf, -inf, 0, negz, inf, -3.4e38, 1e-38, 0}
	eb := []float64{nan, 1, nan, inf, inf, negz, 0, 1e38, -inf, 0, 1e-38}
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"} {
		cs = append(cs, compareCase{name: "edges", op: op, at: f, bt: f, as: []int64{11}, bs: []int64{11}, a: ea, b: eb})
	}
	// int32 vs float32 compares in float32: 16777217 becomes 16777216.
	cs = append(cs, compareCase{name: "edges", op: "eq", at: i, bt: f, as: []int64{5}, bs: []int64{5},
		a: []float64{16777217, math.MaxInt32, math.MinInt32, -1, 7}, b: []float64{16777216, 2147483648, -2147483648, -1, 7.5}})

	// .Scalar comparisons: Int, Double (integral or not), Bool, NaN, inf.
	sInt := func(v int64) func(*serialization.Builder) int32 {
		return func(b *serialization.Builder) int32 { return b.Int(v) }
	}
	sDbl := func(v float64) func(*serialization.Builder) int32 {
		return func(b *serialization.Builder) int32 { return b.Double(v) }
	}
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		for _, s := range []struct {
			dt     serialization.DataType
			scalar func(*serialization.Builder) int32
		}{
			{f, sInt(1)}, {f, sDbl(0.5)}, {f, sDbl(-2)}, {i, sInt(-1)}, {i, sDbl(1.5)}, {i, sDbl(2)},
			{b, func(b *serialization.Builder) int32 { return b.Bool(true) }}, {b, sInt(0)},
		} {
			for _, sh := range [][]int64{{}, {13}, {2, 1, 3, 1, 5, 2}, {0, 2}} {
				cs = append(cs, compareCase{op: op, at: s.dt, as: sh, scalar: s.scalar})
			}
		}
		cs = append(cs,
			compareCase{name: "nan", op: op, at: f, as: []int64{11}, a: ea, scalar: sDbl(nan)},
			compareCase{name: "inf", op: op, at: f, as: []int64{11}, a: ea, scalar: sDbl(inf)},
			compareCase{name: "negzero", op: op, at: f, as: []int64{11}, a: ea, scalar: sDbl(negz)},
		)
	}
	for _, c := range cs {
		name := c.op + "/"
		if c.scalar != nil {
			name = c.op + "_scalar/"
		}
		if c.name != "" {
			name += c.name + "/"
		}
		name += c.at.String()
		if c.scalar == nil {
			name += "_" + c.bt.String()
		}
		name += "/" + binaryShapeName(c.as)
		if c.scalar == nil {
			name += "+" + binaryShapeName(c.bs)
		}
		Cases = append(Cases, Case{Name: name, Build: c.build})
	}
}

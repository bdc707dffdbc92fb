package opstest

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func tensorOf(dt serialization.DataType, vs ...float64) *reference.Tensor {
	t := reference.New(dt, []int64{int64(len(vs))})
	copy(t.V, vs)
	return t
}

// TestCompareFlushing is the subnormal allowance element by element: a
// subnormal want may come back ±0, a result may instead match the
// reference on flushed inputs (alt), and nothing else passes that Compare
// would reject.
func TestCompareFlushing(t *testing.T) {
	t.Parallel()
	f, b := serialization.Float32, serialization.Bool
	inf, nan := math.Inf(1), math.NaN()
	sub := 1e-39 // a float32 subnormal
	exact := Tolerance{Rel: 0x1p-30}
	for _, c := range []struct {
		name           string
		got, want, alt *reference.Tensor
		ok             bool
	}{
		{"equal", tensorOf(f, 1, -2, sub), tensorOf(f, 1, -2, sub), nil, true},
		{"subnormal as 0", tensorOf(f, 1, 0), tensorOf(f, 1, sub), nil, true},
		{"subnormal as -0", tensorOf(f, math.Copysign(0, -1)), tensorOf(f, -sub), nil, true},
		{"other subnormal", tensorOf(f, 2e-39), tensorOf(f, sub), nil, false},
		{"normal as 0", tensorOf(f, 0), tensorOf(f, 1e-37), nil, false},
		{"0 for the min normal", tensorOf(f, 0), tensorOf(f, 0x1p-126), nil, false},
		{"matches alt", tensorOf(f, nan, 1), tensorOf(f, -inf, 1), tensorOf(f, nan, 1), true},
		{"alt's subnormal as 0", tensorOf(f, 0), tensorOf(f, 1e-30), tensorOf(f, sub), true},
		{"matches neither", tensorOf(f, 5), tensorOf(f, -inf), tensorOf(f, nan), false},
		{"NaN for a number", tensorOf(f, nan), tensorOf(f, 1), tensorOf(f, 1), false},
		{"bool matches alt", tensorOf(b, 0), tensorOf(b, 1), tensorOf(b, 0), true},
		{"bool, no alt", tensorOf(b, 0), tensorOf(b, 1), nil, false},
		{"shape", tensorOf(f, 0, 0), tensorOf(f, sub), nil, false},
	} {
		err := CompareFlushing(c.got, c.want, c.alt, exact)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", c.name, err, c.ok)
		}
		// Without the allowance only what Compare accepts passes.
		if plain := Compare(c.got, c.want, exact); plain == nil && err != nil {
			t.Errorf("%s: Compare passes but CompareFlushing fails: %v", c.name, err)
		}
	}
}

// TestFlushInputs replaces float32 subnormals by zeros of their sign and
// leaves normals, other dtypes and the caller's tensors alone.
func TestFlushInputs(t *testing.T) {
	t.Parallel()
	x := tensorOf(serialization.Float32, 1e-39, -1e-39, 0x1p-126, -3, 1e-45)
	i := tensorOf(serialization.Int32, 0, 1)
	out := FlushInputs([]*reference.Tensor{x, i})
	want := []float64{0, math.Copysign(0, -1), 0x1p-126, -3, 0}
	for k, v := range out[0].V {
		if v != want[k] || math.Signbit(v) != math.Signbit(want[k]) {
			t.Errorf("element %d: %v, want %v", k, v, want[k])
		}
	}
	if x.V[0] != 1e-39 {
		t.Errorf("the input was modified")
	}
	if out[1] != i {
		t.Errorf("an int32 tensor was copied")
	}
}

// flushingRef is a Backend that computes like an adapter that flushes
// float32 subnormals: the reference on flushed inputs, with subnormal
// results flushed too. claims says whether it reports flushing.
type flushingRef struct{ claims bool }

func (r flushingRef) FlushesSubnormals() bool { return r.claims }

func (r flushingRef) Run(ctx context.Context, raw []byte, named []serialization.NamedBlob, inputs []*reference.Tensor) ([]*reference.Tensor, int, error) {
	outs, n, err := Reference{}.Run(ctx, raw, named, FlushInputs(inputs))
	return FlushInputs(outs), n, err
}

// subnormalMulCase: out = x · 2^s, exact when nothing flushes: subnormal
// inputs made normal (s = 100) or normal inputs made subnormal (s = -30).
func subnormalMulCase(s float64, exact bool) Case {
	return Case{
		Name: "subnormal_mul",
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(serialization.Float32, []uint32{4}, -1)
			y := b.Tensor(serialization.Float32, []uint32{4}, -1)
			b.Op("aten.mul.Scalar", x, b.Double(math.Ldexp(1, int(s))), y)
			b.Inputs(x)
			b.Outputs(y)
			return []*reference.Tensor{tensorOf(serialization.Float32, 1e-39, -3e-40, 1e-30, 1.5)}
		},
		Tol:            binaryExact,
		SubnormalExact: exact,
	}
}

// TestRunCaseFlushing wires the allowance through RunCaseAgainst: a
// backend that flushes passes where it says so, fails where it does not
// (lavapipe's case: exact), and fails a SubnormalExact case either way.
func TestRunCaseFlushing(t *testing.T) {
	t.Parallel()
	for _, s := range []float64{100, -30} {
		if err := RunCaseAgainst(flushingRef{claims: true}, Reference{}, subnormalMulCase(s, false), 1); err != nil {
			t.Errorf("2^%v: a flushing backend that says so: %v", s, err)
		}
		if err := RunCaseAgainst(flushingRef{claims: false}, Reference{}, subnormalMulCase(s, false), 1); err == nil {
			t.Errorf("2^%v: a flushing backend that does not say so passed", s)
		}
		err := RunCaseAgainst(flushingRef{claims: true}, Reference{}, subnormalMulCase(s, true), 1)
		if err == nil || !strings.Contains(err.Error(), "differ") {
			t.Errorf("2^%v: a SubnormalExact case on a flushing backend: %v, want a mismatch", s, err)
		}
	}
}

// TestCompareInfinity: an infinite reference value is met only by itself.
// (Compare used to accept any finite value there: |g - Inf| <= Rel·Inf.)
func TestCompareInfinity(t *testing.T) {
	t.Parallel()
	f := serialization.Float32
	inf := math.Inf(1)
	tol := DefaultTolerance[f]
	for _, c := range []struct {
		got, want float64
		ok        bool
	}{
		{inf, inf, true}, {-inf, -inf, true}, {5, -inf, false}, {3.4e38, inf, false},
		{inf, 3.4e38, false}, {-inf, inf, false}, {1, 1 + 1e-6, true},
	} {
		err := Compare(tensorOf(f, c.got), tensorOf(f, c.want), tol)
		if (err == nil) != c.ok {
			t.Errorf("got %v want %v: err %v, want ok %v", c.got, c.want, err, c.ok)
		}
	}
}

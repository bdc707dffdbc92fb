package opstest

import (
	"context"
	"encoding/binary"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// These tests run shaders/common.tmpl's numerics helpers on the adapter
// (lavapipe here) over edge and random bit patterns and compare the result
// bits with Go's float32 arithmetic (correctly rounded) or float64 math
// rounded once. A helper is correct only if it is correct on every
// adapter, so what they check is bits, not closeness. (They live here, not
// in shaders, whose tests run without a device.)

// runHelper renders body (WGSL template text over the shared templates
// that defines fn f(a: u32, b: u32) -> u32) into a kernel mapping pairs of
// input words to one output word, runs it over a and b and returns the
// outputs.
func runHelper(t *testing.T, body string, a, b []uint32) []uint32 {
	t.Helper()
	src, err := shaders.RenderText(body+`
@group(0) @binding(0) var<storage, read> in: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 64u;
  if (i >= arrayLength(&out)) { return; }
  out[i] = f(in[i].x, in[i].y);
}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := testDevice(t)
	p, err := d.Pipeline(t.Name(), src, "main", shaders.Layout(1, 1, false))
	if err != nil {
		t.Fatal(err)
	}
	n := len(a)
	data := make([]byte, 8*n)
	for i := range a {
		binary.LittleEndian.PutUint32(data[8*i:], a[i])
		binary.LittleEndian.PutUint32(data[8*i+4:], b[i])
	}
	in, err := d.NewBufferData(uint64(len(data)), data, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	out, err := d.NewBuffer(gpu.Storage, uint64(4*n), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	st, err := d.NewBuffer(gpu.Staging, uint64(4*n), "staging")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	bg, err := d.NewBindGroup(p, []gpu.BindEntry{{Buf: in, Size: uint64(len(data))}, {Buf: out, Size: uint64(4 * n)}}, "helper")
	if err != nil {
		t.Fatal(err)
	}
	defer bg.Release()
	groups := uint32((n + 63) / 64)
	x, y := groups, uint32(1)
	for x > 65535 {
		x, y = (x+1)/2, y*2
	}
	if err := d.Run(context.Background(), []gpu.Dispatch{{Pipeline: p, Group: bg, X: x, Y: y, Z: 1}},
		[]gpu.Readback{{Src: out, Dst: st, Size: uint64(4 * n)}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Mapped()
	if err != nil {
		t.Fatal(err)
	}
	res := make([]uint32, n)
	for i := range res {
		res[i] = binary.LittleEndian.Uint32(m[4*i:])
	}
	if err := st.Unmap(); err != nil {
		t.Fatal(err)
	}
	return res
}

func f32bits(v float32) uint32 { return math.Float32bits(v) }
func bitsf32(b uint32) float32 { return math.Float32frombits(b) }

// sameBits reports whether got is want's bits, any NaN matching any NaN.
func sameBits(got, want uint32) bool {
	if bitsf32(want) != bitsf32(want) {
		return bitsf32(got) != bitsf32(got)
	}
	return got == want
}

// edgeFloats are float32 edge values: signed zeros, the smallest and
// largest subnormals, the smallest normals, 1 and its neighbours,
// powers of two, the largest finite, the infinities and NaN.
func edgeFloats() []uint32 {
	var out []uint32
	for _, b := range []uint32{
		0, 1, 2, 3, 0x7fffff, 0x400000, 0x400001, 0x3fffff, // ±0 and subnormals
		0x800000, 0x800001, 0xffffff, 0x1000000, // smallest normals
		0x3f800000, 0x3f800001, 0x3f7fffff, 0x40000000, 0x40400000, 0x3f000000, 0x3eaaaaab,
		0x40490fdb, 0x41200000, 0x3dcccccd, 0x4b800000, 0x4b7fffff, 0x4b000001,
		0x7f7fffff, 0x7f000000, 0x7e800000, 0x00ffffff, 0x34000000, 0x0a000000, 0x75000000,
		0x7f800000, 0x7fc00000, 0x7f800001, // Inf, NaNs
	} {
		out = append(out, b, b|0x80000000)
	}
	return out
}

// randomFloatBits draws n float32 bit patterns spread over every exponent
// (subnormals, Inf and NaN included, each about 1/256 of the draws).
func randomFloatBits(r *rand.Rand, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.Uint32()
	}
	return out
}

// TestDivRN: div_rn(x, y) is Go's float32 x / y (IEEE, correctly rounded)
// bit for bit: every pair of edge values, random bit patterns (subnormal
// operands and results, overflow), quotients near integers and exact
// halves of subnormals (ties to even).
func TestDivRN(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(25, 1))
	var xs, ys []uint32
	edge := edgeFloats()
	for _, x := range edge {
		for _, y := range edge {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	// Random bit patterns, and random significands at nearby exponents
	// (quotients near 1, results near the subnormal boundary).
	xs = append(xs, randomFloatBits(r, 100000)...)
	ys = append(ys, randomFloatBits(r, 100000)...)
	for i := 0; i < 100000; i++ {
		e := uint32(r.IntN(254)) + 1
		x := e<<23 | r.Uint32()&0x7fffff | r.Uint32()&0x80000000
		de := uint32(r.IntN(60))
		ey := uint32(1)
		if e+de < 254 {
			ey = e + de
		}
		y := ey<<23 | r.Uint32()&0x7fffff | r.Uint32()&0x80000000
		if i%4 == 0 {
			// A subnormal result: |x| small, |y| a little above 1.
			x, y = uint32(r.IntN(1<<23))<<uint(r.IntN(4)), 0x3f800000|r.Uint32()&0x7fffff
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	// Near-integer quotients: x = n·y rounded, so x/y is within an ulp or
	// so of the integer n.
	for i := 0; i < 50000; i++ {
		y := float32((0.01 + 3*r.Float64()) * float64(1-2*r.IntN(2)))
		x := float32(float64(r.IntN(2001)-1000) * float64(y))
		xs, ys = append(xs, f32bits(x)), append(ys, f32bits(y))
	}
	// Exact ties in the subnormal range: odd multiples of the smallest
	// subnormal halved.
	for k := uint32(1); k < 2000; k += 2 {
		xs, ys = append(xs, k), append(ys, 0x40000000)
		xs, ys = append(xs, k|0x80000000), append(ys, 0x40000000)
	}
	got := runHelper(t, `{{template "num_div"}}

fn f(a: u32, b: u32) -> u32 {
  return bitcast<u32>(div_rn(bitcast<f32>(a), bitcast<f32>(b)));
}`, xs, ys)
	bad := 0
	for i := range xs {
		want := f32bits(bitsf32(xs[i]) / bitsf32(ys[i]))
		if !sameBits(got[i], want) {
			if bad < 10 {
				t.Errorf("div_rn(%#08x, %#08x) = %#08x (%g), want %#08x (%g)", xs[i], ys[i], got[i], bitsf32(got[i]), want, bitsf32(want))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d quotients differ", bad, len(xs))
	}
}

// TestRoundDiv: round_div(x, y) is round-half-even of Go's float32 x / y,
// on quantizer-like operands (including quotients at and next to exact
// halves, where the fast path must defer to div_rn) and random ones.
func TestRoundDiv(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(25, 2))
	var xs, ys []uint32
	for i := 0; i < 100000; i++ {
		y := float32(1e-4 + r.Float64()*0.1)
		var x float32
		switch i % 4 {
		case 0:
			x = float32((r.Float64()*2 - 1) * 200 * float64(y))
		case 1:
			// (n + 1/2)·y rounded: the quotient is a half or next to one.
			x = float32((float64(r.IntN(401)-200) + 0.5) * float64(y))
		case 2:
			x = bitsf32(f32bits(float32((float64(r.IntN(401)-200)+0.5)*float64(y))) + uint32(r.IntN(7)) - 3)
		default:
			x, y = bitsf32(r.Uint32()), bitsf32(r.Uint32())
		}
		xs, ys = append(xs, f32bits(x)), append(ys, f32bits(y))
	}
	edge := edgeFloats()
	for _, x := range edge {
		for _, y := range edge {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	got := runHelper(t, `{{template "num_div"}}

fn f(a: u32, b: u32) -> u32 {
  return bitcast<u32>(round_div(bitcast<f32>(a), bitcast<f32>(b)));
}`, xs, ys)
	bad := 0
	for i := range xs {
		want := f32bits(float32(math.RoundToEven(float64(bitsf32(xs[i]) / bitsf32(ys[i])))))
		if !sameBits(got[i], want) {
			if bad < 10 {
				t.Errorf("round_div(%g, %g) = %g, want %g", bitsf32(xs[i]), bitsf32(ys[i]), bitsf32(got[i]), bitsf32(want))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d differ", bad, len(xs))
	}
}

// ulpDiff is how many float32 steps apart got and want are (both finite).
func ulpDiff(got, want float32) float64 {
	key := func(f float32) int64 {
		b := int64(math.Float32bits(f))
		if b&0x80000000 != 0 {
			return -(b & 0x7fffffff)
		}
		return b
	}
	return math.Abs(float64(key(got) - key(want)))
}

// TestTrig: sin_, cos_ and tan_ against float64 math.Sin, Cos, Tan rounded
// once to float32, within trigULPs steps (the polynomials are about 1 ulp,
// the reduction adds about 1), for arguments from 0 to the largest float32:
// every float32 near a multiple of pi/2 up to 1e4·pi (the hardest to
// reduce), random ones at every exponent, and the edges (±0, subnormals,
// Inf, NaN).
func TestTrig(t *testing.T) {
	t.Parallel()
	const trigULPs = 4
	r := rand.New(rand.NewPCG(25, 3))
	var xs []uint32
	for k := 0; k <= 20000; k++ {
		c := float32(float64(k) * math.Pi / 2)
		b := f32bits(c)
		for d := -2; d <= 2; d++ {
			xs = append(xs, uint32(int64(b)+int64(d)))
		}
	}
	for i := 0; i < 100000; i++ {
		e := uint32(r.IntN(254)) + 1
		xs = append(xs, e<<23|r.Uint32()&0x807fffff)
	}
	for i := 0; i < 50000; i++ {
		xs = append(xs, f32bits(float32((r.Float64()*2-1)*1e4*math.Pi)))
	}
	xs = append(xs, edgeFloats()...)
	for _, op := range []struct {
		name string
		f    func(float64) float64
	}{{"sin", math.Sin}, {"cos", math.Cos}, {"tan", math.Tan}} {
		t.Run(op.name, func(t *testing.T) {
			got := runHelper(t, `{{template "num_trig"}}

fn f(a: u32, b: u32) -> u32 {
  return bitcast<u32>(`+op.name+`_(bitcast<f32>(a)));
}`, xs, xs)
			bad, worst := 0, 0.0
			for i, xb := range xs {
				x := bitsf32(xb)
				want := float32(op.f(float64(x)))
				g := bitsf32(got[i])
				var ok bool
				switch {
				case want != want || math.IsInf(float64(want), 0):
					ok = sameBits(got[i], f32bits(want))
				case x == 0:
					ok = got[i] == f32bits(want) // the sign of zero too
				default:
					d := ulpDiff(g, want)
					worst = max(worst, d)
					ok = d <= trigULPs
				}
				if !ok {
					if bad < 10 {
						t.Errorf("%s(%g [%#08x]) = %g, want %g (%.0f ulp)", op.name, x, xb, g, want, ulpDiff(g, want))
					}
					bad++
				}
			}
			t.Logf("%d arguments, worst %.0f ulp", len(xs), worst)
			if bad > 0 {
				t.Errorf("%d of %d differ by more than %d ulp", bad, len(xs), trigULPs)
			}
		})
	}
}

// TestNumHelpers: the comparisons and selections of "num" (f32 and the
// vec4 flavour) are Go's IEEE float32 semantics on every pair of edge
// values: NaN propagates through fmax/fmin, not through flt/fle/feq (false)
// nor fclamp's bounds (the reference's clampNaN), -0 equals +0 but fmax
// prefers +0 (math.Max), and subnormals compare as themselves.
func TestNumHelpers(t *testing.T) {
	t.Parallel()
	edge := edgeFloats()
	var xs, ys []uint32
	for _, x := range edge {
		for _, y := range edge {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	b2u := func(b bool) uint32 {
		if b {
			return 1
		}
		return 0
	}
	f64 := func(b uint32) float64 { return float64(bitsf32(b)) }
	nan := func(b uint32) bool { return bitsf32(b) != bitsf32(b) }
	clampNaN := func(v, lo, hi float32) float32 {
		if v < lo {
			v = lo
		}
		if v > hi {
			v = hi
		}
		return v
	}
	cases := []struct {
		expr string // WGSL of x, y (f32) giving a u32
		want func(x, y uint32) uint32
	}{
		{"bitcast<u32>(fmax(x, y))", func(x, y uint32) uint32 {
			if nan(x) || nan(y) {
				return 0x7fc00000
			}
			return f32bits(float32(math.Max(f64(x), f64(y))))
		}},
		{"bitcast<u32>(fmin(x, y))", func(x, y uint32) uint32 {
			if nan(x) || nan(y) {
				return 0x7fc00000
			}
			return f32bits(float32(math.Min(f64(x), f64(y))))
		}},
		{"bitcast<u32>(fmax4(vec4<f32>(0.0, x, y, 1.0), vec4<f32>(0.0, y, x, 2.0)).y)", func(x, y uint32) uint32 {
			if nan(x) || nan(y) {
				return 0x7fc00000
			}
			return f32bits(float32(math.Max(f64(x), f64(y))))
		}},
		{"bitcast<u32>(fmin4(vec4<f32>(x), vec4<f32>(y)).z)", func(x, y uint32) uint32 {
			if nan(x) || nan(y) {
				return 0x7fc00000
			}
			return f32bits(float32(math.Min(f64(x), f64(y))))
		}},
		{"select(0u, 1u, flt(x, y))", func(x, y uint32) uint32 { return b2u(bitsf32(x) < bitsf32(y)) }},
		{"select(0u, 1u, fle(x, y))", func(x, y uint32) uint32 { return b2u(bitsf32(x) <= bitsf32(y)) }},
		{"select(0u, 1u, feq(x, y))", func(x, y uint32) uint32 { return b2u(bitsf32(x) == bitsf32(y)) }},
		{"select(0u, 1u, flt4(vec4<f32>(x), vec4<f32>(y)).w)", func(x, y uint32) uint32 { return b2u(bitsf32(x) < bitsf32(y)) }},
		{"select(0u, 1u, is_nan(x))", func(x, y uint32) uint32 { return b2u(nan(x)) }},
		{"bitcast<u32>(fclamp(x, y, 1.5))", func(x, y uint32) uint32 { return f32bits(clampNaN(bitsf32(x), bitsf32(y), 1.5)) }},
		{"bitcast<u32>(fclamp(x, -2.5, y))", func(x, y uint32) uint32 { return f32bits(clampNaN(bitsf32(x), -2.5, bitsf32(y))) }},
		{"bitcast<u32>(fclamp4(vec4<f32>(x), vec4<f32>(-1.0), vec4<f32>(y)).x)", func(x, y uint32) uint32 {
			return f32bits(clampNaN(bitsf32(x), -1, bitsf32(y)))
		}},
		{"bitcast<u32>(frelu(x))", func(x, y uint32) uint32 {
			if bitsf32(x) < 0 {
				return 0
			}
			return x
		}},
		{"bitcast<u32>(frelu4(vec4<f32>(y, x, y, x)).w)", func(x, y uint32) uint32 {
			if bitsf32(x) < 0 {
				return 0
			}
			return x
		}},
		{"bitcast<u32>(fabs(x))", func(x, y uint32) uint32 { return x &^ 0x80000000 }},
		{"bitcast<u32>(fneg(x))", func(x, y uint32) uint32 { return x ^ 0x80000000 }},
	}
	for _, c := range cases {
		got := runHelper(t, `{{template "num" (args "T" "f32")}}

{{template "num" (args "T" "vec4<f32>")}}

fn f(a: u32, b: u32) -> u32 {
  let x = bitcast<f32>(a);
  let y = bitcast<f32>(b);
  return `+c.expr+`;
}`, xs, ys)
		bad := 0
		for i := range xs {
			want := c.want(xs[i], ys[i])
			// NaN results compare as any NaN, except the bit helpers
			// (fabs, fneg, frelu), which must keep the payload.
			ok := got[i] == want || (nan(want) && nan(got[i]) && !strings.Contains(c.expr, "fabs") &&
				!strings.Contains(c.expr, "fneg") && !strings.Contains(c.expr, "frelu"))
			if !ok {
				if bad < 5 {
					t.Errorf("%s with x=%#08x (%g), y=%#08x (%g): %#08x, want %#08x", c.expr, xs[i], bitsf32(xs[i]), ys[i], bitsf32(ys[i]), got[i], want)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d differ", c.expr, bad, len(xs))
		}
	}
}

// TestRoundHalf runs common.tmpl's round_half on the device against the
// host's float16 rounding (tensor.Float32ToHalf, checked exhaustively
// against a brute-force nearest-half oracle in internal/tensor), bit for
// bit: every float16's neighbourhood (the value, the midpoints to the next
// half and one float32 ulp on each side of them: the ties), the float32
// edges, and random bit patterns.
func TestRoundHalf(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(27, 1))
	xs := edgeFloats()
	for h := uint32(0); h < 0x7c00; h++ {
		for _, sign := range []uint32{0, 0x8000} {
			lo := tensor.HalfToFloat32(uint16(h | sign))
			hi := tensor.HalfToFloat32(uint16(h + 1 | sign))
			mid := float32((float64(lo) + float64(hi)) / 2)
			m := f32bits(mid)
			xs = append(xs, f32bits(lo), m, m-1, m+1)
		}
	}
	xs = append(xs, randomFloatBits(r, 200000)...)
	got := runHelper(t, `{{template "num_half"}}

fn f(a: u32, b: u32) -> u32 {
  return bitcast<u32>(round_half(bitcast<f32>(a)));
}`, xs, make([]uint32, len(xs)))
	bad := 0
	for i, x := range xs {
		want := f32bits(tensor.HalfToFloat32(tensor.Float32ToHalf(bitsf32(x))))
		if !sameBits(got[i], want) {
			if bad < 10 {
				t.Errorf("round_half(%#08x = %g) = %#08x (%g), want %#08x (%g)", x, bitsf32(x), got[i], bitsf32(got[i]), want, bitsf32(want))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d roundings differ", bad, len(xs))
	}
}

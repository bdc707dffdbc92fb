package tensor

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestFloat32ToHalf pins round-to-nearest-even at the edges: ties in the
// normal and subnormal ranges, the overflow threshold, the subnormal/normal
// boundary, signed zeros, infinities and NaN.
func TestFloat32ToHalf(t *testing.T) {
	p := func(e int) float64 { return math.Ldexp(1, e) }
	for _, tc := range []struct {
		f    float64
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},               // largest finite half
		{65519.99, 0x7bff},            // below the midpoint to Inf
		{65520, 0x7c00},               // the tie rounds to even: Inf
		{-1e6, 0xfc00},                // overflow
		{1 + p(-11), 0x3c00},          // tie between 0x3c00 and 0x3c01: even
		{1 + 3*p(-11), 0x3c02},        // tie between 0x3c01 and 0x3c02: even
		{1 + p(-11) + p(-20), 0x3c01}, // just above the tie
		{p(-14), 0x0400},              // smallest normal
		{p(-24), 0x0001},              // smallest subnormal
		{p(-25), 0x0000},              // tie between 0 and 2^-24: even (0)
		{p(-25) + p(-40), 0x0001},     // just above
		{3 * p(-25), 0x0002},          // tie between 1 and 2: even
		{5 * p(-25), 0x0002},          // tie between 2 and 3: even
		{1023 * p(-24), 0x03ff},       // largest subnormal
		{1023.5 * p(-24), 0x0400},     // tie into the smallest normal
		{-p(-24), 0x8001},
		{p(-26), 0x0000},
		{-p(-26), 0x8000}, // underflow keeps the sign
		{math.Copysign(0, -1), 0x8000},
		{float64(math.SmallestNonzeroFloat32), 0},
		{math.Inf(1), 0x7c00},
		{math.Inf(-1), 0xfc00},
	} {
		if got := Float32ToHalf(float32(tc.f)); got != tc.want {
			t.Errorf("Float32ToHalf(%g) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
	for _, nan := range []float32{float32(math.NaN()), math.Float32frombits(0xff800001), math.Float32frombits(0x7fc00000)} {
		h := Float32ToHalf(nan)
		if h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
			t.Errorf("Float32ToHalf(NaN %#08x) = %#04x, not a NaN", math.Float32bits(nan), h)
		}
		if (h&0x8000 != 0) != math.Signbit(float64(nan)) {
			t.Errorf("Float32ToHalf(NaN %#08x) = %#04x lost the sign", math.Float32bits(nan), h)
		}
	}
}

// halfValue decodes a finite half from its fields, independently of
// HalfToFloat32.
func halfValue(h uint16) float64 {
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	v := math.Ldexp(m, -24)
	if e != 0 {
		v = math.Ldexp(1024+m, e-25)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

// TestHalfRoundTrip: every half widens to its exact value and narrows back
// to itself, bit for bit (NaN payloads included).
func TestHalfRoundTrip(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := HalfToFloat32(h)
		if h&0x7c00 == 0x7c00 {
			if h&0x3ff == 0 {
				if !math.IsInf(float64(f), 0) || math.Signbit(float64(f)) != (h&0x8000 != 0) {
					t.Fatalf("HalfToFloat32(%#04x) = %v, want an infinity", h, f)
				}
			} else if !math.IsNaN(float64(f)) {
				t.Fatalf("HalfToFloat32(%#04x) = %v, want NaN", h, f)
			}
			if back := Float32ToHalf(f); back != h {
				t.Fatalf("round trip %#04x -> %v -> %#04x", h, f, back)
			}
			continue
		}
		if want := halfValue(h); float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("HalfToFloat32(%#04x) = %v, want %v", h, f, want)
		}
		if back := Float32ToHalf(f); back != h {
			t.Fatalf("round trip %#04x -> %v -> %#04x", h, f, back)
		}
	}
}

// TestFloat32ToHalfNearest compares Float32ToHalf on random float32s of
// every magnitude with a brute-force oracle: the nearest of all finite
// positive halves (ties to the even bit pattern), Inf from 65520 up.
func TestFloat32ToHalfNearest(t *testing.T) {
	var vals []float64
	var codes []uint16
	for h := uint16(0); h < 0x7c00; h++ {
		vals, codes = append(vals, halfValue(h)), append(codes, h)
	}
	oracle := func(x float64) uint16 {
		if x >= 65520 {
			return 0x7c00
		}
		i := sort.SearchFloat64s(vals, x)
		if i == len(vals) {
			return codes[len(codes)-1]
		}
		if i == 0 || vals[i] == x {
			return codes[i]
		}
		lo, hi := x-vals[i-1], vals[i]-x
		switch {
		case lo < hi:
			return codes[i-1]
		case hi < lo:
			return codes[i]
		case codes[i]&1 == 0:
			return codes[i]
		}
		return codes[i-1]
	}
	r := rand.New(rand.NewPCG(7, 11))
	for k := 0; k < 200000; k++ {
		// Exponents from far below the subnormals to past the range.
		f := float32(math.Ldexp(1+r.Float64(), r.IntN(50)-30))
		if k%4 == 0 { // exact ties: a half plus half an ulp
			h := uint16(r.IntN(0x7bff))
			f = float32((halfValue(h) + halfValue(h+1)) / 2)
		}
		if got, want := Float32ToHalf(f), oracle(float64(f)); got != want {
			t.Fatalf("Float32ToHalf(%g) = %#04x, want %#04x", f, got, want)
		}
		if got, want := Float32ToHalf(-f), oracle(float64(f))|0x8000; got != want {
			t.Fatalf("Float32ToHalf(%g) = %#04x, want %#04x", -f, got, want)
		}
	}
}

// TestHalfBytes checks the bulk conversions, the float16 element codec and
// the float16 tensor constructor and accessor.
func TestHalfBytes(t *testing.T) {
	halves := []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c, 0x00, 0x80}
	f32 := le32(0x3f800000, 0xc0000000, 0x33800000, 0x7f800000, 0x80000000)
	if got := WidenHalf(nil, halves); !bytes.Equal(got, f32) {
		t.Errorf("WidenHalf = % x, want % x", got, f32)
	}
	if got := NarrowHalf([]byte{9}, f32); !bytes.Equal(got, append([]byte{9}, halves...)) {
		t.Errorf("NarrowHalf = % x, want 09 % x", got, halves)
	}
	if v, ok := Element(serialization.Float16, []byte{0x00, 0xc0}); !ok || v != -2 {
		t.Errorf("Element(float16, c000) = %v, %v", v, ok)
	}
	b := make([]byte, 2)
	PutElement(serialization.Float16, b, 1+math.Ldexp(1, -11)) // a tie: even
	if !bytes.Equal(b, []byte{0x00, 0x3c}) {
		t.Errorf("PutElement(float16, 1+2^-11) = % x", b)
	}
	tt := FromFloat16([]int64{2}, []uint16{0x3c00, 0xc000})
	if tt.DType != serialization.Float16 || !bytes.Equal(tt.Data, []byte{0x00, 0x3c, 0x00, 0xc0}) {
		t.Errorf("FromFloat16 = %v % x", tt, tt.Data)
	}
	got, err := tt.Float16s()
	if err != nil || len(got) != 2 || got[0] != 0x3c00 || got[1] != 0xc000 {
		t.Errorf("Float16s = %v, %v", got, err)
	}
	if _, err := FromFloat32([]int64{1}, []float32{1}).Float16s(); err == nil {
		t.Error("Float16s of a float32 tensor")
	}
	if _, err := (Tensor{DType: serialization.Float16, Shape: []int64{1}, Data: []byte{1, 2, 3}}).Float16s(); err == nil {
		t.Error("Float16s of 3 bytes")
	}
	if got := RoundHalf(1 + math.Ldexp(1, -12)); got != 1 {
		t.Errorf("RoundHalf(1+2^-12) = %v", got)
	}
}

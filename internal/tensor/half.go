package tensor

import (
	"encoding/binary"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// IEEE 754 binary16 ("half", VkDataType FLOAT16) conversions. The device
// has no 16-bit arithmetic here (lavapipe's WGSL compiler rejects
// `enable f16`), so FLOAT16 tensors live on the device as float32: halves
// are widened where they enter (constants at load, fp16 host inputs) and
// narrowed where they leave (fp16 host outputs). Widening is exact;
// narrowing rounds to nearest, ties to even, as a GPU's f32->f16
// conversion does.

// HalfToFloat32 returns the float32 value of the half with bits h. Every
// half is exactly representable: subnormals become normal float32s,
// infinities stay infinite and a NaN stays a NaN with its sign and payload
// (shifted into the float32 mantissa's top bits).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	m := uint32(h & 0x3ff)
	switch {
	case e == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | m<<13)
	case e == 0:
		if m == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: m·2^-24. Normalize so the leading one becomes the
		// implicit bit.
		e = 127 - 15 + 1
		for m&0x400 == 0 {
			m <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (m&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (e+127-15)<<23 | m<<13)
}

// Float32ToHalf returns the bits of the half nearest f, ties to even.
// Values beyond the half range (|f| ≥ 65520) become ±Inf, values below
// half the smallest subnormal (2^-25) become ±0, and the rest of the
// subnormal range rounds to the nearest multiple of 2^-24. A NaN stays a
// NaN with its sign and its payload's top bits (every half survives
// HalfToFloat32 and back unchanged); ±Inf stay ±Inf.
func Float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00
		}
		// A NaN keeps its sign and the payload's top 10 bits, so every
		// half NaN survives a widen-narrow round trip bit for bit; one
		// whose payload lives only in the low bits gets the quiet bit.
		m := uint16(man >> 13)
		if m == 0 {
			m = 0x200
		}
		return sign | 0x7c00 | m
	}
	e := exp - 127 + 15 // the half's biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// A half subnormal (or zero): m = round(full · 2^(exp-126)),
		// full being the float32 significand with its implicit one
		// (float32 subnormals have exp 0 and are far below 2^-25).
		shift := uint32(126 - exp)
		if shift > 24 || exp == 0 {
			return sign
		}
		return sign | uint16(roundShift(man|0x800000, shift))
	}
	// A normal half; a mantissa that rounds up to 0x400 carries into the
	// exponent (and from 30 into Inf), which the addition does by itself.
	return sign | (uint16(e)<<10 + uint16(roundShift(man, 13)))
}

// roundShift returns v >> s rounded to nearest, ties to even (1 ≤ s ≤ 24).
func roundShift(v, s uint32) uint32 {
	q := v >> s
	rem := v & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return q
}

// RoundHalf returns v rounded to the nearest half, as a float64 (the
// reference interpreter's rounding of FLOAT16 values). It rounds through
// float32 first, which is the device's path: the two roundings agree with
// a direct one except at float32 ties, which the tests do not meet.
func RoundHalf(v float64) float64 {
	return float64(HalfToFloat32(Float32ToHalf(float32(v))))
}

// WidenHalf appends src's halves (2 little-endian bytes each; a trailing
// odd byte is ignored) as float32 bytes to dst and returns the extended
// slice. Widening is exact.
func WidenHalf(dst, src []byte) []byte {
	for k := 0; k+2 <= len(src); k += 2 {
		f := HalfToFloat32(binary.LittleEndian.Uint16(src[k:]))
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
	}
	return dst
}

// NarrowHalf appends src's float32s (4 little-endian bytes each; trailing
// bytes are ignored) as halves, rounded to nearest even, to dst and
// returns the extended slice.
func NarrowHalf(dst, src []byte) []byte {
	for k := 0; k+4 <= len(src); k += 4 {
		h := Float32ToHalf(math.Float32frombits(binary.LittleEndian.Uint32(src[k:])))
		dst = binary.LittleEndian.AppendUint16(dst, h)
	}
	return dst
}

// RoundHalfBytes appends src's float32s (4 little-endian bytes each),
// each rounded to the nearest half and widened back (the float32 value a
// FLOAT16 tensor holds), to dst and returns the extended slice.
func RoundHalfBytes(dst, src []byte) []byte {
	for k := 0; k+4 <= len(src); k += 4 {
		f := HalfToFloat32(Float32ToHalf(math.Float32frombits(binary.LittleEndian.Uint32(src[k:]))))
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
	}
	return dst
}

// FromFloat16 returns a float16 tensor of the given shape over bits (each
// a half's IEEE binary16 bit pattern, e.g. from Float32ToHalf), without
// copying on little-endian hosts. The shape is copied.
func FromFloat16(shape []int64, bits []uint16) Tensor {
	return fromValues(serialization.Float16, shape, bits, func(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) })
}

// Float16s returns a float16 tensor's elements as half bit patterns
// (HalfToFloat32 converts one), sharing Data when it can.
func (t Tensor) Float16s() ([]uint16, error) {
	return values(t, serialization.Float16, func(b []byte) uint16 { return binary.LittleEndian.Uint16(b) })
}

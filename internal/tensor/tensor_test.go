package tensor

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// le32 and le64 build little-endian bytes from words, independently of
// the code under test.
func le32(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return b
}

func le64(ws ...uint64) []byte {
	var b []byte
	for _, w := range ws {
		b = append(b, le32(uint32(w), uint32(w>>32))...)
	}
	return b
}

// bits is v's two's-complement bit pattern.
func bits(v int64) uint64 { return uint64(v) }

// TestFromBytes checks every constructor's dtype, shape and bytes, and
// that the shape is copied.
func TestFromBytes(t *testing.T) {
	shape := []int64{2}
	for i, tc := range []struct {
		got  Tensor
		dt   DataType
		data []byte
	}{
		{FromFloat32(shape, []float32{1, -2}), serialization.Float32, le32(math.Float32bits(1), math.Float32bits(-2))},
		{FromFloat64(shape, []float64{0.5, -1}), serialization.Float64, le64(math.Float64bits(0.5), math.Float64bits(-1))},
		{FromInt32(shape, []int32{-1, 7}), serialization.Int32, le32(0xffffffff, 7)},
		{FromInt64(shape, []int64{-1, 1 << 40}), serialization.Int64, le64(math.MaxUint64, 1<<40)},
		{FromBool(shape, []bool{true, false}), serialization.Bool, []byte{1, 0}},
		{FromUint8(shape, []uint8{3, 255}), serialization.Uint8, []byte{3, 255}},
	} {
		if tc.got.DType != tc.dt || !slices.Equal(tc.got.Shape, shape) || !bytes.Equal(tc.got.Data, tc.data) {
			t.Errorf("%d: %v % x, want %v %v % x", i, tc.got, tc.got.Data, tc.dt, shape, tc.data)
		}
		if &tc.got.Shape[0] == &shape[0] {
			t.Errorf("%d: the shape is not copied", i)
		}
	}
	if s := FromFloat32([]int64{}, nil); s.Shape == nil || s.Data == nil || s.Numel() != 1 || s.String() != "float32 []" {
		t.Errorf("scalar: %v shape %#v data %#v numel %d", s, s.Shape, s.Data, s.Numel())
	}
}

// TestShared checks the zero-copy promise on little-endian hosts: writes
// through the tensor show in the slice and back.
func TestShared(t *testing.T) {
	if !littleEndian {
		t.Skip("big-endian host: the constructors copy")
	}
	v := []float32{1, 2, 3}
	x := FromFloat32([]int64{3}, v)
	v[1] = 5
	got, err := x.Float32s()
	if err != nil || got[1] != 5 {
		t.Fatalf("Float32s after a write to the slice: %v, %v", got, err)
	}
	got[2] = 9
	if v[2] != 9 {
		t.Errorf("a write through Float32s did not reach the slice: %v", v)
	}
	u := []uint8{1}
	if b, _ := FromUint8([]int64{1}, u).Uint8s(); &b[0] != &u[0] {
		t.Errorf("Uint8s does not share")
	}
}

// TestMisaligned checks that a view is never made of misaligned data: the
// accessor copies instead.
func TestMisaligned(t *testing.T) {
	// The buffer's own alignment is up to the compiler (a small one may
	// live on the stack): pick an offset that is misaligned for float32.
	buf := make([]byte, 12)
	off := 1
	if (uintptr(unsafe.Pointer(&buf[0]))+1)%4 == 0 {
		off = 2
	}
	copy(buf[off:], le32(math.Float32bits(1.5), math.Float32bits(-3)))
	x := Tensor{DType: serialization.Float32, Shape: []int64{2}, Data: buf[off : off+8]}
	got, err := x.Float32s()
	if err != nil || !slices.Equal(got, []float32{1.5, -3}) {
		t.Fatalf("Float32s = %v, %v", got, err)
	}
	if unsafe.Pointer(&got[0]) == unsafe.Pointer(&buf[off]) {
		t.Errorf("a misaligned view was made")
	}
}

// TestAccessorErrors checks the dtype and length checks and their text.
func TestAccessorErrors(t *testing.T) {
	i32 := FromInt32([]int64{1}, []int32{1})
	for i, tc := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := i32.Float32s(); return err }(), "wgdelegate: tensor is int32, not float32"},
		{func() error { _, err := i32.Int64s(); return err }(), "wgdelegate: tensor is int32, not int64"},
		{func() error { _, err := i32.Float64s(); return err }(), "wgdelegate: tensor is int32, not float64"},
		{func() error { _, err := i32.Bools(); return err }(), "wgdelegate: tensor is int32, not bool"},
		{func() error { _, err := i32.Uint8s(); return err }(), "wgdelegate: tensor is int32, not uint8"},
		{func() error {
			_, err := Tensor{DType: serialization.Int32, Data: make([]byte, 6)}.Int32s()
			return err
		}(), "wgdelegate: int32 tensor has 6 data bytes, not a multiple of 4"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%d: error %v, want %q", i, tc.err, tc.want)
		}
	}
	if b, err := (Tensor{DType: serialization.Bool, Data: []byte{0, 2}}).Bools(); err != nil || !slices.Equal(b, []bool{false, true}) {
		t.Errorf("Bools = %v, %v", b, err)
	}
}

// TestElement checks Element and PutElement for every dtype they handle,
// and the round trip through them.
func TestElement(t *testing.T) {
	for i, tc := range []struct {
		dt    DataType
		bytes []byte
		v     float64
	}{
		{serialization.Float32, le32(math.Float32bits(-1.5)), -1.5},
		{serialization.Float64, le64(math.Float64bits(1e300)), 1e300},
		{serialization.Int32, le32(0x80000000), math.MinInt32},
		{serialization.Int64, le64(1 << 52), 1 << 52},
		{serialization.Int8, []byte{0xff}, -1},
		{serialization.Uint8, []byte{0xff}, 255},
		{serialization.Bool, []byte{1}, 1},
	} {
		v, ok := Element(tc.dt, tc.bytes)
		if !ok || v != tc.v {
			t.Errorf("%d: Element(%v, % x) = %v, %v, want %v", i, tc.dt, tc.bytes, v, ok, tc.v)
		}
		b := bytes.Repeat([]byte{0xaa}, len(tc.bytes))
		PutElement(tc.dt, b, tc.v)
		if !bytes.Equal(b, tc.bytes) {
			t.Errorf("%d: PutElement(%v, %v) = % x, want % x", i, tc.dt, tc.v, b, tc.bytes)
		}
	}
	for i, tc := range []struct {
		dt DataType
		b  []byte
	}{
		{serialization.Float16, []byte{0x3c}},
		{serialization.Float32, []byte{0, 0, 0}},
		{serialization.Bool, nil},
	} {
		if v, ok := Element(tc.dt, tc.b); ok {
			t.Errorf("%d: Element(%v, % x) = %v, want not ok", i, tc.dt, tc.b, v)
		}
	}
}

// TestPutElementRounds checks the rounding: float32 to nearest, integers
// toward zero (the 1-byte ones keeping their low bits), bool as != 0.
func TestPutElementRounds(t *testing.T) {
	for i, tc := range []struct {
		dt   DataType
		v    float64
		want float64
	}{
		{serialization.Float32, 0.1, float64(float32(0.1))},
		{serialization.Int32, -2.7, -2},
		{serialization.Int32, 2.9, 2},
		{serialization.Int8, 200, -56},
		{serialization.Uint8, -1, 255},
		{serialization.Bool, -0.5, 1},
		{serialization.Bool, 0, 0},
	} {
		b := make([]byte, tc.dt.Size())
		PutElement(tc.dt, b, tc.v)
		if got, _ := Element(tc.dt, b); got != tc.want {
			t.Errorf("%d: %v %v encodes as %v, want %v", i, tc.dt, tc.v, got, tc.want)
		}
	}
}

// TestWidenNarrow checks both directions between the 64-bit host dtypes
// and the 32-bit device dtypes.
func TestWidenNarrow(t *testing.T) {
	for i, tc := range []struct {
		dev, host DataType
		dev32     []byte
		host64    []byte
	}{
		{serialization.Int32, serialization.Int64, le32(0xffffffff, 0x7fffffff), le64(math.MaxUint64, 0x7fffffff)},
		{serialization.Float32, serialization.Float64, le32(math.Float32bits(-0.25), math.Float32bits(float32(math.Inf(1)))),
			le64(math.Float64bits(-0.25), math.Float64bits(math.Inf(1)))},
	} {
		if !Widens(tc.dev, tc.host) || !Narrows(tc.host, tc.dev) {
			t.Errorf("%d: %v and %v do not pair", i, tc.dev, tc.host)
		}
		if got := Widen(tc.dev32, tc.dev); !bytes.Equal(got, tc.host64) {
			t.Errorf("%d: Widen = % x, want % x", i, got, tc.host64)
		}
		got, err := Narrow([]byte{7}, tc.host64, tc.host)
		if err != nil || !bytes.Equal(got, append([]byte{7}, tc.dev32...)) {
			t.Errorf("%d: Narrow = % x, %v, want 07 % x", i, got, err, tc.dev32)
		}
	}
	for i, tc := range []struct{ dev, host DataType }{
		{serialization.Int32, serialization.Int32},
		{serialization.Int64, serialization.Int32},
		{serialization.Float32, serialization.Int64},
		{serialization.Uint8, serialization.Int64},
	} {
		if Widens(tc.dev, tc.host) {
			t.Errorf("%d: %v widens to %v", i, tc.dev, tc.host)
		}
	}
}

// TestNarrowRejects checks an int64 that does not fit int32 and a dtype
// Narrow does not take.
func TestNarrowRejects(t *testing.T) {
	for i, tc := range []struct {
		src   []byte
		index int
		value int64
	}{
		{le64(0, 1<<31), 1, 1 << 31},
		{le64(uint64(1) << 63), 0, math.MinInt64},
		{le64(5, 6, bits(math.MinInt32-1)), 2, math.MinInt32 - 1},
	} {
		_, err := Narrow(nil, tc.src, serialization.Int64)
		var oe *OverflowError
		if !errors.As(err, &oe) || oe.Index != tc.index || oe.Value != tc.value {
			t.Errorf("%d: Narrow error %v, want element %d = %d", i, err, tc.index, tc.value)
		}
	}
	if _, err := Narrow(nil, le32(1), serialization.Int32); err == nil || !strings.Contains(err.Error(), "cannot narrow int32") {
		t.Errorf("narrowing int32: %v", err)
	}
}

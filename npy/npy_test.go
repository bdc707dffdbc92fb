package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// le builds little-endian element bytes for the test tables.
func le[T int8 | uint8 | int32 | int64 | uint16](vals ...T) []byte {
	var b []byte
	for _, v := range vals {
		b, _ = binary.Append(b, binary.LittleEndian, v)
	}
	return b
}

func f32s(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func f64s(vals ...float64) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func arange32(n int) []byte {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return f32s(v...)
}

// goldens are files NumPy 1.24.2 wrote (testdata/gen.py) and the tensors
// they hold. write says whether np.save produced the file with its defaults,
// so the writer must reproduce it byte for byte.
var goldens = []struct {
	file  string
	want  tensor.Tensor
	write bool
}{
	{"f4_2x3.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{2, 3}, Data: arange32(6)}, true},
	{"f4_scalar.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{}, Data: f32s(1.5)}, true},
	{"f4_empty.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{0, 3}, Data: []byte{}}, true},
	{"f4_1d.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{3}, Data: f32s(-1, 0.5, 3.25)}, true},
	{"f4_4d.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{1, 2, 3, 20}, Data: arange32(120)}, true},
	{"f4_15d.npy", tensor.Tensor{DType: serialization.Float32, Shape: slices.Repeat([]int64{1}, 15), Data: f32s(7)}, true},
	{"i4_2x2.npy", tensor.Tensor{DType: serialization.Int32, Shape: []int64{2, 2}, Data: le[int32](1, -2, 3, math.MaxInt32)}, true},
	{"i8_3.npy", tensor.Tensor{DType: serialization.Int64, Shape: []int64{3}, Data: le[int64](-9007199254740993, 0, 42)}, true},
	{"i8_big.npy", tensor.Tensor{DType: serialization.Int64, Shape: []int64{1, 2}, Data: le[int64](123456789012, 123456789013)}, true},
	{"b1_4.npy", tensor.Tensor{DType: serialization.Bool, Shape: []int64{4}, Data: []byte{1, 0, 0, 1}}, true},
	{"f8_2.npy", tensor.Tensor{DType: serialization.Float64, Shape: []int64{2}, Data: f64s(0.1, -2.5)}, true},
	{"u1_3.npy", tensor.Tensor{DType: serialization.Uint8, Shape: []int64{3}, Data: []byte{0, 128, 255}}, true},
	{"i1_3.npy", tensor.Tensor{DType: serialization.Int8, Shape: []int64{3}, Data: le[int8](-128, 0, 127)}, true},
	{"f2_2.npy", tensor.Tensor{DType: serialization.Float16, Shape: []int64{2}, Data: le[uint16](0x3c00, 0xc000)}, true},
	{"f4_v2.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{4}, Data: arange32(4)}, false},
	{"f4_v3.npy", tensor.Tensor{DType: serialization.Float32, Shape: []int64{4}, Data: arange32(4)}, false},
}

func sameTensor(a, b tensor.Tensor) bool {
	return a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && bytes.Equal(a.Data, b.Data)
}

func TestGoldenRead(t *testing.T) {
	t.Parallel()
	for i, tc := range goldens {
		path := filepath.Join("testdata", tc.file)
		got, err := ReadFile(path)
		if err != nil {
			t.Errorf("%d %s: %v", i, tc.file, err)
			continue
		}
		if !sameTensor(got, tc.want) {
			t.Errorf("%d %s: got %v %v % x, want %v %v % x", i, tc.file, got.DType, got.Shape, got.Data, tc.want.DType, tc.want.Shape, tc.want.Data)
		}
		if got.Shape == nil {
			t.Errorf("%d %s: nil shape, want empty", i, tc.file)
		}
		// The streaming reader must agree with the whole-file one.
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got2, err := Read(f)
		f.Close()
		if err != nil || !sameTensor(got2, tc.want) {
			t.Errorf("%d %s: Read = %v, %v", i, tc.file, got2, err)
		}
	}
}

func TestGoldenWrite(t *testing.T) {
	t.Parallel()
	for i, tc := range goldens {
		if !tc.write {
			continue
		}
		want, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(tc.want)
		if err != nil {
			t.Errorf("%d %s: %v", i, tc.file, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d %s: Encode differs from NumPy's bytes\n got %q\nwant %q", i, tc.file, got, want)
		}
	}
}

// TestGoldenInline checks the writer against bytes spelled out by hand from
// the format description: np.save of np.arange(6, dtype='<f4').reshape(2, 3).
func TestGoldenInline(t *testing.T) {
	t.Parallel()
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
	// 10 prefix bytes + header (dict, spaces, '\n') = 128.
	header := dict + strings.Repeat(" ", 128-10-len(dict)-1) + "\n"
	want := append([]byte("\x93NUMPY\x01\x00\x76\x00"+header), arange32(6)...)
	got, err := Encode(tensor.FromFloat32([]int64{2, 3}, []float32{0, 1, 2, 3, 4, 5}))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if len(got)-24 != 128 || got[127] != '\n' {
		t.Fatalf("data offset %d, byte 127 %q", len(got)-24, got[127])
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []tensor.Tensor{
		tensor.FromFloat32([]int64{2, 3}, []float32{1, -2, 3.5, float32(math.Inf(1)), 0, -0}),
		tensor.FromFloat32([]int64{}, []float32{42}),
		tensor.FromFloat32([]int64{0}, nil),
		tensor.FromFloat32([]int64{3, 0, 2}, nil),
		tensor.FromInt32([]int64{4}, []int32{math.MinInt32, -1, 0, math.MaxInt32}),
		tensor.FromInt64([]int64{1, 1, 2}, []int64{math.MinInt64, math.MaxInt64}),
		{DType: serialization.Bool, Shape: []int64{2, 2}, Data: []byte{0, 1, 1, 0}},
		{DType: serialization.Float64, Shape: []int64{1}, Data: f64s(math.Pi)},
		{DType: serialization.Uint8, Shape: []int64{5}, Data: []byte{0, 1, 2, 254, 255}},
		{DType: serialization.Int8, Shape: []int64{2}, Data: le[int8](-1, 1)},
		{DType: serialization.Float16, Shape: []int64{1}, Data: le[uint16](0x3c00)},
		// Long enough that the header dict alone crosses 64 bytes, and a
		// first axis wide enough to shrink the growth padding.
		tensor.FromFloat32([]int64{1234567890, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, nil),
	}
	for i, tc := range cases {
		b, err := Encode(tc)
		if err != nil {
			t.Fatalf("%d %v %v: %v", i, tc.DType, tc.Shape, err)
		}
		if b[len(b)-len(tc.Data)-1] != '\n' {
			t.Errorf("%d: header does not end in newline", i)
		}
		if off := len(b) - len(tc.Data); off%64 != 0 {
			t.Errorf("%d: data at %d, not a multiple of 64", i, off)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%d %v %v: Decode: %v", i, tc.DType, tc.Shape, err)
		}
		if !sameTensor(got, tc) {
			t.Errorf("%d: round trip gave %v %v % x, want %v %v % x", i, got.DType, got.Shape, got.Data, tc.DType, tc.Shape, tc.Data)
		}
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.npy")
	want := tensor.FromInt64([]int64{2}, []int64{7, -7})
	if err := WriteFile(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || !sameTensor(got, want) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// TestReadConsecutive reads two arrays written back to back from one stream.
func TestReadConsecutive(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := tensor.FromFloat32([]int64{2}, []float32{1, 2})
	b := tensor.FromInt32([]int64{1}, []int32{3})
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	if err := Write(&buf, b); err != nil {
		t.Fatal(err)
	}
	for i, want := range []tensor.Tensor{a, b} {
		got, err := Read(&buf)
		if err != nil || !sameTensor(got, want) {
			t.Fatalf("array %d: %v, %v", i, got, err)
		}
	}
	if _, err := Read(&buf); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("read past the end: %v", err)
	}
}

func TestWriteRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		t    tensor.Tensor
		want error
	}{
		{"unset dtype", tensor.Tensor{DType: serialization.Unset, Shape: []int64{1}, Data: []byte{0}}, ErrUnsupportedDType},
		{"short data", tensor.Tensor{DType: serialization.Float32, Shape: []int64{2}, Data: make([]byte, 4)}, ErrDataLength},
		{"long data", tensor.Tensor{DType: serialization.Float32, Shape: []int64{}, Data: make([]byte, 8)}, ErrDataLength},
		{"too many dims", tensor.Tensor{DType: serialization.Bool, Shape: make([]int64, MaxDims+1), Data: nil}, ErrLimit},
		{"overflow", tensor.Tensor{DType: serialization.Int64, Shape: []int64{1 << 40, 1 << 40}}, ErrLimit},
	}
	for i, tc := range cases {
		_, err := Encode(tc.t)
		if !errors.Is(err, tc.want) {
			t.Errorf("%d %s: err %v, want %v", i, tc.name, err, tc.want)
		}
	}
	if _, err := Encode(tensor.Tensor{DType: serialization.Float32, Shape: []int64{-1}}); !errors.Is(err, ErrBadShape) {
		t.Errorf("negative dim: %v, want ErrBadShape", err)
	}
}

// npyFile assembles a version 1.0 file around a header dict, padded the way
// NumPy pads it, followed by data.
func npyFile(dict string, data []byte) []byte {
	hlen := len(dict) + 1
	pad := 64 - (10+hlen)%64
	b := []byte(Magic + "\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(hlen+pad))
	b = append(b, dict...)
	b = append(b, strings.Repeat(" ", pad)...)
	b = append(b, '\n')
	return append(b, data...)
}

func dict(descr, order, shape string) string {
	return "{'descr': " + descr + ", 'fortran_order': " + order + ", 'shape': " + shape + ", }"
}

// TestReject has one case per rejection path, each from hand-written bytes.
func TestReject(t *testing.T) {
	t.Parallel()
	ok := dict("'<f4'", "False", "(2,)")
	v2 := func(hlen uint32) []byte {
		return binary.LittleEndian.AppendUint32([]byte(Magic+"\x02\x00"), hlen)
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrBadHeader},
		{"bad magic", []byte("PK\x03\x04 this is a zip"), ErrBadMagic},
		{"short bad magic", []byte("\x93NUM"[:3] + "x"), ErrBadMagic},
		{"magic only", []byte(Magic), ErrBadHeader},
		{"version 1.1", append([]byte(Magic+"\x01\x01\x10\x00"), make([]byte, 16)...), ErrVersion},
		{"version 4.0", append([]byte(Magic+"\x04\x00\x10\x00"), make([]byte, 16)...), ErrVersion},
		{"no header length", []byte(Magic + "\x01\x00\x10"), ErrBadHeader},
		{"header length past end", []byte(Magic + "\x01\x00\xff\x00{'descr'"), ErrBadHeader},
		{"v2 header length over cap", v2(MaxHeaderLen + 1), ErrLimit},
		{"header not a dict", npyFile("('<f4', False, (2,))", f32s(1, 2)), ErrBadHeader},
		{"unterminated dict", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", f32s(1, 2)), ErrBadHeader},
		{"unterminated string", npyFile("{'descr", nil), ErrBadHeader},
		{"trailing junk", npyFile(ok+" x", f32s(1, 2)), ErrBadHeader},
		{"non-ascii", npyFile("{'descr': '<f4\xe9', 'fortran_order': False, 'shape': (2,), }", f32s(1, 2)), ErrBadHeader},
		{"missing descr", npyFile("{'fortran_order': False, 'shape': (2,), }", f32s(1, 2)), ErrBadHeader},
		{"missing fortran_order", npyFile("{'descr': '<f4', 'shape': (2,), }", f32s(1, 2)), ErrBadHeader},
		{"missing shape", npyFile("{'descr': '<f4', 'fortran_order': False, }", f32s(1, 2)), ErrBadHeader},
		{"extra key", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", f32s(1, 2)), ErrBadHeader},
		{"duplicate key", npyFile("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f32s(1, 2)), ErrBadHeader},
		{"non-string key", npyFile("{1: 2}", nil), ErrBadHeader},
		{"descr not a string", npyFile(dict("5", "False", "(2,)"), f32s(1, 2)), ErrBadHeader},
		{"fortran_order not a bool", npyFile(dict("'<f4'", "0", "(2,)"), f32s(1, 2)), ErrBadHeader},
		{"shape a list", npyFile(dict("'<f4'", "False", "[2]"), f32s(1, 2)), ErrBadHeader},
		{"shape an int", npyFile(dict("'<f4'", "False", "(2)"), f32s(1, 2)), ErrBadHeader},
		{"negative dim", npyFile(dict("'<f4'", "False", "(-2,)"), f32s(1, 2)), ErrBadHeader},
		{"float dim", npyFile(dict("'<f4'", "False", "(2.0,)"), f32s(1, 2)), ErrBadHeader},
		{"dim out of int64", npyFile(dict("'<f4'", "False", "(99999999999999999999,)"), nil), ErrBadHeader},
		{"dims overflow", npyFile(dict("'<f4'", "False", "(4294967296, 4294967296)"), nil), ErrLimit},
		{"bytes over cap", npyFile(dict("'<f8'", "False", "(1099511627776,)"), nil), ErrLimit},
		{"too many dims", npyFile(dict("'<f4'", "False", "("+strings.Repeat("1, ", MaxDims+1)+")"), f32s(1)), ErrLimit},
		{"deep nesting", npyFile(strings.Repeat("[", 100)+strings.Repeat("]", 100), nil), ErrBadHeader},
		{"unknown name", npyFile(dict("'<f4'", "false", "(2,)"), f32s(1, 2)), ErrBadHeader},
		{"big-endian", npyFile(dict("'>f4'", "False", "(2,)"), f32s(1, 2)), ErrBigEndian},
		{"native order", npyFile(dict("'=f4'", "False", "(2,)"), f32s(1, 2)), ErrUnsupportedDType},
		{"no order", npyFile(dict("'f4'", "False", "(2,)"), f32s(1, 2)), ErrUnsupportedDType},
		{"complex", npyFile(dict("'<c8'", "False", "(1,)"), f32s(1, 2)), ErrUnsupportedDType},
		{"uint32", npyFile(dict("'<u4'", "False", "(2,)"), f32s(1, 2)), ErrUnsupportedDType},
		{"unicode", npyFile(dict("'<U3'", "False", "(1,)"), make([]byte, 12)), ErrUnsupportedDType},
		{"object", npyFile(dict("'|O'", "False", "(1,)"), make([]byte, 8)), ErrUnsupportedDType},
		{"structured", npyFile(dict("[('a', '<f4')]", "False", "(2,)"), f32s(1, 2)), ErrUnsupportedDType},
		{"fortran order", npyFile(dict("'<f4'", "True", "(2,)"), f32s(1, 2)), ErrFortranOrder},
		{"short data", npyFile(ok, f32s(1)), ErrDataLength},
		{"long data", npyFile(ok, f32s(1, 2, 3)), ErrDataLength},
		{"huge shape, no data", npyFile(dict("'<f4'", "False", "(1000000000,)"), nil), ErrDataLength},
	}
	for i, tc := range cases {
		_, err := Decode(tc.data)
		var fe *FormatError
		if !errors.Is(err, tc.want) || !errors.As(err, &fe) {
			t.Errorf("%d %s: Decode err = %v, want %v as *FormatError", i, tc.name, err, tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "npy: ") {
			t.Errorf("%d %s: message %q lacks the npy: prefix", i, tc.name, err)
		}
		// The streaming reader classifies everything but trailing bytes the
		// same way.
		if tc.name == "long data" {
			continue
		}
		if _, err := Read(bytes.NewReader(tc.data)); !errors.Is(err, tc.want) {
			t.Errorf("%d %s: Read err = %v, want %v", i, tc.name, err, tc.want)
		}
	}
}

// TestRejectGoldens checks files NumPy wrote that the reader must refuse.
func TestRejectGoldens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		want error
	}{
		{"f4_bigendian.npy", ErrBigEndian},
		{"f4_fortran.npy", ErrFortranOrder},
		{"c8_2.npy", ErrUnsupportedDType},
		{"structured.npy", ErrUnsupportedDType},
	}
	for i, tc := range cases {
		_, err := ReadFile(filepath.Join("testdata", tc.file))
		if !errors.Is(err, tc.want) {
			t.Errorf("%d %s: err %v, want %v", i, tc.file, err, tc.want)
		}
	}
	if _, err := ReadFile(filepath.Join("testdata", "nonexistent.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// errReader fails after its data runs out.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadIOError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	full := npyFile(dict("'<f4'", "False", "(2,)"), f32s(1, 2))
	for _, cut := range []int{3, 9, 40, len(full) - 4} {
		_, err := Read(&errReader{data: full[:cut], err: boom})
		if !errors.Is(err, boom) {
			t.Errorf("cut at %d: err %v, want the reader's error", cut, err)
		}
	}
	// Plain EOF mid-file is a format error, not an I/O error.
	if _, err := Read(io.LimitReader(bytes.NewReader(full), 40)); !errors.Is(err, ErrBadHeader) {
		t.Errorf("EOF in header: %v", err)
	}
}

func TestHeaderLiteralVariants(t *testing.T) {
	t.Parallel()
	// Variants other writers (and old NumPy) produce that NumPy reads.
	cases := []struct {
		dict  string
		shape []int64
	}{
		{`{"descr": "<f4", "fortran_order": False, "shape": (2,)}`, []int64{2}},
		{"{'shape': (1L, 2L), 'fortran_order': False, 'descr': '<f4'}", []int64{1, 2}},
		{"{'descr':'<f4','fortran_order':False,'shape':(2,),}", []int64{2}},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': ( 1 , 2 ), }", []int64{1, 2}},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (+2,), }", []int64{2}},
	}
	for i, tc := range cases {
		n := tensor.Numel(tc.shape)
		got, err := Decode(npyFile(tc.dict, arange32(int(n))))
		if err != nil || !slices.Equal(got.Shape, tc.shape) {
			t.Errorf("%d %s: %v %v", i, tc.dict, got.Shape, err)
		}
	}
	// One-byte types ignore the byte-order character.
	for _, d := range []string{"'|u1'", "'<u1'", "'>u1'", "'=u1'", "'u1'", "'|b1'", "'>i1'"} {
		if _, err := Decode(npyFile(dict(d, "False", "(1,)"), []byte{1})); err != nil {
			t.Errorf("descr %s: %v", d, err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data, err := Encode(tensor.FromFloat32([]int64{1024, 1024}, make([]float32, 1<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	data, err := Encode(tensor.FromFloat32([]int64{1024, 1024}, make([]float32, 1<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

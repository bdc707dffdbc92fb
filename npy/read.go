package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tensor is the host tensor this package reads and writes: the same type as
// wgdelegate.Tensor and graph.Tensor. DType, Shape (empty for a 0-d array)
// and the little-endian element bytes in Data are all a .npy file holds.
type Tensor = tensor.Tensor

// Magic is the first six bytes of every .npy file.
const Magic = "\x93NUMPY"

// Caps on what the reader accepts from a file.
const (
	// MaxHeaderLen caps the header dict's length. NumPy itself refuses
	// headers over 10000 bytes by default; the cap here is looser, but it is
	// checked before the header is read into memory.
	MaxHeaderLen = 1 << 20
	// MaxDims caps the number of dimensions (NumPy 2's NPY_MAXDIMS).
	MaxDims = 64
	// MaxDataBytes caps one array's data size.
	MaxDataBytes = 1 << 40
)

// prefixLen is the magic plus the two version bytes.
const prefixLen = 8 // len(Magic) + 2

// Header is a decoded .npy header.
type Header struct {
	Major, Minor uint8
	Descr        string                 // e.g. "<f4"
	DType        serialization.DataType // what Descr maps to
	FortranOrder bool
	Shape        []int64 // empty for a 0-d array
	// DataOffset is where the element bytes start: the magic, version,
	// length field and header dict together.
	DataOffset int64
}

// Numel returns the element count of the header's shape (1 for 0-d).
func (h *Header) Numel() int64 { return tensor.Numel(h.Shape) }

// NBytes returns the data size the header promises.
func (h *Header) NBytes() int64 { return h.Numel() * int64(h.DType.Size()) }

// descrs maps each supported dtype to the descr NumPy writes for it.
var descrs = map[serialization.DataType]string{
	serialization.Float32: "<f4",
	serialization.Int32:   "<i4",
	serialization.Int64:   "<i8",
	serialization.Bool:    "|b1",
	serialization.Float64: "<f8",
	serialization.Uint8:   "|u1",
	serialization.Int8:    "|i1",
	serialization.Float16: "<f2",
}

// Descr returns the descr NumPy writes for dt, e.g. "<f4" for Float32.
func Descr(dt serialization.DataType) (string, bool) {
	d, ok := descrs[dt]
	return d, ok
}

// parseDescr maps a descr string to a DataType. The byte-order character of
// a one-byte type does not matter; a multi-byte type must be little-endian.
func parseDescr(descr string, off int64) (serialization.DataType, error) {
	unsupported := func() error {
		return formatErr(off, ErrUnsupportedDType, "dtype %q is not supported (want one of <f4 <i4 <i8 |b1 <f8 |u1 |i1 <f2)", descr)
	}
	if len(descr) < 2 {
		return 0, unsupported()
	}
	order, code := descr[0], descr[1:]
	switch order {
	case '<', '>', '|', '=':
	default:
		order, code = 0, descr
	}
	var dt serialization.DataType
	switch code {
	case "b1":
		dt = serialization.Bool
	case "u1":
		dt = serialization.Uint8
	case "i1":
		dt = serialization.Int8
	case "f2":
		dt = serialization.Float16
	case "f4":
		dt = serialization.Float32
	case "f8":
		dt = serialization.Float64
	case "i4":
		dt = serialization.Int32
	case "i8":
		dt = serialization.Int64
	default:
		return 0, unsupported()
	}
	if dt.Size() == 1 {
		return dt, nil
	}
	switch order {
	case '<':
		return dt, nil
	case '>':
		return 0, formatErr(off, ErrBigEndian, "dtype %q: %v (save it with .astype('%s') first)", descr, ErrBigEndian, "<"+code)
	}
	return 0, formatErr(off, ErrUnsupportedDType, "dtype %q has no explicit little-endian byte order", descr)
}

// ReadHeader reads the magic, version and header dict from r and leaves r at
// the first data byte.
func ReadHeader(r io.Reader) (*Header, error) {
	var pre [prefixLen + 4]byte
	if n, err := io.ReadFull(r, pre[:prefixLen]); err != nil {
		if m := min(n, len(Magic)); !bytes.Equal(pre[:m], []byte(Magic[:m])) {
			return nil, formatErr(0, ErrBadMagic, "%v: file does not start with \\x93NUMPY", ErrBadMagic)
		}
		return nil, readErr(0, err, "file ends inside the magic and version")
	}
	if string(pre[:len(Magic)]) != Magic {
		return nil, formatErr(0, ErrBadMagic, "%v: file does not start with \\x93NUMPY", ErrBadMagic)
	}
	h := &Header{Major: pre[6], Minor: pre[7]}
	var lenSize int
	switch {
	case h.Major == 1 && h.Minor == 0:
		lenSize = 2
	case (h.Major == 2 || h.Major == 3) && h.Minor == 0:
		lenSize = 4
	default:
		return nil, formatErr(6, ErrVersion, "format version %d.%d is not supported (want 1.0, 2.0 or 3.0)", h.Major, h.Minor)
	}
	if _, err := io.ReadFull(r, pre[prefixLen:prefixLen+lenSize]); err != nil {
		return nil, readErr(prefixLen, err, "file ends inside the header length")
	}
	var hlen uint64
	if lenSize == 2 {
		hlen = uint64(binary.LittleEndian.Uint16(pre[prefixLen:]))
	} else {
		hlen = uint64(binary.LittleEndian.Uint32(pre[prefixLen:]))
	}
	if hlen > MaxHeaderLen {
		return nil, formatErr(prefixLen, ErrLimit, "header length %d exceeds %d bytes", hlen, MaxHeaderLen)
	}
	hoff := int64(prefixLen + lenSize)
	buf := make([]byte, hlen)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, readErr(hoff, err, "file ends inside the %d-byte header", hlen)
	}
	h.DataOffset = hoff + int64(hlen)
	if err := h.parseDict(buf, hoff); err != nil {
		return nil, err
	}
	return h, nil
}

// readErr turns a short read into ErrBadHeader and passes other I/O errors
// through.
func readErr(off int64, err error, format string, args ...any) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatErr(off, ErrBadHeader, format, args...)
	}
	return fmt.Errorf("npy: reading header: %w", err)
}

// parseDict parses the header dict and fills h.
func (h *Header) parseDict(buf []byte, off int64) error {
	if h.Major < 3 {
		// Versions 1 and 2 are latin-1; anything outside ASCII cannot be
		// part of a valid dict, so reject it outright.
		for i, c := range buf {
			if c >= 0x80 {
				return formatErr(off+int64(i), ErrBadHeader, "header: non-ASCII byte 0x%02x", c)
			}
		}
	} else if !utf8.Valid(buf) {
		return formatErr(off, ErrBadHeader, "header: invalid UTF-8")
	}
	v, err := parseHeaderLiteral(string(buf), off)
	if err != nil {
		return err
	}
	if v.kind != pyDict {
		return formatErr(off, ErrBadHeader, "header: %s is not a dict", v.describe())
	}
	var haveDescr, haveOrder, haveShape bool
	var descr, shape pyValue
	for i, k := range v.keys {
		item := v.items[i]
		switch k {
		case "descr":
			haveDescr, descr = true, item
		case "fortran_order":
			if item.kind != pyBool {
				return formatErr(off, ErrBadHeader, "header: fortran_order is %s, want True or False", item.describe())
			}
			haveOrder, h.FortranOrder = true, item.bool
		case "shape":
			haveShape, shape = true, item
		default:
			return formatErr(off, ErrBadHeader, "header: unexpected key %q", k)
		}
	}
	switch {
	case !haveDescr:
		return formatErr(off, ErrBadHeader, "header: no 'descr' key")
	case !haveOrder:
		return formatErr(off, ErrBadHeader, "header: no 'fortran_order' key")
	case !haveShape:
		return formatErr(off, ErrBadHeader, "header: no 'shape' key")
	}
	if descr.kind != pyStr {
		// A list is a structured dtype, which has no tensor equivalent.
		if descr.kind == pyList {
			return formatErr(off, ErrUnsupportedDType, "structured dtypes are not supported")
		}
		return formatErr(off, ErrBadHeader, "header: descr is %s, want a string", descr.describe())
	}
	h.Descr = descr.str
	if h.DType, err = parseDescr(descr.str, off); err != nil {
		return err
	}
	if shape.kind != pyTuple {
		return formatErr(off, ErrBadHeader, "header: shape is %s, want a tuple", shape.describe())
	}
	if len(shape.items) > MaxDims {
		return formatErr(off, ErrLimit, "shape has %d dims, limit %d", len(shape.items), MaxDims)
	}
	h.Shape = make([]int64, len(shape.items))
	numel := int64(1)
	for i, d := range shape.items {
		if d.kind != pyInt || d.num < 0 {
			return formatErr(off, ErrBadHeader, "header: shape[%d] is %s, want a non-negative int", i, d.describe())
		}
		h.Shape[i] = d.num
		if d.num != 0 && numel > MaxDataBytes/d.num {
			return formatErr(off, ErrLimit, "shape %v exceeds %d elements", shape.items, int64(MaxDataBytes))
		}
		numel *= d.num
	}
	if numel > MaxDataBytes/int64(h.DType.Size()) {
		return formatErr(off, ErrLimit, "array of %d %v elements exceeds %d bytes", numel, h.DType, int64(MaxDataBytes))
	}
	if h.FortranOrder {
		// NumPy sets fortran_order only for arrays that are not also C
		// contiguous, so the bytes really are column-major: reject rather
		// than transpose behind the caller's back.
		return formatErr(off, ErrFortranOrder, "%v: save it with np.ascontiguousarray first", ErrFortranOrder)
	}
	return nil
}

// Read reads one array from r and leaves r just past its data, so several
// arrays written back to back can be read in turn. Use Decode or ReadFile to
// also reject trailing bytes.
func Read(r io.Reader) (Tensor, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return Tensor{}, err
	}
	n := h.NBytes()
	// Grow the buffer as bytes arrive rather than trusting the header's size.
	var buf bytes.Buffer
	got, err := io.Copy(&buf, io.LimitReader(r, n))
	if err != nil {
		return Tensor{}, fmt.Errorf("npy: reading data: %w", err)
	}
	if got != n {
		return Tensor{}, formatErr(h.DataOffset, ErrDataLength, "%v: shape %v of %s needs %d data bytes, file has %d", ErrDataLength, h.Shape, h.Descr, n, got)
	}
	return Tensor{DType: h.DType, Shape: h.Shape, Data: buf.Bytes()}, nil
}

// Decode decodes a whole .npy file held in b. The data must end exactly
// where the shape says. The returned tensor's Data aliases b.
func Decode(b []byte) (Tensor, error) {
	r := bytes.NewReader(b)
	h, err := ReadHeader(r)
	if err != nil {
		return Tensor{}, err
	}
	n, have := h.NBytes(), int64(len(b))-h.DataOffset
	if have != n {
		return Tensor{}, formatErr(h.DataOffset, ErrDataLength, "%v: shape %v of %s needs %d data bytes, file has %d", ErrDataLength, h.Shape, h.Descr, n, have)
	}
	end := h.DataOffset + n
	return Tensor{DType: h.DType, Shape: h.Shape, Data: b[h.DataOffset:end:end]}, nil
}

// ReadFile reads the .npy file at path, which must hold exactly one array.
func ReadFile(path string) (Tensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Tensor{}, err
	}
	t, err := Decode(b)
	if err != nil {
		return Tensor{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

package npy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// arrayAlign is the boundary the data starts on (numpy.lib.format.ARRAY_ALIGN).
const arrayAlign = 64

// growthAxisMaxDigits is NumPy's GROWTH_AXIS_MAX_DIGITS: np.save leaves
// 21 - len(repr(shape[0])) spare spaces after the dict so the first axis
// can grow in place. Writing them too keeps the output byte-identical.
const growthAxisMaxDigits = 21

// headerDict returns the dict text np.save writes for dtype descr and shape,
// growth padding included but not the alignment padding.
func headerDict(descr string, shape []int64) string {
	var b strings.Builder
	b.WriteString("{'descr': '")
	b.WriteString(descr)
	b.WriteString("', 'fortran_order': False, 'shape': (")
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteString("), }")
	if len(shape) > 0 {
		b.WriteString(strings.Repeat(" ", growthAxisMaxDigits-len(strconv.FormatInt(shape[0], 10))))
	}
	return b.String()
}

// EncodeHeader returns the magic, version, length and padded header dict for
// an array of t's dtype and shape, exactly as np.save writes them: version
// 1.0 unless the header needs more than 65535 bytes, then 2.0; spaces and a
// final '\n' make the total a multiple of 64.
func EncodeHeader(t Tensor) ([]byte, error) {
	descr, ok := Descr(t.DType)
	if !ok {
		return nil, fmt.Errorf("npy: %w: cannot write %v", ErrUnsupportedDType, t.DType)
	}
	if len(t.Shape) > MaxDims {
		return nil, fmt.Errorf("npy: %w: shape has %d dims, limit %d", ErrLimit, len(t.Shape), MaxDims)
	}
	numel := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return nil, fmt.Errorf("npy: %w: negative dimension in shape %v", ErrBadShape, t.Shape)
		}
		if d != 0 && numel > math.MaxInt64/d {
			return nil, fmt.Errorf("npy: %w: shape %v overflows", ErrLimit, t.Shape)
		}
		numel *= d
	}
	if want := numel * int64(t.DType.Size()); numel > math.MaxInt64/int64(t.DType.Size()) || int64(len(t.Data)) != want {
		return nil, fmt.Errorf("npy: %w: shape %v of %v needs %d bytes, tensor has %d", ErrDataLength, t.Shape, t.DType, want, len(t.Data))
	}
	dict := headerDict(descr, t.Shape)
	// hlen counts the dict and the final newline, as NumPy's _wrap_header.
	hlen := len(dict) + 1
	major, lenSize := byte(1), 2
	if pad := arrayAlign - (prefixLen+2+hlen)%arrayAlign; hlen+pad > math.MaxUint16 {
		major, lenSize = 2, 4
	}
	// NumPy pads a full 64 bytes when the length is already aligned.
	pad := arrayAlign - (prefixLen+lenSize+hlen)%arrayAlign
	out := make([]byte, 0, prefixLen+lenSize+hlen+pad)
	out = append(out, Magic...)
	out = append(out, major, 0)
	if lenSize == 2 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen+pad))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen+pad))
	}
	out = append(out, dict...)
	for range pad {
		out = append(out, ' ')
	}
	return append(out, '\n'), nil
}

// Write writes t to w as a .npy file.
func Write(w io.Writer, t Tensor) error {
	hdr, err := EncodeHeader(t)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if _, err := w.Write(t.Data); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}

// Encode returns t as the bytes of a .npy file.
func Encode(t Tensor) ([]byte, error) {
	hdr, err := EncodeHeader(t)
	if err != nil {
		return nil, err
	}
	return append(hdr, t.Data...), nil
}

// WriteFile writes t to a .npy file at path, replacing any file there.
func WriteFile(path string, t Tensor) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path) // do not leave a truncated array behind
		}
	}()
	bw := bufio.NewWriter(f)
	if err := Write(bw, t); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return bw.Flush()
}

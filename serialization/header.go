package serialization

import (
	"encoding/binary"
	"math"
)

// VH00 header field offsets (spec section 1.1). All fields are little-endian
// regardless of host: both upstream writer and reader assemble them byte by
// byte.
const (
	offMagic            = 4
	offHeaderSize       = 8
	offFlatbufferOffset = 10
	offFlatbufferSize   = 14
	offBytesOffset      = 18
	offBytesSize        = 22
)

var headerMagic = []byte("VH00")

// ParseHeader decodes and validates the 30-byte VH00 header at the start of
// a Vulkan delegate blob. It makes every check the upstream C++ readers make
// (spec section 1.3), with overflow-safe arithmetic: the header must be at
// least 30 bytes with magic "VH00" at [4,8), header_size >= 30,
// flatbuffer_offset >= header_size, flatbuffer_size != 0, the constant bytes
// must start at or after the end of the flatbuffer, and both ranges must lie
// inside b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, formatErr(0, ErrTruncated, len(b), "delegate blob shorter than the %d-byte VH00 header", HeaderLen)
	}
	if string(b[offMagic:offMagic+4]) != string(headerMagic) {
		return Header{}, formatErr(offMagic, ErrBadMagic, printable(b[offMagic:offMagic+4]), "not a Vulkan delegate blob: magic is not VH00")
	}
	h := Header{
		HeaderSize:       binary.LittleEndian.Uint16(b[offHeaderSize:]),
		FlatbufferOffset: binary.LittleEndian.Uint32(b[offFlatbufferOffset:]),
		FlatbufferSize:   binary.LittleEndian.Uint32(b[offFlatbufferSize:]),
		BytesOffset:      binary.LittleEndian.Uint32(b[offBytesOffset:]),
		BytesSize:        binary.LittleEndian.Uint64(b[offBytesSize:]),
	}
	n := uint64(len(b))
	fbOff, fbSize := uint64(h.FlatbufferOffset), uint64(h.FlatbufferSize)
	bytesOff := uint64(h.BytesOffset)
	switch {
	case h.HeaderSize < HeaderLen:
		return Header{}, formatErr(offHeaderSize, ErrBadHeader, h.HeaderSize, "header_size below %d", HeaderLen)
	case fbOff < uint64(h.HeaderSize):
		return Header{}, formatErr(offFlatbufferOffset, ErrBadHeader, h.FlatbufferOffset, "flatbuffer_offset below header_size %d", h.HeaderSize)
	case fbSize == 0:
		return Header{}, formatErr(offFlatbufferSize, ErrBadHeader, 0, "flatbuffer_size is zero")
	// uint32+uint32 cannot overflow uint64, so these sums are exact.
	case bytesOff < fbOff+fbSize:
		return Header{}, formatErr(offBytesOffset, ErrBadHeader, h.BytesOffset, "bytes_offset overlaps the flatbuffer [%d,%d)", fbOff, fbOff+fbSize)
	case fbOff+fbSize > n:
		return Header{}, formatErr(offFlatbufferSize, ErrTruncated, h.FlatbufferSize, "flatbuffer [%d,%d) past end of %d-byte blob", fbOff, fbOff+fbSize, n)
	// bytesOff <= n is implied by the checks above only when bytesOff ==
	// fbOff+fbSize, so test it before subtracting.
	case bytesOff > n || h.BytesSize > n-bytesOff:
		return Header{}, formatErr(offBytesSize, ErrTruncated, h.BytesSize, "constant bytes at %d past end of %d-byte blob", bytesOff, n)
	}
	return h, nil
}

// newHeader returns the header the upstream writer produces for a
// flatbuffer of fbSize bytes and a constant region of bytesSize bytes
// (spec section 1.2): flatbuffer at 32, constants after it padded to 16.
func newHeader(fbSize uint32, bytesSize uint64) Header {
	return Header{
		HeaderSize:       HeaderLen,
		FlatbufferOffset: PaddedHeaderLen,
		FlatbufferSize:   fbSize,
		BytesOffset:      uint32(PaddedHeaderLen + roundUp(uint64(fbSize), 16)),
		BytesSize:        bytesSize,
	}
}

// appendHeader appends h as the 32-byte padded VH00 header.
func appendHeader(dst []byte, h Header) []byte {
	var hb [PaddedHeaderLen]byte
	copy(hb[offMagic:], headerMagic)
	binary.LittleEndian.PutUint16(hb[offHeaderSize:], h.HeaderSize)
	binary.LittleEndian.PutUint32(hb[offFlatbufferOffset:], h.FlatbufferOffset)
	binary.LittleEndian.PutUint32(hb[offFlatbufferSize:], h.FlatbufferSize)
	binary.LittleEndian.PutUint32(hb[offBytesOffset:], h.BytesOffset)
	binary.LittleEndian.PutUint64(hb[offBytesSize:], h.BytesSize)
	return append(dst, hb[:]...)
}

// roundUp rounds n up to a multiple of align (a power of two), saturating
// instead of wrapping so callers' range checks still fail on huge inputs.
func roundUp(n, align uint64) uint64 {
	if n > math.MaxUint64-(align-1) {
		return math.MaxUint64
	}
	return (n + align - 1) &^ (align - 1)
}

// printable renders a magic for an error message without dumping control
// bytes into it.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

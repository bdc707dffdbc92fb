package serialization

import (
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/flattensor"
)

// FlatTensor (.ptd) identifiers and the FH01 header layout, relative to file
// offset 8 (spec section 7.2).
const (
	FlatTensorIdentifier = "FT01"

	ftHeaderOffset = 8
	ftHeaderMagic  = "FH01"
	ftHeaderLen    = 40
	// ftHeaderPadded is how many bytes the writer inserts at offset 8: the
	// 40-byte header rounded up to 16. The header's flatbuffer_offset field
	// records this number.
	ftHeaderPadded = 48
)

// flatTensorHeader is the decoded FH01 header.
type flatTensorHeader struct {
	length            uint32
	flatbufferOffset  uint64
	flatbufferSize    uint64
	segmentBaseOffset uint64
	segmentDataSize   uint64
}

// ParseFlatTensor parses a .ptd file: identifier FT01, the FH01 header at
// offset 8, the FlatTensor flatbuffer in [0, flatbuffer_offset +
// flatbuffer_size), and named_data resolved to segment bytes at
// segment_base_offset + segments[i].offset. The map's values are sub-slices
// of data.
func ParseFlatTensor(data []byte) (m *NamedDataMap, err error) {
	defer recoverFormat(&err, 0)
	if len(data) < 8 {
		return nil, formatErr(0, ErrTruncated, len(data), ".ptd shorter than 8 bytes")
	}
	if string(data[4:8]) != FlatTensorIdentifier {
		return nil, formatErr(4, ErrBadIdentifier, printable(data[4:8]), "not a FlatTensor file: identifier is not %s", FlatTensorIdentifier)
	}
	h, err := parseFlatTensorHeader(data)
	if err != nil {
		return nil, err
	}
	fb := data[:h.flatbufferOffset+h.flatbufferSize]
	if uint64(len(fb)) > MaxFlatbufferSize {
		return nil, formatErr(0, ErrLimit, len(fb), "FlatTensor flatbuffer larger than %d bytes", MaxFlatbufferSize)
	}
	v := newVerifier(fb, 0)
	t, err := v.root("FlatTensor")
	if err != nil {
		return nil, err
	}
	if err := v.scalar(t, 0, 4, "FlatTensor"); err != nil {
		return nil, err
	}

	start, n, _, err := v.vector(t, 1, 4, MaxSegments, "FlatTensor.segments")
	if err != nil {
		return nil, err
	}
	segs := make([][]byte, n)
	for i := range segs {
		st, err := dataSegment(v, start, uint32(i))
		if err != nil {
			return nil, err
		}
		var x flattensor.DataSegment
		x.Init(v.buf, flatbuffers.UOffsetT(st.pos))
		seg, ok := resolveRange(data, h.segmentBaseOffset, x.Offset(), x.Size())
		if !ok {
			return nil, v.errAt(uint64(st.pos), ErrTruncated, x.Offset(), "segment %d [base %d + %d, +%d) past end of %d-byte file", i, h.segmentBaseOffset, x.Offset(), x.Size(), len(data))
		}
		segs[i] = seg
	}

	start, n, _, err = v.vector(t, 2, 4, MaxNamedData, "FlatTensor.named_data")
	if err != nil {
		return nil, err
	}
	m = NewNamedDataMap()
	for i := uint32(0); i < n; i++ {
		nt, err := v.elemTable(start, i, "NamedData")
		if err != nil {
			return nil, err
		}
		if err := v.scalar(nt, 1, 4, "NamedData"); err != nil {
			return nil, err
		}
		key, _, err := v.str(nt, 0, "NamedData.key")
		if err != nil {
			return nil, err
		}
		var x flattensor.NamedData
		x.Init(v.buf, flatbuffers.UOffsetT(nt.pos))
		idx := x.SegmentIndex()
		if uint64(idx) >= uint64(len(segs)) {
			return nil, v.errAt(uint64(nt.pos), ErrBadIndex, idx, "named data %q: segment_index out of range [0,%d)", key, len(segs))
		}
		if err := m.Add(key, segs[idx]); err != nil {
			return nil, v.errAt(uint64(nt.pos), ErrDuplicateKey, key, "named data key appears twice with different bytes")
		}
	}
	return m, nil
}

func parseFlatTensorHeader(data []byte) (flatTensorHeader, error) {
	const o = ftHeaderOffset
	if len(data) < o+8 || string(data[o:o+4]) != ftHeaderMagic {
		end := min(len(data), o+4)
		return flatTensorHeader{}, formatErr(o, ErrBadMagic, printable(data[min(o, end):end]), "FlatTensor file has no FH01 header")
	}
	h := flatTensorHeader{length: binary.LittleEndian.Uint32(data[o+4:])}
	if h.length < ftHeaderLen {
		return flatTensorHeader{}, formatErr(o+4, ErrBadHeader, h.length, "FH01 header length below %d", ftHeaderLen)
	}
	if len(data) < o+ftHeaderLen {
		return flatTensorHeader{}, formatErr(o, ErrTruncated, len(data), "file ends inside the FH01 header")
	}
	h.flatbufferOffset = binary.LittleEndian.Uint64(data[o+8:])
	h.flatbufferSize = binary.LittleEndian.Uint64(data[o+16:])
	h.segmentBaseOffset = binary.LittleEndian.Uint64(data[o+24:])
	h.segmentDataSize = binary.LittleEndian.Uint64(data[o+32:])
	n := uint64(len(data))
	switch {
	// The flatbuffer, header included, is [0, offset+size): the offset is
	// the inserted header's padded length, so it cannot be smaller than
	// the header's end.
	case h.flatbufferOffset < o+uint64(h.length):
		return flatTensorHeader{}, formatErr(o+8, ErrBadHeader, h.flatbufferOffset, "FH01 flatbuffer_offset inside the header")
	case h.flatbufferOffset > n || h.flatbufferSize > n-h.flatbufferOffset:
		return flatTensorHeader{}, formatErr(o+16, ErrTruncated, h.flatbufferSize, "FH01 flatbuffer past end of %d-byte file", n)
	case h.segmentBaseOffset < h.flatbufferOffset+h.flatbufferSize:
		return flatTensorHeader{}, formatErr(o+24, ErrBadHeader, h.segmentBaseOffset, "FH01 segment_base_offset inside the flatbuffer")
	}
	return h, nil
}

package serialization

import "encoding/binary"

// The flatbuffers Go runtime (2.0.8) has no verifier: its generated accessors
// index the byte slice directly and panic (or silently read garbage) on a
// forged offset. verifier does what the C++ flatbuffers::Verifier does, one
// table at a time, right before the decoder touches that table through the
// generated accessors. So every accessor call below is preceded by a check
// that the bytes it will read exist and are well formed; the deferred
// recover at the decode boundary is only a backstop.
//
// Positions are offsets from the start of the flatbuffer (uint32, as in the
// format). Errors report them plus base, the flatbuffer's offset in the
// caller's input.

// verifier checks flatbuffer structures inside buf.
type verifier struct {
	buf  []byte
	base int64
	// budget is how many more decoded items (list elements, dims, ids,
	// string bytes) the decoder may materialise. It starts at len(buf): an
	// unshared flatbuffer spends at least one byte per item, so only a
	// buffer that points many tables at one big vector can exhaust it, and
	// that is exactly the amplification a forged file would use.
	budget int64
}

func newVerifier(buf []byte, base int64) *verifier {
	return &verifier{buf: buf, base: base, budget: int64(len(buf))}
}

// tbl is a verified table: pos is the table start, vt its vtable.
type tbl struct {
	pos    uint32
	vt     uint32
	vtLen  uint16 // vtable size in bytes (4 + 2*fields)
	objLen uint16 // inline size of the table in bytes
}

func (v *verifier) errAt(pos uint64, err error, val any, format string, args ...any) *FormatError {
	return formatErr(v.base+int64(pos), err, val, format, args...)
}

func (v *verifier) u16(pos uint32) uint16 { return binary.LittleEndian.Uint16(v.buf[pos:]) }
func (v *verifier) u32(pos uint32) uint32 { return binary.LittleEndian.Uint32(v.buf[pos:]) }

// spend charges n decoded items against the budget.
func (v *verifier) spend(pos uint32, n uint64, what string) error {
	if n > uint64(v.budget) {
		return v.errAt(uint64(pos), ErrLimit, n, "%s: decoded data would exceed the flatbuffer's size (shared vectors?)", what)
	}
	v.budget -= int64(n)
	return nil
}

// root verifies the root table whose offset is stored at buf[0:4].
func (v *verifier) root(what string) (tbl, error) {
	if len(v.buf) < 8 {
		return tbl{}, v.errAt(0, ErrTruncated, len(v.buf), "%s: flatbuffer shorter than 8 bytes", what)
	}
	if uint64(len(v.buf)) > MaxFlatbufferSize {
		return tbl{}, v.errAt(0, ErrLimit, len(v.buf), "%s: flatbuffer larger than %d bytes", what, MaxFlatbufferSize)
	}
	return v.table(uint64(v.u32(0)), what)
}

// table verifies the table at pos: its soffset, its vtable and the table's
// inline extent must lie inside buf and be aligned.
func (v *verifier) table(pos uint64, what string) (tbl, error) {
	n := uint64(len(v.buf))
	if pos%4 != 0 {
		return tbl{}, v.errAt(pos, ErrBadFlatbuffer, nil, "%s: misaligned table", what)
	}
	if pos+4 > n {
		return tbl{}, v.errAt(pos, ErrTruncated, nil, "%s: table past end of flatbuffer", what)
	}
	p := uint32(pos)
	vt := int64(pos) - int64(int32(v.u32(p)))
	if vt < 0 || uint64(vt)+4 > n {
		return tbl{}, v.errAt(pos, ErrTruncated, vt, "%s: vtable outside flatbuffer", what)
	}
	if vt%2 != 0 {
		return tbl{}, v.errAt(pos, ErrBadFlatbuffer, vt, "%s: misaligned vtable", what)
	}
	t := tbl{pos: p, vt: uint32(vt)}
	t.vtLen = v.u16(t.vt)
	t.objLen = v.u16(t.vt + 2)
	if t.vtLen < 4 || t.vtLen%2 != 0 {
		return tbl{}, v.errAt(uint64(vt), ErrBadFlatbuffer, t.vtLen, "%s: bad vtable size", what)
	}
	if uint64(t.vt)+uint64(t.vtLen) > n {
		return tbl{}, v.errAt(uint64(vt), ErrTruncated, t.vtLen, "%s: vtable past end of flatbuffer", what)
	}
	if t.objLen < 4 {
		return tbl{}, v.errAt(uint64(vt), ErrBadFlatbuffer, t.objLen, "%s: bad table size", what)
	}
	if pos+uint64(t.objLen) > n {
		return tbl{}, v.errAt(pos, ErrTruncated, t.objLen, "%s: table past end of flatbuffer", what)
	}
	return t, nil
}

// field returns the in-table offset of slot, or 0 when the field is absent
// (vtable too short, or entry 0), which readers must treat as the default.
func (v *verifier) field(t tbl, slot int) uint16 {
	vo := 4 + 2*slot
	if vo+2 > int(t.vtLen) {
		return 0
	}
	return v.u16(t.vt + uint32(vo))
}

// fieldAt checks that a size-byte field at in-table offset off lies inside
// buf and is aligned, and returns its absolute position. It deliberately
// does not bound the field by the vtable's table size: real exports
// (keyword_spotting_cortex_m.pte) record a table size of 8 for DataSegment
// tables whose 8-byte field sits at offset 4, and the C++ verifier, which
// only checks against the buffer, accepts them.
func (v *verifier) fieldAt(t tbl, slot int, off uint16, size int, what string) (uint32, error) {
	pos := uint64(t.pos) + uint64(off)
	if pos+uint64(size) > uint64(len(v.buf)) {
		return 0, v.errAt(uint64(t.pos), ErrTruncated, off, "%s: field %d past end of flatbuffer", what, slot)
	}
	if pos%uint64(size) != 0 {
		return 0, v.errAt(pos, ErrBadFlatbuffer, nil, "%s: misaligned field %d", what, slot)
	}
	return uint32(pos), nil
}

// scalar verifies a scalar field of size bytes (which may be absent).
func (v *verifier) scalar(t tbl, slot, size int, what string) error {
	off := v.field(t, slot)
	if off == 0 {
		return nil
	}
	_, err := v.fieldAt(t, slot, off, size, what)
	return err
}

// ref verifies an offset field and returns the absolute position it points
// to; ok is false when the field is absent.
func (v *verifier) ref(t tbl, slot int, what string) (target uint64, ok bool, err error) {
	off := v.field(t, slot)
	if off == 0 {
		return 0, false, nil
	}
	pos, err := v.fieldAt(t, slot, off, 4, what)
	if err != nil {
		return 0, false, err
	}
	target = uint64(pos) + uint64(v.u32(pos))
	if target >= uint64(len(v.buf)) {
		return 0, false, v.errAt(uint64(pos), ErrTruncated, target, "%s: field %d points past end of flatbuffer", what, slot)
	}
	return target, true, nil
}

// vecAt verifies a vector whose length prefix is at pos: the length must be
// at most maxLen (checked first, so a forged length is reported as a limit
// rather than attempted) and the elements must fit in buf.
func (v *verifier) vecAt(pos uint64, elemSize int, maxLen uint32, what string) (start, n uint32, err error) {
	if pos%4 != 0 {
		return 0, 0, v.errAt(pos, ErrBadFlatbuffer, nil, "%s: misaligned vector", what)
	}
	if pos+4 > uint64(len(v.buf)) {
		return 0, 0, v.errAt(pos, ErrTruncated, nil, "%s: vector past end of flatbuffer", what)
	}
	n = v.u32(uint32(pos))
	if n > maxLen {
		return 0, 0, v.errAt(pos, ErrLimit, n, "%s: %d elements, limit %d", what, n, maxLen)
	}
	if uint64(n)*uint64(elemSize) > uint64(len(v.buf))-pos-4 {
		return 0, 0, v.errAt(pos, ErrTruncated, n, "%s: vector of %d elements past end of flatbuffer", what, n)
	}
	return uint32(pos) + 4, n, nil
}

// vector verifies an optional vector field of scalars (or of offsets, with
// elemSize 4). An absent field yields n == 0.
func (v *verifier) vector(t tbl, slot, elemSize int, maxLen uint32, what string) (start, n uint32, ok bool, err error) {
	target, ok, err := v.ref(t, slot, what)
	if !ok || err != nil {
		return 0, 0, false, err
	}
	start, n, err = v.vecAt(target, elemSize, maxLen, what)
	return start, n, err == nil, err
}

// str verifies an optional string field: a byte vector followed by a NUL,
// as the C++ verifier requires. Invalid UTF-8 is accepted (flatbuffers do not
// promise it), since keys are compared as bytes.
func (v *verifier) str(t tbl, slot int, what string) (s string, ok bool, err error) {
	start, n, ok, err := v.vector(t, slot, 1, MaxStringLen, what)
	if !ok || err != nil {
		return "", false, err
	}
	end := uint64(start) + uint64(n)
	if end >= uint64(len(v.buf)) {
		return "", false, v.errAt(uint64(start)-4, ErrTruncated, nil, "%s: string terminator past end of flatbuffer", what)
	}
	if v.buf[end] != 0 {
		return "", false, v.errAt(end, ErrBadFlatbuffer, nil, "%s: string not NUL-terminated", what)
	}
	if err := v.spend(start, uint64(n), what); err != nil {
		return "", false, err
	}
	return string(v.buf[start:end]), true, nil
}

// elemTable verifies element i of a vector of tables starting at start.
func (v *verifier) elemTable(start, i uint32, what string) (tbl, error) {
	p := start + 4*i
	return v.table(uint64(p)+uint64(v.u32(p)), what)
}

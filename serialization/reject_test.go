package serialization

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// Rejection tests: one named case per malformed input, each built from a
// valid encoding with a few bytes changed by hand, asserting both the
// sentinel (errors.Is) and *FormatError (errors.As).

// nav helpers walk a flatbuffer with the verifier to find a field to break.
type fbNav struct {
	t testing.TB
	v *verifier
}

func newNav(t testing.TB, buf []byte) fbNav { return fbNav{t, newVerifier(buf, 0)} }

func (n fbNav) root() tbl {
	r, err := n.v.root("root")
	if err != nil {
		n.t.Fatal(err)
	}
	return r
}

// child follows the table reference in slot.
func (n fbNav) child(t tbl, slot int) tbl {
	pos, ok, err := n.v.ref(t, slot, "child")
	if err != nil || !ok {
		n.t.Fatalf("slot %d: %v %v", slot, ok, err)
	}
	c, err := n.v.table(pos, "child")
	if err != nil {
		n.t.Fatal(err)
	}
	return c
}

// elem returns element i of the vector of tables in slot.
func (n fbNav) elem(t tbl, slot int, i uint32) tbl {
	start, cnt, ok, err := n.v.vector(t, slot, 4, math.MaxUint32, "vec")
	if err != nil || !ok || i >= cnt {
		n.t.Fatalf("slot %d element %d: %v %v (len %d)", slot, i, ok, err, cnt)
	}
	e, err := n.v.elemTable(start, i, "elem")
	if err != nil {
		n.t.Fatal(err)
	}
	return e
}

// field returns the absolute position of a present field.
func (n fbNav) field(t tbl, slot int) uint32 {
	off := n.v.field(t, slot)
	if off == 0 {
		n.t.Fatalf("slot %d absent", slot)
	}
	return t.pos + uint32(off)
}

// vecLenPos returns the position of the length prefix of the vector in slot.
func (n fbNav) vecLenPos(t tbl, slot int) uint32 {
	start, _, ok, err := n.v.vector(t, slot, 1, math.MaxUint32, "vec")
	if err != nil || !ok {
		n.t.Fatalf("slot %d: %v %v", slot, ok, err)
	}
	return start - 4
}

func le32(b []byte, pos uint32, v uint32) { binary.LittleEndian.PutUint32(b[pos:], v) }

// validBlob returns a small valid delegate blob and its value ids.
func validBlob(t testing.TB) ([]byte, map[string]int32) {
	b := NewBuilder()
	ids := map[string]int32{}
	ids["x"] = b.Tensor(Float32, []uint32{2, 2}, 0)
	ids["w"] = b.InlineConst(Float32, []uint32{2, 2}, f32bytes(1, 2, 3, 4))
	ids["ints"] = b.IntList(1, 2, 3)
	ids["out"] = b.Tensor(Float32, []uint32{2, 2}, -1)
	ids["list"] = b.ValueList(ids["out"])
	b.Op("aten.add.Tensor", ids["x"], ids["w"], ids["out"])
	b.Inputs(ids["x"])
	b.Outputs(ids["out"])
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob, ids
}

// graphNav returns a navigator over the flatbuffer inside blob (positions
// relative to the flatbuffer; add 32 for blob offsets).
func graphNav(t testing.TB, blob []byte) (fbNav, []byte) {
	fb := blob[32 : 32+binary.LittleEndian.Uint32(blob[14:])]
	return newNav(t, fb), fb
}

func valueMember(n fbNav, root tbl, id int32) tbl {
	return n.child(n.elem(root, 2, uint32(id)), 1)
}

// rejectCase is one malformed input and the sentinel it must produce.
type rejectCase struct {
	name string
	make func(t testing.TB) []byte
	want error
}

func blobRejectCases() []rejectCase {
	header := func(mut func(b []byte)) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			b, _ := validBlob(t)
			mut(b)
			return b
		}
	}
	graph := func(mut func(n fbNav, root tbl, fb []byte, ids map[string]int32)) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			b, ids := validBlob(t)
			n, fb := graphNav(t, b)
			mut(n, n.root(), fb, ids)
			return b
		}
	}
	return []rejectCase{
		{"short buffer", func(t testing.TB) []byte { b, _ := validBlob(t); return b[:29] }, ErrTruncated},
		{"empty buffer", func(t testing.TB) []byte { return nil }, ErrTruncated},
		{"bad magic", header(func(b []byte) { copy(b[4:], "VH01") }), ErrBadMagic},
		{"header_size below 30", header(func(b []byte) { binary.LittleEndian.PutUint16(b[8:], 29) }), ErrBadHeader},
		{"flatbuffer_offset inside header", header(func(b []byte) { binary.LittleEndian.PutUint16(b[8:], 40) }), ErrBadHeader},
		{"flatbuffer_size zero", header(func(b []byte) { le32(b, 14, 0) }), ErrBadHeader},
		{"bytes_offset overlaps flatbuffer", header(func(b []byte) { le32(b, 18, 32+binary.LittleEndian.Uint32(b[14:])-1) }), ErrBadHeader},
		{"flatbuffer past end", header(func(b []byte) {
			size := uint32(len(b))
			le32(b, 14, size)
			le32(b, 18, size+32)
		}), ErrTruncated},
		{"bytes past end", header(func(b []byte) { binary.LittleEndian.PutUint64(b[22:], uint64(len(b))) }), ErrTruncated},
		{"overflowing flatbuffer range", header(func(b []byte) {
			le32(b, 10, 0xFFFFFFFF)
			le32(b, 14, 0xFFFFFFFF)
			le32(b, 18, 0xFFFFFFFF)
		}), ErrBadHeader},
		{"overflowing bytes_offset", header(func(b []byte) { le32(b, 18, 0xFFFFFFFF) }), ErrTruncated},
		{"overflowing bytes_size", header(func(b []byte) { binary.LittleEndian.PutUint64(b[22:], math.MaxUint64) }), ErrTruncated},
		{"wrong flatbuffer identifier", header(func(b []byte) { copy(b[36:], "VK01") }), ErrBadIdentifier},
		{"truncated flatbuffer", func(t testing.TB) []byte {
			b, _ := validBlob(t)
			// Keep only the first 40 bytes of the flatbuffer: the root
			// table is further in, so its offset points past the end.
			le32(b, 14, 40)
			return b
		}, ErrTruncated},
		{"misaligned root table", header(func(b []byte) { le32(b, 32, binary.LittleEndian.Uint32(b[32:])+2) }), ErrBadFlatbuffer},
		{"vtable outside flatbuffer", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			le32(fb, root.pos, 0x7FFFFFF0)
		}), ErrTruncated},
		{"string not NUL-terminated", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			name := n.vecLenPos(n.elem(root, 1, 0), 1)
			fb[name+4+binary.LittleEndian.Uint32(fb[name:])] = 'x'
		}), ErrBadFlatbuffer},
		{"op arg out of range", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			le32(fb, n.vecLenPos(n.elem(root, 1, 0), 2)+4, 5)
		}), ErrBadValueID},
		{"op arg negative", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			le32(fb, n.vecLenPos(n.elem(root, 1, 0), 2)+4, 0xFFFFFFFF)
		}), ErrBadValueID},
		{"input id out of range", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			le32(fb, n.vecLenPos(root, 3)+4, 5)
		}), ErrBadValueID},
		{"output id out of range", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			le32(fb, n.vecLenPos(root, 4)+4, 1000)
		}), ErrBadValueID},
		{"ValueList item out of range", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			le32(fb, n.vecLenPos(valueMember(n, root, ids["list"]), 0)+4, 5)
		}), ErrBadValueID},
		{"ValueList contains itself", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			le32(fb, n.vecLenPos(valueMember(n, root, ids["list"]), 0)+4, uint32(ids["list"]))
		}), ErrValueListCycle},
		{"ValueList cycle through another list", func(t testing.TB) []byte {
			b := NewBuilder()
			x := b.Int(1)
			first := b.ValueList(x, x+2) // x+2 is the next list
			b.ValueList(first)
			blob, err := b.Blob()
			if err != nil {
				t.Fatal(err)
			}
			return blob
		}, ErrValueListCycle},
		{"dims over cap", func(t testing.TB) []byte {
			b := NewBuilder()
			b.Tensor(Float32, make([]uint32, MaxTensorDims+1), -1)
			blob, err := b.Blob()
			if err != nil {
				t.Fatal(err)
			}
			return blob
		}, ErrLimit},
		{"list length over cap", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			// Only the length field: the cap must trip before any
			// allocation or bounds check sized by it.
			le32(fb, n.vecLenPos(valueMember(n, root, ids["ints"]), 0), MaxListLen+1)
		}), ErrLimit},
		{"list length past end", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			le32(fb, n.vecLenPos(valueMember(n, root, ids["ints"]), 0), 1<<20)
		}), ErrTruncated},
		{"values over cap", graph(func(n fbNav, root tbl, fb []byte, _ map[string]int32) {
			le32(fb, n.vecLenPos(root, 2), MaxValues+1)
		}), ErrLimit},
		{"unknown datatype", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			fb[n.field(valueMember(n, root, ids["x"]), 0)] = 8
		}), ErrBadDataType},
		{"unknown staging datatype", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			fb[n.field(valueMember(n, root, ids["x"]), 6)] = 99
		}), ErrBadDataType},
		{"constant_id out of range", graph(func(n fbNav, root tbl, fb []byte, ids map[string]int32) {
			le32(fb, n.field(valueMember(n, root, ids["x"]), 2), 1)
		}), ErrBadIndex},
		{"union member missing", func(t testing.TB) []byte {
			b := NewBuilder()
			b.Int(5)
			blob, err := b.Blob()
			if err != nil {
				t.Fatal(err)
			}
			n, fb := graphNav(t, blob)
			vt := n.elem(n.root(), 2, 0)
			binary.LittleEndian.PutUint16(fb[vt.vt+4+2:], 0) // vtable entry of slot 1
			return blob
		}, ErrBadFlatbuffer},
		{"shared list amplification", func(t testing.TB) []byte {
			// 64 values whose entries all point at one 1000-item IntList:
			// decoding would materialise far more than the buffer holds.
			b := NewBuilder()
			items := make([]int64, 1000)
			b.IntList(items...)
			for i := 0; i < 63; i++ {
				b.Null()
			}
			blob, err := b.Blob()
			if err != nil {
				t.Fatal(err)
			}
			n, fb := graphNav(t, blob)
			start := n.vecLenPos(n.root(), 2) + 4
			target := start + binary.LittleEndian.Uint32(fb[start:])
			for i := uint32(1); i < 64; i++ {
				p := start + 4*i
				le32(fb, p, target-p)
			}
			return blob
		}, ErrLimit},
	}
}

func TestRejectBlob(t *testing.T) {
	for _, c := range blobRejectCases() {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeBlob(c.make(t))
			assertFormatErr(t, err, c.want)
			t.Log(err)
		})
	}
}

func TestRejectInlineConstant(t *testing.T) {
	cases := []struct {
		name   string
		offset uint64
		dims   []uint32
	}{
		{"offset outside region", 64, []uint32{1}},
		{"offset at region end", 16, []uint32{1}},
		{"too short", 8, []uint32{4}},
		{"huge offset", math.MaxUint64 - 1, []uint32{1}},
		{"huge dims", 0, []uint32{1 << 30, 1 << 30}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder()
			id := b.InlineConst(Float32, c.dims, f32bytes(1, 2, 3, 4))
			b.Graph().Constants[0].Offset = c.offset
			bl, _ := blobRoundTrip(t, b)
			_, err := bl.ConstantBytes(bl.Graph.Values[id].Tensor)
			want := ErrBadConstant
			if c.name == "huge dims" {
				want = ErrLimit
			}
			assertFormatErr(t, err, want)
		})
	}
}

// validPTE returns a .pte with two segment delegates, two inline delegates
// and two named blobs, so every index field is present (non-default). B is
// called by a DelegateCall (delegate_index 1, args: values 0 and 1).
func validPTE(t testing.TB) []byte {
	data, err := EncodePTE(PTEOptions{
		Delegates: []DelegateSpec{
			{ID: "A", Blob: []byte("seg0")},
			{ID: "B", Blob: []byte("seg1"),
				Inputs:  []EValueSpec{{ScalarType: ScalarTypeFloat, Sizes: []int32{2, 3}}},
				Outputs: []EValueSpec{{ScalarType: ScalarTypeLong, Sizes: []int32{6}}}},
			{ID: "C", Blob: []byte("inline0"), Inline: true},
			{ID: "D", Blob: []byte("inline1"), Inline: true},
		},
		NamedData: []NamedBlob{{Key: "k0", Data: []byte("n0")}, {Key: "k1", Data: []byte("n1")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProgram(data); err != nil {
		t.Fatal(err)
	}
	return data
}

func programRejectCases() []rejectCase {
	pte := func(mut func(n fbNav, root tbl, b []byte)) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			b := validPTE(t)
			n := newNav(t, b)
			mut(n, n.root(), b)
			return b
		}
	}
	delegateRef := func(n fbNav, root tbl, i uint32) tbl {
		return n.child(n.elem(n.elem(root, 1, 0), 7, i), 1)
	}
	return []rejectCase{
		{"short file", func(t testing.TB) []byte { return []byte("ET12") }, ErrTruncated},
		{"bad identifier", pte(func(_ fbNav, _ tbl, b []byte) { copy(b[4:], "ET1-") }), ErrBadIdentifier},
		{"not a program", pte(func(_ fbNav, _ tbl, b []byte) { copy(b[4:], "VK00") }), ErrBadIdentifier},
		{"eh00 length too small", pte(func(_ fbNav, _ tbl, b []byte) { le32(b, 12, 16) }), ErrBadHeader},
		{"eh00 truncated", func(t testing.TB) []byte { return validPTE(t)[:30] }, ErrTruncated},
		{"eh00 program_size past end", pte(func(_ fbNav, _ tbl, b []byte) {
			binary.LittleEndian.PutUint64(b[16:], uint64(len(b))+1)
		}), ErrTruncated},
		{"eh00 program_size inside header", pte(func(_ fbNav, _ tbl, b []byte) {
			binary.LittleEndian.PutUint64(b[16:], 20)
		}), ErrBadHeader},
		{"eh00 segment base inside program", pte(func(_ fbNav, _ tbl, b []byte) {
			binary.LittleEndian.PutUint64(b[24:], binary.LittleEndian.Uint64(b[16:])-8)
		}), ErrBadHeader},
		{"segment out of range", pte(func(_ fbNav, _ tbl, b []byte) {
			binary.LittleEndian.PutUint64(b[24:], uint64(len(b))-2)
		}), ErrTruncated},
		{"segment offset overflows", pte(func(n fbNav, root tbl, b []byte) {
			binary.LittleEndian.PutUint64(b[n.field(n.elem(root, 4, 1), 0):], math.MaxUint64-64)
		}), ErrTruncated},
		{"segments without eh00", pte(func(_ fbNav, _ tbl, b []byte) { copy(b[8:], "xx00") }), ErrBadHeader},
		{"segment delegate index out of range", pte(func(n fbNav, root tbl, b []byte) {
			le32(b, n.field(delegateRef(n, root, 1), 1), 99)
		}), ErrBadIndex},
		{"inline delegate index out of range", pte(func(n fbNav, root tbl, b []byte) {
			le32(b, n.field(delegateRef(n, root, 3), 1), 2)
		}), ErrBadIndex},
		{"unknown delegate location", pte(func(n fbNav, root tbl, b []byte) {
			b[n.field(delegateRef(n, root, 1), 0)] = 7
		}), ErrBadFlatbuffer},
		{"named data segment index out of range", pte(func(n fbNav, root tbl, b []byte) {
			le32(b, n.field(n.elem(root, 7, 1), 1), 4)
		}), ErrBadIndex},
		{"plans over cap", pte(func(n fbNav, root tbl, b []byte) {
			le32(b, n.vecLenPos(root, 1), MaxPlans+1)
		}), ErrLimit},
	}
}

func TestRejectProgram(t *testing.T) {
	for _, c := range programRejectCases() {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseProgram(c.make(t))
			assertFormatErr(t, err, c.want)
			t.Log(err)
		})
	}
}

func validPTD(t testing.TB) []byte {
	data, err := EncodePTD([]NamedBlob{{Key: "k0", Data: []byte("zero")}, {Key: "k1", Data: []byte("one")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFlatTensor(data); err != nil {
		t.Fatal(err)
	}
	return data
}

func flatTensorRejectCases() []rejectCase {
	ptd := func(mut func(n fbNav, root tbl, b []byte)) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			b := validPTD(t)
			n := newNav(t, b)
			mut(n, n.root(), b)
			return b
		}
	}
	put64 := func(off int, v func(b []byte) uint64) func(n fbNav, root tbl, b []byte) {
		return func(_ fbNav, _ tbl, b []byte) { binary.LittleEndian.PutUint64(b[off:], v(b)) }
	}
	return []rejectCase{
		{"short file", func(t testing.TB) []byte { return []byte{0, 0, 0, 0, 'F', 'T'} }, ErrTruncated},
		{"bad identifier", ptd(func(_ fbNav, _ tbl, b []byte) { copy(b[4:], "FT02") }), ErrBadIdentifier},
		{"bad FH01 magic", ptd(func(_ fbNav, _ tbl, b []byte) { copy(b[8:], "FH02") }), ErrBadMagic},
		{"no FH01 header", func(t testing.TB) []byte { return validPTD(t)[:10] }, ErrBadMagic},
		{"FH01 length too small", ptd(func(_ fbNav, _ tbl, b []byte) { le32(b, 12, 32) }), ErrBadHeader},
		{"FH01 truncated", func(t testing.TB) []byte { return validPTD(t)[:40] }, ErrTruncated},
		{"FH01 flatbuffer_offset inside header", ptd(put64(16, func([]byte) uint64 { return 40 })), ErrBadHeader},
		{"FH01 flatbuffer past end", ptd(put64(24, func(b []byte) uint64 { return uint64(len(b)) })), ErrTruncated},
		{"FH01 flatbuffer size overflows", ptd(put64(24, func([]byte) uint64 { return math.MaxUint64 - 8 })), ErrTruncated},
		{"FH01 segment base inside flatbuffer", ptd(put64(32, func([]byte) uint64 { return 64 })), ErrBadHeader},
		{"segment out of range", ptd(put64(32, func(b []byte) uint64 { return uint64(len(b)) - 1 })), ErrTruncated},
		{"named segment index out of range", ptd(func(n fbNav, root tbl, b []byte) {
			le32(b, n.field(n.elem(root, 2, 1), 1), 2)
		}), ErrBadIndex},
		{"duplicate key with different bytes", ptd(func(_ fbNav, _ tbl, b []byte) {
			i := bytes.Index(b, []byte("k1\x00"))
			b[i+1] = '0'
		}), ErrDuplicateKey},
	}
}

func TestRejectFlatTensor(t *testing.T) {
	for _, c := range flatTensorRejectCases() {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFlatTensor(c.make(t))
			assertFormatErr(t, err, c.want)
			t.Log(err)
		})
	}
}

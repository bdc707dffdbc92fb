package serialization

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var realPrograms = []struct {
	file      string
	hdrLen    uint32 // 0: no eh00 header
	plans     int
	delegates []string // DelegateInfo.ID, in order
	segments  int
}{
	{"add_apple.pte", 0, 1, nil, 1},
	{"keyword_spotting_cortex_m.pte", 32, 1, nil, 1},
	{"module_linear_no_constant_segment.pte", 0, 1, nil, 0},
	{"stories260k_qnn.pte", 32, 29, []string{"QnnBackend", "QnnBackend"}, 2},
	{"xor.pte", 24, 4, nil, 1},
}

func TestRealPrograms(t *testing.T) {
	for _, rp := range realPrograms {
		t.Run(rp.file, func(t *testing.T) {
			p, data := parseReal(t, rp.file)
			if p.Identifier != "ET12" {
				t.Errorf("identifier %q", p.Identifier)
			}
			switch {
			case rp.hdrLen == 0 && p.Header != nil:
				t.Errorf("unexpected eh00 header %+v", p.Header)
			case rp.hdrLen != 0 && (p.Header == nil || p.Header.Length != rp.hdrLen):
				t.Errorf("eh00 header %+v, want length %d", p.Header, rp.hdrLen)
			}
			if len(p.Plans) != rp.plans || len(p.Segments) != rp.segments {
				t.Errorf("%d plans, %d segments; want %d, %d", len(p.Plans), len(p.Segments), rp.plans, rp.segments)
			}
			var ids []string
			for _, d := range p.Delegates {
				ids = append(ids, d.ID)
			}
			if !reflect.DeepEqual(ids, rp.delegates) {
				t.Errorf("delegates %q, want %q", ids, rp.delegates)
			}

			// None of them is a Vulkan model; the error must say what is there.
			_, err := p.DelegateBlob(VulkanBackendID)
			if !errors.Is(err, ErrNoDelegate) {
				t.Fatalf("DelegateBlob error %v, want ErrNoDelegate", err)
			}
			var nd *NoDelegateError
			if !errors.As(err, &nd) || nd.Want != VulkanBackendID {
				t.Fatalf("error %v is not a *NoDelegateError for VulkanBackend", err)
			}
			want := "serialization: no VulkanBackend delegate; program has no delegates"
			if len(rp.delegates) > 0 {
				want = "serialization: no VulkanBackend delegate; program has delegates: [QnnBackend]"
			}
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			for _, seg := range p.Segments {
				if len(seg) > 0 && !within(seg, data) {
					t.Error("segment is not a sub-slice of the file")
				}
			}
		})
	}
}

// within reports whether sub aliases memory inside whole.
func within(sub, whole []byte) bool {
	if len(sub) == 0 || len(whole) == 0 {
		return false
	}
	start := &whole[0]
	end := &whole[len(whole)-1]
	return uintptrOf(&sub[0]) >= uintptrOf(start) && uintptrOf(&sub[len(sub)-1]) <= uintptrOf(end)
}

func TestStoriesQnnDelegates(t *testing.T) {
	p, data := parseReal(t, "stories260k_qnn.pte")
	// Both methods' delegates point at segment 1, which fills the file
	// after the 128-aligned segment base; segment 0 is an empty placeholder.
	for i, d := range p.Delegates {
		if d.Location != LocationSegment || d.Index != 1 || len(d.CompileSpecs) != 1 || d.CompileSpecs[0].Key != "qnn_compile_spec" {
			t.Errorf("delegate %d: %+v", i, d)
		}
		if p.Plans[d.Plan] != []string{"kv_forward", "prefill_forward"}[i] {
			t.Errorf("delegate %d in plan %q", i, p.Plans[d.Plan])
		}
	}
	blob, err := p.DelegateBlob("QnnBackend")
	if err != nil {
		t.Fatal(err)
	}
	base := p.Header.SegmentBaseOffset
	if len(blob) != 1331456 || &blob[0] != &data[base] || base%128 != 0 || len(p.Segments[0]) != 0 {
		t.Errorf("QnnBackend blob: %d bytes at base %d", len(blob), base)
	}
}

// TestXorExternalConstants checks the portable-ops xor.pte against its
// xor.ptd: xor.pte has no Program.named_data; its weights are plan values
// whose Tensor.extra_tensor_info says EXTERNAL with a fully-qualified name,
// and xor.ptd must hold each under that key with sizes × 4 bytes (Float).
func TestXorExternalConstants(t *testing.T) {
	p, err := ParseProgram(readReal(t, "xor.pte"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseFlatTensor(readReal(t, "xor.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	if p.NamedData.Len() != 0 {
		t.Errorf("xor.pte named data %v, want none", p.NamedData.Keys())
	}
	wantKeys := []string{"net.linear.bias", "net.linear.weight", "net.linear2.bias", "net.linear2.weight"}
	if got := m.Keys(); !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("xor.ptd keys %q, want %q", got, wantKeys)
	}
	seen := map[string]bool{}
	for _, ext := range p.ExternalTensors {
		if p.Plans[ext.Plan] != "forward" {
			t.Errorf("external tensor %q in plan %q", ext.Key, p.Plans[ext.Plan])
		}
		seen[ext.Key] = true
		data, ok := m.Get(ext.Key)
		if !ok {
			t.Errorf("xor.pte key %q missing from xor.ptd", ext.Key)
			continue
		}
		numel := int64(1)
		for _, s := range ext.Sizes {
			numel *= int64(s)
		}
		if ext.ScalarType != 6 || int64(len(data)) != 4*numel {
			t.Errorf("%q: scalar type %d, sizes %v, %d bytes in .ptd", ext.Key, ext.ScalarType, ext.Sizes, len(data))
		}
	}
	for _, k := range wantKeys {
		if !seen[k] {
			t.Errorf("xor.pte does not reference %q", k)
		}
	}
	// The runtime's view: .pte named data merged with the .ptd.
	if err := p.NamedData.Merge(m); err != nil || p.NamedData.Len() != 4 {
		t.Errorf("merge: %v, %d keys", err, p.NamedData.Len())
	}
}

func TestEncodePTERoundTrip(t *testing.T) {
	vk := bytes.Repeat([]byte{0xAB}, 300)
	other := []byte("qnn payload")
	inl := bytes.Repeat([]byte{0xCD}, 33)
	named := []NamedBlob{
		{Key: "b", Data: []byte("bee")},
		{Key: "a", Data: bytes.Repeat([]byte{1}, 130)},
		{Key: "same-as-b", Data: []byte("bee")},
		{Key: "b", Data: []byte("bee")}, // repeated identically: fine
	}
	for _, hdrLen := range []int{0, 24, 32} {
		opts := PTEOptions{
			Delegates: []DelegateSpec{
				{ID: "QnnBackend", Blob: other},
				{ID: "InlineBackend", Blob: inl, Inline: true, CompileSpecs: []CompileSpec{{Key: "k", Value: []byte{9}}}},
				{ID: VulkanBackendID, Blob: vk},
			},
			NamedData:         named,
			ExtendedHeaderLen: hdrLen,
		}
		data, err := EncodePTE(opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseProgram(data)
		if err != nil {
			t.Fatalf("hdrLen %d: %v", hdrLen, err)
		}
		wantLen := uint32(hdrLen)
		if hdrLen == 0 {
			wantLen = 32
		}
		h := p.Header
		if h == nil || h.Length != wantLen {
			t.Fatalf("header %+v, want length %d", h, wantLen)
		}
		if string(data[8:12]) != "eh00" || h.SegmentBaseOffset%128 != 0 || h.SegmentBaseOffset != roundUp(h.ProgramSize, 128) {
			t.Errorf("header %+v", h)
		}
		// Root offset shifted by the padded header (32 for both lengths).
		if root := binary.LittleEndian.Uint32(data); root < 8+32 {
			t.Errorf("root offset %d not shifted past the header", root)
		}
		// 2 delegate segments + 2 distinct named payloads.
		if len(p.Segments) != 4 {
			t.Fatalf("%d segments, want 4", len(p.Segments))
		}
		for i, seg := range p.Segments {
			off := uint64(uintptrOf(&seg[0]) - uintptrOf(&data[0]))
			if off%128 != 0 {
				t.Errorf("segment %d at file offset %d, not 128-aligned", i, off)
			}
		}
		wantData := uint64(0)
		if wantLen >= 32 {
			last := p.Segments[3]
			wantData = uint64(uintptrOf(&last[0])-uintptrOf(&data[0])) + uint64(len(last)) - h.SegmentBaseOffset
			if uint64(len(data)) != h.SegmentBaseOffset+h.SegmentDataSize {
				t.Errorf("file is %d bytes, header says %d", len(data), h.SegmentBaseOffset+h.SegmentDataSize)
			}
		}
		if h.SegmentDataSize != wantData {
			t.Errorf("segment_data_size %d, want %d", h.SegmentDataSize, wantData)
		}
		for _, c := range []struct {
			id   string
			want []byte
		}{{VulkanBackendID, vk}, {"QnnBackend", other}, {"InlineBackend", inl}} {
			got, err := p.DelegateBlob(c.id)
			if err != nil || !bytes.Equal(got, c.want) || !within(got, data) {
				t.Errorf("DelegateBlob(%q) = %d bytes, %v", c.id, len(got), err)
			}
		}
		d := p.Delegates[1]
		if d.Location != LocationInline || d.Index != 0 || !reflect.DeepEqual(d.CompileSpecs, []CompileSpec{{Key: "k", Value: []byte{9}}}) {
			t.Errorf("inline delegate %+v", d)
		}
		if off := uintptrOf(&d.Data[0]) - uintptrOf(&data[0]); off%16 != 0 {
			t.Errorf("inline delegate data at %d, not 16-aligned (force_align)", off)
		}
		if p.Plans[0] != "forward" {
			t.Errorf("plans %q", p.Plans)
		}
		if got := p.NamedData.Keys(); !reflect.DeepEqual(got, []string{"a", "b", "same-as-b"}) {
			t.Errorf("named keys %q", got)
		}
		b1, _ := p.NamedData.Get("b")
		b2, _ := p.NamedData.Get("same-as-b")
		if string(b1) != "bee" || &b1[0] != &b2[0] {
			t.Error("identical named payloads should share one segment")
		}
		_, err = p.DelegateBlob("XnnpackBackend")
		var nd *NoDelegateError
		if !errors.As(err, &nd) || !reflect.DeepEqual(nd.Have, []string{"QnnBackend", "InlineBackend", VulkanBackendID}) {
			t.Errorf("missing delegate error %v", err)
		}
	}
}

func TestEncodePTEWithoutSegments(t *testing.T) {
	data, err := EncodePTE(PTEOptions{Delegates: []DelegateSpec{{ID: VulkanBackendID, Blob: []byte("vk"), Inline: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(data[8:12]) == "eh00" {
		t.Error("eh00 header written for a program without segments")
	}
	p, err := ParseProgram(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Header != nil || len(p.Segments) != 0 {
		t.Errorf("header %+v, %d segments", p.Header, len(p.Segments))
	}
	if blob, err := p.DelegateBlob(VulkanBackendID); err != nil || string(blob) != "vk" {
		t.Errorf("DelegateBlob = %q, %v", blob, err)
	}
	if _, err := EncodePTE(PTEOptions{ExtendedHeaderLen: 16}); err == nil {
		t.Error("extended header length 16 accepted")
	}
	_, err = EncodePTE(PTEOptions{NamedData: []NamedBlob{{"k", []byte{1}}, {"k", []byte{2}}}})
	if !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("conflicting named data: %v", err)
	}
}

func TestEncodePTDRoundTrip(t *testing.T) {
	named := []NamedBlob{
		{Key: "w", Data: bytes.Repeat([]byte{7}, 200)},
		{Key: "b", Data: []byte{1, 2, 3}},
		{Key: "b-copy", Data: []byte{1, 2, 3}},
	}
	data, err := EncodePTD(named)
	if err != nil {
		t.Fatal(err)
	}
	if string(data[4:8]) != "FT01" || string(data[8:12]) != "FH01" {
		t.Fatalf("magic % x", data[:12])
	}
	le := binary.LittleEndian
	fbOff, fbSize, base, size := le.Uint64(data[16:]), le.Uint64(data[24:]), le.Uint64(data[32:]), le.Uint64(data[40:])
	if le.Uint32(data[12:]) != 40 || fbOff != 48 || base != roundUp(48+fbSize, 128) || uint64(len(data)) != base+size {
		t.Errorf("FH01: len %d fb_offset %d fb_size %d base %d data %d (file %d)", le.Uint32(data[12:]), fbOff, fbSize, base, size, len(data))
	}
	m, err := ParseFlatTensor(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, nb := range named {
		got, ok := m.Get(nb.Key)
		if !ok || !bytes.Equal(got, nb.Data) {
			t.Errorf("%q: %v %v", nb.Key, got, ok)
			continue
		}
		if off := uintptrOf(&got[0]) - uintptrOf(&data[0]); off%128 != 0 {
			t.Errorf("%q at %d, not 128-aligned", nb.Key, off)
		}
	}
	if m.Len() != 3 {
		t.Errorf("%d keys", m.Len())
	}
	empty, err := EncodePTD(nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := ParseFlatTensor(empty); err != nil || m.Len() != 0 {
		t.Errorf("empty .ptd: %v, %v", m, err)
	}
}

func TestNamedDataMap(t *testing.T) {
	m := NewNamedDataMap()
	if err := m.Add("x", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Add("x", []byte{1}); err != nil {
		t.Errorf("identical re-add: %v", err)
	}
	if err := m.Add("x", []byte{2}); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("conflicting add: %v", err)
	}
	o := NewNamedDataMap()
	o.Add("z", []byte{3})
	o.Add("a", nil)
	o.Add("x", []byte{1})
	if err := m.Merge(o); err != nil {
		t.Fatal(err)
	}
	if got := m.Keys(); !reflect.DeepEqual(got, []string{"a", "x", "z"}) || m.Len() != 3 {
		t.Errorf("keys %q", got)
	}
	bad := NewNamedDataMap()
	bad.Add("new", []byte{4})
	bad.Add("z", []byte{4})
	if err := m.Merge(bad); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("conflicting merge: %v", err)
	}
	if _, ok := m.Get("new"); ok {
		t.Error("failed merge changed the map")
	}
	var nilMap *NamedDataMap
	if _, ok := nilMap.Get("x"); ok || nilMap.Len() != 0 || nilMap.Keys() != nil {
		t.Error("nil map is not empty")
	}
	var _ NamedData = m
}

func TestMapFile(t *testing.T) {
	dir := t.TempDir()
	want := []byte("hello mapped world")
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Bytes(), want) {
		t.Errorf("Bytes() = %q", m.Bytes())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil || m.Bytes() != nil {
		t.Errorf("second Close: %v, Bytes %v", err, m.Bytes())
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	m, err = MapFile(empty)
	if err != nil || len(m.Bytes()) != 0 {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := ParseProgram(m.Bytes()); !errors.Is(err, ErrTruncated) {
		t.Errorf("ParseProgram(empty) = %v", err)
	}
	m.Close()

	if _, err := MapFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := MapFile(dir); err == nil {
		t.Error("mapping a directory succeeded")
	}
}

func TestMapRealFiles(t *testing.T) {
	if _, err := os.Stat(realDir); err != nil {
		t.Skip("real files not present")
	}
	m, err := MapFile(filepath.Join(realDir, "stories260k_qnn.pte"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := ParseProgram(m.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	blob, err := p.DelegateBlob("QnnBackend")
	if err != nil || !within(blob, m.Bytes()) {
		t.Errorf("QnnBackend blob not a view of the mapping: %v", err)
	}
}

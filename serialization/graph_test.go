package serialization

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"testing"
)

// buildAllKinds returns a builder holding one value of every kind, an op
// using them, inline and named constants, and inputs/outputs.
func buildAllKinds() (*Builder, map[string]int32) {
	b := NewBuilder()
	ids := map[string]int32{}
	ids["x"] = b.Tensor(Float32, []uint32{2, 3}, 0)
	ids["w"] = b.InlineConst(Float32, []uint32{2, 3}, f32bytes(1, 2, 3, 4, 5, 6))
	ids["bias"], _ = b.NamedConst(Float32, []uint32{3}, f32bytes(7, 8, 9))
	ids["tied"], _ = b.NamedConst(Float32, []uint32{3}, f32bytes(7, 8, 9))
	ids["ext"] = b.NamedConstKey(Float16, []uint32{4}, "net.linear.bias", 8)
	ids["null"] = b.Null()
	ids["int"] = b.Int(-5)
	ids["int0"] = b.Int(0)
	ids["double"] = b.Double(1.5)
	ids["bool"] = b.Bool(true)
	ids["ints"] = b.IntList(1, -2, math.MaxInt64)
	ids["empty"] = b.IntList()
	ids["doubles"] = b.DoubleList(0.25, -3)
	ids["bools"] = b.BoolList(true, false, true)
	ids["str"] = b.String("tanh")
	ids["sym"] = b.SymInt(7)
	ids["out"] = b.Tensor(Float32, []uint32{2, 3}, -1)
	ids["list"] = b.ValueList(ids["out"], ids["x"])
	ids["i8"] = b.Tensor(Int8, nil, 1)
	b.Op("aten.add.Tensor", ids["x"], ids["w"], ids["double"], ids["out"])
	b.Op("aten.split.Tensor", ids["out"], ids["int"], ids["list"])
	b.Inputs(ids["x"], ids["sym"])
	b.Outputs(ids["out"])
	return b, ids
}

func f32bytes(v ...float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return out
}

func TestBuilderBlobRoundTrip(t *testing.T) {
	b, ids := buildAllKinds()
	got, blob := blobRoundTrip(t, b)
	assertGraphEqual(t, got.Graph, b.Graph())
	if !bytes.Equal(got.Constants, b.InlineData()) {
		t.Errorf("constants region: got %d bytes, want %d", len(got.Constants), len(b.InlineData()))
	}
	// The constant region is a view of the blob, not a copy.
	if len(got.Constants) > 0 && &got.Constants[0] != &blob[got.Header.BytesOffset] {
		t.Error("Blob.Constants is not a sub-slice of the input")
	}
	w, err := got.ConstantBytes(got.Graph.Values[ids["w"]].Tensor)
	if err != nil || !bytes.Equal(w, f32bytes(1, 2, 3, 4, 5, 6)) {
		t.Errorf("ConstantBytes(w) = %v, %v", w, err)
	}
}

func TestBuilderNamedConstDedup(t *testing.T) {
	b, ids := buildAllKinds()
	g := b.Graph()
	bias := g.Constants[g.Values[ids["bias"]].Tensor.ConstantID]
	tied := g.Constants[g.Values[ids["tied"]].Tensor.ConstantID]
	sum := sha256.Sum256(f32bytes(7, 8, 9))
	if bias.NamedKey != hex.EncodeToString(sum[:]) || !bias.IsNamed() || bias.Length != 12 {
		t.Errorf("named constant entry %+v", bias)
	}
	if tied.NamedKey != bias.NamedKey || g.Values[ids["bias"]].Tensor.ConstantID == g.Values[ids["tied"]].Tensor.ConstantID {
		t.Errorf("identical data should share a key but keep separate VkBytes entries: %+v %+v", bias, tied)
	}
	nb := b.NamedBlobs()
	if len(nb) != 1 || nb[0].Key != bias.NamedKey || !bytes.Equal(nb[0].Data, f32bytes(7, 8, 9)) {
		t.Errorf("NamedBlobs() = %+v", nb)
	}
}

func TestBlobLayout(t *testing.T) {
	b := NewBuilder()
	b.InlineConst(Uint8, []uint32{5}, []byte{1, 2, 3, 4, 5})
	b.InlineConst(Uint8, []uint32{3}, []byte{6, 7, 8})
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := EncodeGraph(b.Graph())
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(blob)
	if err != nil {
		t.Fatal(err)
	}
	// Each inline entry is padded to 16, the last one included, so the
	// region (and bytes_size, as upstream records it) is 32 bytes here.
	fbPad := (len(fb) + 15) &^ 15
	want := Header{HeaderSize: 30, FlatbufferOffset: 32, FlatbufferSize: uint32(len(fb)), BytesOffset: uint32(32 + fbPad), BytesSize: 32}
	if h != want {
		t.Fatalf("header %+v, want %+v", h, want)
	}
	if len(blob) != 32+fbPad+32 {
		t.Errorf("blob length %d, want %d", len(blob), 32+fbPad+32)
	}
	if !bytes.Equal(blob[32:32+len(fb)], fb) {
		t.Error("flatbuffer not at offset 32")
	}
	region := blob[h.BytesOffset:]
	wantRegion := append(append([]byte{1, 2, 3, 4, 5}, make([]byte, 11)...), 6, 7, 8)
	wantRegion = append(wantRegion, make([]byte, 13)...)
	if !bytes.Equal(region, wantRegion) {
		t.Errorf("constant region % x, want % x", region, wantRegion)
	}
	if g := b.Graph(); g.Constants[1].Offset != 16 || g.Constants[1].Length != 3 {
		t.Errorf("second inline constant %+v, want offset 16 length 3", g.Constants[1])
	}
	for _, i := range []int{30, 31} {
		if blob[i] != 0 {
			t.Errorf("header padding byte %d = %d", i, blob[i])
		}
	}
	for i := 32 + len(fb); i < 32+fbPad; i++ {
		if blob[i] != 0 {
			t.Errorf("flatbuffer padding byte %d = %d", i, blob[i])
		}
	}
}

// TestHeaderGolden reproduces the header bytes of the spec's section 1.4
// example: a 464-byte flatbuffer and no constant bytes.
func TestHeaderGolden(t *testing.T) {
	want, _ := hex.DecodeString("00000000564830301e002000" + "0000d001" + "0000f001" + "0000" + "0000000000000000" + "0000")
	fb := make([]byte, 464)
	copy(fb[4:], "VK00")
	blob, err := wrapBlob(fb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(blob) != 496 {
		t.Errorf("blob length %d, want 496", len(blob))
	}
	if !bytes.Equal(blob[:32], want) {
		t.Errorf("header\n got % x\nwant % x", blob[:32], want)
	}
	if string(blob[36:40]) != "VK00" {
		t.Errorf("identifier at 36..39 = %q", blob[36:40])
	}
	h, err := ParseHeader(blob)
	if err != nil {
		t.Fatal(err)
	}
	if h != (Header{HeaderSize: 30, FlatbufferOffset: 32, FlatbufferSize: 464, BytesOffset: 496}) {
		t.Errorf("parsed %+v", h)
	}
}

// TestParseHeaderWebGPUExample parses the hand-built 44-byte blob the
// upstream WebGPU native tests use.
func TestParseHeaderWebGPUExample(t *testing.T) {
	b := make([]byte, 44)
	copy(b[4:], "VH00")
	binary.LittleEndian.PutUint16(b[8:], 30)
	binary.LittleEndian.PutUint32(b[10:], 32)
	binary.LittleEndian.PutUint32(b[14:], 8)
	binary.LittleEndian.PutUint32(b[18:], 40)
	binary.LittleEndian.PutUint64(b[22:], 4)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h != (Header{30, 32, 8, 40, 4}) {
		t.Errorf("got %+v", h)
	}
	// Any shorter and the constant bytes no longer fit.
	_, err = ParseHeader(b[:43])
	assertFormatErr(t, err, ErrTruncated)
}

// TestDefaultsOmitted checks the writer omits default-valued scalars like
// flatc does, and the reader restores them.
func TestDefaultsOmitted(t *testing.T) {
	b := NewBuilder()
	b.AddValue(Value{Kind: KindTensor, Tensor: &Tensor{
		DataType: Bool, Dims: []uint32{4}, ConstantID: 0, MemObjID: 0,
		StorageType: DefaultStorage, MemoryLayout: DefaultLayout, StagingDataType: Unset,
	}})
	b.AddValue(Value{Kind: KindTensor, Tensor: &Tensor{
		DataType: Float32, Dims: []uint32{4}, ConstantID: -1, MemObjID: -1,
		StorageType: 1, MemoryLayout: 2, StagingDataType: Float32,
	}})
	b.Int(0)
	b.InlineConst(Bool, []uint32{4}, []byte{1, 0, 1, 0})
	fb, err := EncodeGraph(b.Graph())
	if err != nil {
		t.Fatal(err)
	}
	g, err := DecodeGraph(fb)
	if err != nil {
		t.Fatal(err)
	}
	if tt := g.Values[0].Tensor; tt.ConstantID != 0 || tt.MemObjID != 0 || tt.DataType != Bool ||
		tt.StorageType != 255 || tt.MemoryLayout != 255 || tt.StagingDataType != Unset {
		t.Errorf("defaults decoded as %+v", *tt)
	}
	assertGraphEqual(t, g, b.Graph())

	// Look at the vtables themselves.
	v := newVerifier(fb, 0)
	root, _ := v.root("VkGraph")
	for _, slot := range []int{7, 8} {
		if v.field(root, slot) != 0 {
			t.Errorf("VkGraph slot %d (default override) written", slot)
		}
	}
	vstart, _, _, _ := v.vector(root, 2, 4, MaxValues, "values")
	member := func(i uint32) tbl {
		vt, err := v.elemTable(vstart, i, "VkValue")
		if err != nil {
			t.Fatal(err)
		}
		pos, _, err := v.ref(vt, 1, "value")
		if err != nil {
			t.Fatal(err)
		}
		m, err := v.table(pos, "member")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	def := member(0)
	for slot := 0; slot <= 6; slot++ {
		if present := v.field(def, slot) != 0; present != (slot == 1) {
			t.Errorf("default tensor: slot %d present=%v", slot, present)
		}
	}
	set := member(1)
	for slot := 0; slot <= 6; slot++ {
		if v.field(set, slot) == 0 {
			t.Errorf("non-default tensor: slot %d missing", slot)
		}
	}
	if v.field(member(2), 0) != 0 {
		t.Error("Int(0) wrote int_val")
	}
	// An inline constant keeps its empty named_key, as flatc writes "".
	cstart, _, _, _ := v.vector(root, 5, 4, MaxConstants, "constants")
	ct, _ := v.elemTable(cstart, 0, "VkBytes")
	if v.field(ct, 0) != 0 || v.field(ct, 2) == 0 {
		t.Error("inline VkBytes: want offset 0 omitted and empty named_key present")
	}
	if !g.Constants[0].HasKey || g.Constants[0].NamedKey != "" {
		t.Errorf("decoded inline VkBytes %+v", g.Constants[0])
	}
}

func TestDecodeBlobRemainderConstants(t *testing.T) {
	b := NewBuilder()
	id := b.InlineConst(Int32, []uint32{2}, []byte{1, 0, 0, 0, 2, 0, 0, 0})
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	// Zero bytes_size: the runtimes take everything after bytes_offset.
	binary.LittleEndian.PutUint64(blob[22:], 0)
	got, err := DecodeBlob(blob)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Constants) != 16 {
		t.Fatalf("remainder region is %d bytes, want 16", len(got.Constants))
	}
	data, err := got.ConstantBytes(got.Graph.Values[id].Tensor)
	if err != nil || !bytes.Equal(data, []byte{1, 0, 0, 0, 2, 0, 0, 0}) {
		t.Errorf("ConstantBytes = %v, %v", data, err)
	}
}

func TestUnknownUnionTagDecodesAsNull(t *testing.T) {
	b := NewBuilder()
	b.AddValue(Value{Kind: KindNone})
	b.SymInt(3)
	fb, err := EncodeGraph(b.Graph())
	if err != nil {
		t.Fatal(err)
	}
	// Retag the SymInt as 12, a tag from a schema newer than ours.
	v := newVerifier(fb, 0)
	root, _ := v.root("VkGraph")
	vstart, _, _, _ := v.vector(root, 2, 4, MaxValues, "values")
	vt, _ := v.elemTable(vstart, 1, "VkValue")
	fb[vt.pos+uint32(v.field(vt, 0))] = 12
	g, err := DecodeGraph(fb)
	if err != nil {
		t.Fatal(err)
	}
	for i, val := range g.Values {
		if val.Kind != KindNull {
			t.Errorf("value %d: kind %v, want Null", i, val.Kind)
		}
	}
}

func TestNullWithoutMemberTable(t *testing.T) {
	fb := flatcBinary(t, `{"values": [{"value_type": "Null"}]}`)
	g, err := DecodeGraph(fb)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Values) != 1 || g.Values[0].Kind != KindNull {
		t.Errorf("values %+v", g.Values)
	}
}

func TestResolveConstant(t *testing.T) {
	b := NewBuilder()
	inl := b.InlineConst(Float32, []uint32{1}, f32bytes(1))
	named, key := b.NamedConst(Float32, []uint32{2}, f32bytes(2, 3))
	missing := b.NamedConstKey(Float32, []uint32{2}, "nope", 8)
	short := b.NamedConstKey(Float32, []uint32{4}, key, 16)
	empty := b.InlineConst(Float32, []uint32{0, 5}, nil)
	bl, _ := blobRoundTrip(t, b)
	nd := NewNamedDataMap()
	for _, n := range b.NamedBlobs() {
		if err := nd.Add(n.Key, n.Data); err != nil {
			t.Fatal(err)
		}
	}
	tensor := func(id int32) *Tensor { return bl.Graph.Values[id].Tensor }

	if got, err := bl.ResolveConstant(tensor(inl), nd); err != nil || !bytes.Equal(got, f32bytes(1)) {
		t.Errorf("inline: %v, %v", got, err)
	}
	if got, err := bl.ResolveConstant(tensor(named), nd); err != nil || !bytes.Equal(got, f32bytes(2, 3)) {
		t.Errorf("named: %v, %v", got, err)
	}
	if got, err := bl.ConstantBytes(tensor(empty)); err != nil || len(got) != 0 {
		t.Errorf("zero-element inline constant: %v, %v", got, err)
	}
	if _, err := bl.ConstantBytes(tensor(named)); !errors.Is(err, ErrNamedConstant) {
		t.Errorf("ConstantBytes(named) error %v, want ErrNamedConstant", err)
	}
	_, err := bl.ResolveConstant(tensor(missing), nd)
	assertFormatErr(t, err, ErrMissingKey)
	_, err = bl.ResolveConstant(tensor(missing), nil)
	assertFormatErr(t, err, ErrMissingKey)
	_, err = bl.ResolveConstant(tensor(short), nd)
	assertFormatErr(t, err, ErrBadConstant)
	if _, err := bl.ConstantBytes(bl.Graph.Values[0].Tensor); err != nil {
		t.Errorf("constant 0: %v", err)
	}
	if _, err := bl.ConstantBytes(&Tensor{ConstantID: -1}); err == nil {
		t.Error("ConstantBytes of a non-constant tensor succeeded")
	}
}

func TestTensorNumelAndNBytes(t *testing.T) {
	cases := []struct {
		name  string
		dims  []uint32
		dt    DataType
		numel int64
		bytes int64
		err   error
	}{
		{"scalar", nil, Float32, 1, 4, nil},
		{"matrix", []uint32{3, 4}, Float16, 12, 24, nil},
		{"zero dim", []uint32{0, math.MaxUint32, math.MaxUint32}, Int64, 0, 0, nil},
		{"at cap", []uint32{1 << 20, 1 << 20}, Uint8, 1 << 40, 1 << 40, nil},
		{"bytes over cap", []uint32{1 << 20, 1 << 20}, Int32, 1 << 40, 0, ErrLimit},
		{"numel overflow", []uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}, Uint8, 0, 0, ErrLimit},
		{"unset dtype", []uint32{2}, Unset, 2, 0, ErrBadDataType},
		{"too many dims", make([]uint32, MaxTensorDims+1), Uint8, 0, 0, ErrLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := TensorNumel(c.dims)
			if c.err == nil || c.numel != 0 {
				if err != nil || n != c.numel {
					t.Errorf("TensorNumel = %d, %v; want %d", n, err, c.numel)
				}
			}
			nb, err := TensorNBytes(&Tensor{DataType: c.dt, Dims: c.dims})
			if c.err != nil {
				assertFormatErr(t, err, c.err)
				return
			}
			if err != nil || nb != c.bytes {
				t.Errorf("TensorNBytes = %d, %v; want %d", nb, err, c.bytes)
			}
		})
	}
}

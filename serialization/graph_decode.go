package serialization

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/vkgraph"
)

// GraphIdentifier is the VkGraph flatbuffer file identifier.
const GraphIdentifier = "VK00"

// DecodeBlob decodes a Vulkan delegate blob (the "processed" bytes of a
// VulkanBackend delegate): the VH00 header, then the VK00 identifier, then
// the VkGraph. Blob.Constants is a sub-slice of b, not a copy: the
// [bytes_offset, bytes_offset+bytes_size) range, or, as both upstream
// runtimes do, everything from bytes_offset to the end when bytes_size is 0.
// Error offsets are relative to b.
func DecodeBlob(b []byte) (*Blob, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	fbStart := uint64(h.FlatbufferOffset)
	fb := b[fbStart : fbStart+uint64(h.FlatbufferSize)]
	g, err := decodeGraph(fb, int64(fbStart))
	if err != nil {
		return nil, err
	}
	lo := uint64(h.BytesOffset)
	hi := lo + h.BytesSize
	if h.BytesSize == 0 {
		hi = uint64(len(b))
	}
	// The three-index slice keeps an append on Constants from writing into
	// whatever follows it in the caller's (possibly mapped, read-only) file.
	return &Blob{Header: h, Graph: g, Constants: b[lo:hi:hi]}, nil
}

// DecodeGraph decodes a VkGraph flatbuffer (identifier VK00 required).
//
// Absent fields read as the schema defaults (constant_id and mem_obj_id 0,
// datatype 0 = BOOL, storage type and layout 255, staging datatype 127,
// absent scalar tables as zero values, absent vectors as empty). Every
// offset and length is verified before use, counts are capped (MaxValues,
// MaxTensorDims, ...), and every value id (op args, input and output ids,
// ValueList items) must index Graph.Values. A union tag of NONE or one newer
// than SymInt decodes as KindNull, as the upstream runtimes treat it.
func DecodeGraph(fb []byte) (*Graph, error) {
	return decodeGraph(fb, 0)
}

// graphDecoder holds the state of one DecodeGraph call.
type graphDecoder struct {
	v *verifier
}

func decodeGraph(fb []byte, base int64) (g *Graph, err error) {
	defer recoverFormat(&err, base)
	if len(fb) < 8 {
		return nil, formatErr(base, ErrTruncated, len(fb), "VkGraph flatbuffer shorter than 8 bytes")
	}
	if string(fb[4:8]) != GraphIdentifier {
		return nil, formatErr(base+4, ErrBadIdentifier, printable(fb[4:8]), "flatbuffer identifier is not %s", GraphIdentifier)
	}
	d := &graphDecoder{v: newVerifier(fb, base)}
	g, err = d.graph()
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (d *graphDecoder) graph() (*Graph, error) {
	v := d.v
	t, err := v.root("VkGraph")
	if err != nil {
		return nil, err
	}
	for _, s := range []struct{ slot, size int }{{7, 1}, {8, 1}} {
		if err := v.scalar(t, s.slot, s.size, "VkGraph"); err != nil {
			return nil, err
		}
	}
	var fg vkgraph.VkGraph
	fg.Init(v.buf, flatbuffers.UOffsetT(t.pos))
	g := &Graph{
		StorageTypeOverride:  uint8(fg.StorageTypeOverride()),
		MemoryLayoutOverride: uint8(fg.MemoryLayoutOverride()),
	}
	if g.Version, _, err = v.str(t, 0, "VkGraph.version"); err != nil {
		return nil, err
	}

	// Values first, so ids elsewhere can be checked against their count.
	vstart, nvals, _, err := v.vector(t, 2, 4, MaxValues, "VkGraph.values")
	if err != nil {
		return nil, err
	}
	g.Values = make([]Value, nvals)
	for i := uint32(0); i < nvals; i++ {
		if err := d.value(vstart, i, &g.Values[i]); err != nil {
			return nil, err
		}
	}

	cstart, nconst, _, err := v.vector(t, 5, 4, MaxConstants, "VkGraph.constants")
	if err != nil {
		return nil, err
	}
	if g.Constants, err = d.bytesList(cstart, nconst, "VkGraph.constants"); err != nil {
		return nil, err
	}
	sstart, nshaders, _, err := v.vector(t, 6, 4, MaxConstants, "VkGraph.shaders")
	if err != nil {
		return nil, err
	}
	if g.Shaders, err = d.bytesList(sstart, nshaders, "VkGraph.shaders"); err != nil {
		return nil, err
	}

	chStart, nchain, _, err := v.vector(t, 1, 4, MaxChainLen, "VkGraph.chain")
	if err != nil {
		return nil, err
	}
	g.Chain = make([]OpCall, nchain)
	for i := uint32(0); i < nchain; i++ {
		if err := d.opCall(chStart, i, nvals, &g.Chain[i]); err != nil {
			return nil, err
		}
	}

	if g.InputIDs, err = d.ids(t, 3, nvals, "VkGraph.input_ids"); err != nil {
		return nil, err
	}
	if g.OutputIDs, err = d.ids(t, 4, nvals, "VkGraph.output_ids"); err != nil {
		return nil, err
	}

	// Checked last because they need both values and constants decoded.
	for i := range g.Values {
		val := &g.Values[i]
		switch val.Kind {
		case KindTensor:
			if id := val.Tensor.ConstantID; id >= 0 && int(id) >= len(g.Constants) {
				return nil, formatErr(d.valuePos(vstart, uint32(i)), ErrBadIndex, id,
					"value %d: constant_id out of range [0,%d)", i, len(g.Constants))
			}
		case KindValueList:
			for _, id := range val.IDs {
				if id < 0 || uint32(id) >= nvals {
					return nil, formatErr(d.valuePos(vstart, uint32(i)), ErrBadValueID, id,
						"value %d: ValueList item out of range [0,%d)", i, nvals)
				}
			}
		}
	}
	if i, ok := valueListCycle(g.Values); ok {
		return nil, formatErr(d.valuePos(vstart, uint32(i)), ErrValueListCycle, i,
			"value %d: ValueList contains itself (directly or through nested ValueLists)", i)
	}
	return g, nil
}

// valueListCycle finds a ValueList that reaches itself through ValueList
// items (iterative three-colour DFS: hostile graphs may nest deeply).
func valueListCycle(vals []Value) (int, bool) {
	const (
		white = iota
		grey
		black
	)
	colour := make([]uint8, len(vals))
	type frame struct {
		id, next int
	}
	var stack []frame
	for root := range vals {
		if vals[root].Kind != KindValueList || colour[root] != white {
			continue
		}
		stack = append(stack[:0], frame{root, 0})
		colour[root] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			items := vals[top.id].IDs
			if top.next == len(items) {
				colour[top.id] = black
				stack = stack[:len(stack)-1]
				continue
			}
			c := int(items[top.next])
			top.next++
			if vals[c].Kind != KindValueList {
				continue
			}
			switch colour[c] {
			case grey:
				return c, true
			case white:
				colour[c] = grey
				stack = append(stack, frame{c, 0})
			}
		}
	}
	return 0, false
}

// valuePos returns the input offset of value i's table, for error messages.
func (d *graphDecoder) valuePos(vstart, i uint32) int64 {
	p := vstart + 4*i
	return d.v.base + int64(p) + int64(d.v.u32(p))
}

// value decodes values[i] into out.
func (d *graphDecoder) value(vstart, i uint32, out *Value) error {
	v := d.v
	t, err := v.elemTable(vstart, i, "VkValue")
	if err != nil {
		return err
	}
	if err := v.scalar(t, 0, 1, "VkValue"); err != nil {
		return err
	}
	var fv vkgraph.VkValue
	fv.Init(v.buf, flatbuffers.UOffsetT(t.pos))
	kind := ValueKind(fv.ValueType())
	if kind == KindNone || kind > KindSymInt {
		// Upstream runtimes build a Null for NONE and for tags newer than
		// they know; doing the same keeps newer exports loadable as long
		// as no op reads the value.
		out.Kind = KindNull
		return nil
	}
	out.Kind = kind
	target, ok, err := v.ref(t, 1, "VkValue.value")
	if err != nil {
		return err
	}
	if !ok {
		if kind == KindNull {
			// Null has no fields, and the C++ verifier accepts a missing
			// member table for it, so there is nothing to be missing.
			return nil
		}
		return v.errAt(uint64(t.pos), ErrBadFlatbuffer, kind, "value %d: union member table missing", i)
	}
	what := "VkValue." + kind.String()
	m, err := v.table(target, what)
	if err != nil {
		return err
	}
	pos := flatbuffers.UOffsetT(m.pos)
	switch kind {
	case KindNull:
	case KindInt:
		if err := v.scalar(m, 0, 8, what); err != nil {
			return err
		}
		var x vkgraph.Int
		x.Init(v.buf, pos)
		out.Int = x.IntVal()
	case KindDouble:
		if err := v.scalar(m, 0, 8, what); err != nil {
			return err
		}
		var x vkgraph.Double
		x.Init(v.buf, pos)
		out.Double = x.DoubleVal()
	case KindBool:
		if err := v.scalar(m, 0, 1, what); err != nil {
			return err
		}
		var x vkgraph.Bool
		x.Init(v.buf, pos)
		out.Bool = x.BoolVal()
	case KindSymInt:
		if err := v.scalar(m, 0, 4, what); err != nil {
			return err
		}
		var x vkgraph.SymInt
		x.Init(v.buf, pos)
		out.SymInt = x.Value()
	case KindString:
		if out.String, _, err = v.str(m, 0, what); err != nil {
			return err
		}
	case KindTensor:
		out.Tensor, err = d.tensor(m, i)
		return err
	case KindIntList:
		_, n, _, err := v.vector(m, 0, 8, MaxListLen, what)
		if err == nil {
			err = v.spend(m.pos, uint64(n), what)
		}
		if err != nil {
			return err
		}
		var x vkgraph.IntList
		x.Init(v.buf, pos)
		out.Ints = make([]int64, n)
		for j := range out.Ints {
			out.Ints[j] = x.Items(j)
		}
	case KindDoubleList:
		_, n, _, err := v.vector(m, 0, 8, MaxListLen, what)
		if err == nil {
			err = v.spend(m.pos, uint64(n), what)
		}
		if err != nil {
			return err
		}
		var x vkgraph.DoubleList
		x.Init(v.buf, pos)
		out.Doubles = make([]float64, n)
		for j := range out.Doubles {
			out.Doubles[j] = x.Items(j)
		}
	case KindBoolList:
		_, n, _, err := v.vector(m, 0, 1, MaxListLen, what)
		if err == nil {
			err = v.spend(m.pos, uint64(n), what)
		}
		if err != nil {
			return err
		}
		var x vkgraph.BoolList
		x.Init(v.buf, pos)
		out.Bools = make([]bool, n)
		for j := range out.Bools {
			out.Bools[j] = x.Items(j)
		}
	case KindValueList:
		// Items are value ids; they are range-checked once all values are
		// known (a list may name values after it).
		_, n, _, err := v.vector(m, 0, 4, MaxListLen, what)
		if err == nil {
			err = v.spend(m.pos, uint64(n), what)
		}
		if err != nil {
			return err
		}
		var x vkgraph.ValueList
		x.Init(v.buf, pos)
		out.IDs = make([]int32, n)
		for j := range out.IDs {
			out.IDs[j] = x.Items(j)
		}
	}
	return nil
}

// tensor decodes the VkTensor table t, the member of value i.
func (d *graphDecoder) tensor(t tbl, i uint32) (*Tensor, error) {
	v := d.v
	const what = "VkTensor"
	for _, s := range []struct{ slot, size int }{{0, 1}, {2, 4}, {3, 4}, {4, 1}, {5, 1}, {6, 1}} {
		if err := v.scalar(t, s.slot, s.size, what); err != nil {
			return nil, err
		}
	}
	_, ndims, _, err := v.vector(t, 1, 4, MaxTensorDims, "VkTensor.dims")
	if err == nil {
		err = v.spend(t.pos, uint64(ndims), what)
	}
	if err != nil {
		return nil, err
	}
	var x vkgraph.VkTensor
	x.Init(v.buf, flatbuffers.UOffsetT(t.pos))
	out := &Tensor{
		DataType:        DataType(x.Datatype()),
		Dims:            make([]uint32, ndims),
		ConstantID:      x.ConstantId(),
		MemObjID:        x.MemObjId(),
		StorageType:     uint8(x.StorageType()),
		MemoryLayout:    uint8(x.MemoryLayout()),
		StagingDataType: DataType(x.StagingDatatype()),
	}
	for j := range out.Dims {
		out.Dims[j] = x.Dims(j)
	}
	// UNSET is legal here (the graph layer decides whether it can use it);
	// anything else outside the enum means the blob is not what we think.
	if !knownDataType(out.DataType) {
		return nil, v.errAt(uint64(t.pos), ErrBadDataType, int8(out.DataType), "value %d: unknown tensor datatype", i)
	}
	if !knownDataType(out.StagingDataType) {
		return nil, v.errAt(uint64(t.pos), ErrBadDataType, int8(out.StagingDataType), "value %d: unknown tensor staging_datatype", i)
	}
	return out, nil
}

func knownDataType(dt DataType) bool { return dt.Valid() || dt == Unset }

// opCall decodes chain[i] into out, checking its args against nvals.
func (d *graphDecoder) opCall(start, i, nvals uint32, out *OpCall) error {
	v := d.v
	const what = "OperatorCall"
	t, err := v.elemTable(start, i, what)
	if err != nil {
		return err
	}
	if err := v.scalar(t, 0, 4, what); err != nil {
		return err
	}
	if out.Name, _, err = v.str(t, 1, "OperatorCall.name"); err != nil {
		return err
	}
	astart, nargs, _, err := v.vector(t, 2, 4, MaxArgs, "OperatorCall.args")
	if err == nil {
		err = v.spend(t.pos, uint64(nargs), what)
	}
	if err != nil {
		return err
	}
	var x vkgraph.OperatorCall
	x.Init(v.buf, flatbuffers.UOffsetT(t.pos))
	out.NodeID = x.NodeId()
	out.Args = make([]int32, nargs)
	for j := range out.Args {
		a := x.Args(j)
		if a < 0 || uint32(a) >= nvals {
			return v.errAt(uint64(astart)+4*uint64(j), ErrBadValueID, a, "op %d (%s): arg %d out of range [0,%d)", i, out.Name, j, nvals)
		}
		out.Args[j] = a
	}
	return nil
}

// ids decodes a [uint] vector of value ids at slot of the root table.
func (d *graphDecoder) ids(t tbl, slot int, nvals uint32, what string) ([]uint32, error) {
	v := d.v
	start, n, _, err := v.vector(t, slot, 4, MaxIOIDs, what)
	if err == nil {
		err = v.spend(t.pos, uint64(n), what)
	}
	if err != nil {
		return nil, err
	}
	out := make([]uint32, n)
	for j := range out {
		p := start + 4*uint32(j)
		id := v.u32(p)
		if id >= nvals {
			return nil, v.errAt(uint64(p), ErrBadValueID, id, "%s[%d] out of range [0,%d)", what, j, nvals)
		}
		out[j] = id
	}
	return out, nil
}

// bytesList decodes a [VkBytes] vector of n elements at start.
func (d *graphDecoder) bytesList(start, n uint32, what string) ([]Bytes, error) {
	v := d.v
	out := make([]Bytes, n)
	for i := range out {
		t, err := v.elemTable(start, uint32(i), what)
		if err != nil {
			return nil, err
		}
		if err := v.scalar(t, 0, 8, what); err != nil {
			return nil, err
		}
		if err := v.scalar(t, 1, 8, what); err != nil {
			return nil, err
		}
		var x vkgraph.VkBytes
		x.Init(v.buf, flatbuffers.UOffsetT(t.pos))
		out[i].Offset = x.Offset()
		out[i].Length = x.Length()
		if out[i].NamedKey, out[i].HasKey, err = v.str(t, 2, "VkBytes.named_key"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

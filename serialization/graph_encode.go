package serialization

import (
	"fmt"
	"math"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/vkgraph"
)

// EncodeGraph serializes g as a VK00 flatbuffer through the generated
// builders. Like upstream (flatc without --force-defaults), scalars equal to
// their schema default are omitted, so a tensor with constant_id 0 carries
// no constant_id field. Vectors are always written, even when empty, because
// the upstream runtimes dereference chain, values, input_ids, output_ids and
// constants without a null check.
//
// EncodeGraph checks only what it needs to produce a well-formed flatbuffer
// (a tensor value must have a Tensor, the kind must be known). It does not
// check value ids or constant ids, so tests can build graphs the decoder must
// reject. KindNone is written as the NONE tag with no member.
func EncodeGraph(g *Graph) (out []byte, err error) {
	if g == nil {
		return nil, fmt.Errorf("serialization: EncodeGraph of nil graph")
	}
	// The flatbuffers builder panics when the buffer would pass 2 GiB.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("serialization: encoding VkGraph: %v", r)
		}
	}()
	b := flatbuffers.NewBuilder(1024)

	values := make([]flatbuffers.UOffsetT, len(g.Values))
	for i := range g.Values {
		if values[i], err = encodeValue(b, &g.Values[i]); err != nil {
			return nil, fmt.Errorf("serialization: value %d: %w", i, err)
		}
	}
	chain := make([]flatbuffers.UOffsetT, len(g.Chain))
	for i := range g.Chain {
		op := &g.Chain[i]
		name := b.CreateString(op.Name)
		args := int32Vector(b, op.Args)
		vkgraph.OperatorCallStart(b)
		vkgraph.OperatorCallAddNodeId(b, op.NodeID)
		vkgraph.OperatorCallAddName(b, name)
		vkgraph.OperatorCallAddArgs(b, args)
		chain[i] = vkgraph.OperatorCallEnd(b)
	}
	constants := encodeBytesList(b, g.Constants)
	shaders := encodeBytesList(b, g.Shaders)
	inputs := uint32Vector(b, g.InputIDs)
	outputs := uint32Vector(b, g.OutputIDs)
	valuesVec := offsetVector(b, values)
	chainVec := offsetVector(b, chain)
	var version flatbuffers.UOffsetT
	if g.Version != "" {
		version = b.CreateString(g.Version)
	}

	vkgraph.VkGraphStart(b)
	if g.Version != "" {
		vkgraph.VkGraphAddVersion(b, version)
	}
	vkgraph.VkGraphAddChain(b, chainVec)
	vkgraph.VkGraphAddValues(b, valuesVec)
	vkgraph.VkGraphAddInputIds(b, inputs)
	vkgraph.VkGraphAddOutputIds(b, outputs)
	vkgraph.VkGraphAddConstants(b, constants)
	vkgraph.VkGraphAddShaders(b, shaders)
	vkgraph.VkGraphAddStorageTypeOverride(b, vkgraph.VkStorageType(g.StorageTypeOverride))
	vkgraph.VkGraphAddMemoryLayoutOverride(b, vkgraph.VkMemoryLayout(g.MemoryLayoutOverride))
	root := vkgraph.VkGraphEnd(b)
	b.FinishWithFileIdentifier(root, []byte(GraphIdentifier))
	return b.FinishedBytes(), nil
}

func encodeValue(b *flatbuffers.Builder, v *Value) (flatbuffers.UOffsetT, error) {
	var member flatbuffers.UOffsetT
	switch v.Kind {
	case KindNone:
	case KindNull:
		vkgraph.NullStart(b)
		member = vkgraph.NullEnd(b)
	case KindInt:
		vkgraph.IntStart(b)
		vkgraph.IntAddIntVal(b, v.Int)
		member = vkgraph.IntEnd(b)
	case KindDouble:
		vkgraph.DoubleStart(b)
		vkgraph.DoubleAddDoubleVal(b, v.Double)
		member = vkgraph.DoubleEnd(b)
	case KindBool:
		vkgraph.BoolStart(b)
		vkgraph.BoolAddBoolVal(b, v.Bool)
		member = vkgraph.BoolEnd(b)
	case KindSymInt:
		vkgraph.SymIntStart(b)
		vkgraph.SymIntAddValue(b, v.SymInt)
		member = vkgraph.SymIntEnd(b)
	case KindString:
		s := b.CreateString(v.String)
		vkgraph.StringStart(b)
		vkgraph.StringAddStringVal(b, s)
		member = vkgraph.StringEnd(b)
	case KindIntList:
		items := scalarVector(b, v.Ints, 8, b.PrependInt64)
		vkgraph.IntListStart(b)
		vkgraph.IntListAddItems(b, items)
		member = vkgraph.IntListEnd(b)
	case KindDoubleList:
		items := scalarVector(b, v.Doubles, 8, b.PrependFloat64)
		vkgraph.DoubleListStart(b)
		vkgraph.DoubleListAddItems(b, items)
		member = vkgraph.DoubleListEnd(b)
	case KindBoolList:
		items := scalarVector(b, v.Bools, 1, b.PrependBool)
		vkgraph.BoolListStart(b)
		vkgraph.BoolListAddItems(b, items)
		member = vkgraph.BoolListEnd(b)
	case KindValueList:
		items := int32Vector(b, v.IDs)
		vkgraph.ValueListStart(b)
		vkgraph.ValueListAddItems(b, items)
		member = vkgraph.ValueListEnd(b)
	case KindTensor:
		t := v.Tensor
		if t == nil {
			return 0, fmt.Errorf("tensor value without a Tensor")
		}
		dims := uint32Vector(b, t.Dims)
		vkgraph.VkTensorStart(b)
		vkgraph.VkTensorAddDatatype(b, vkgraph.VkDataType(t.DataType))
		vkgraph.VkTensorAddDims(b, dims)
		vkgraph.VkTensorAddConstantId(b, t.ConstantID)
		vkgraph.VkTensorAddMemObjId(b, t.MemObjID)
		vkgraph.VkTensorAddStorageType(b, vkgraph.VkStorageType(t.StorageType))
		vkgraph.VkTensorAddMemoryLayout(b, vkgraph.VkMemoryLayout(t.MemoryLayout))
		vkgraph.VkTensorAddStagingDatatype(b, vkgraph.VkDataType(t.StagingDataType))
		member = vkgraph.VkTensorEnd(b)
	default:
		return 0, fmt.Errorf("unknown value kind %v", v.Kind)
	}
	vkgraph.VkValueStart(b)
	if v.Kind != KindNone {
		vkgraph.VkValueAddValueType(b, vkgraph.GraphTypes(v.Kind))
		vkgraph.VkValueAddValue(b, member)
	}
	return vkgraph.VkValueEnd(b), nil
}

func encodeBytesList(b *flatbuffers.Builder, list []Bytes) flatbuffers.UOffsetT {
	offs := make([]flatbuffers.UOffsetT, len(list))
	for i, c := range list {
		var key flatbuffers.UOffsetT
		if c.HasKey {
			key = b.CreateString(c.NamedKey)
		}
		vkgraph.VkBytesStart(b)
		vkgraph.VkBytesAddOffset(b, c.Offset)
		vkgraph.VkBytesAddLength(b, c.Length)
		if c.HasKey {
			vkgraph.VkBytesAddNamedKey(b, key)
		}
		offs[i] = vkgraph.VkBytesEnd(b)
	}
	return offsetVector(b, offs)
}

// scalarVector writes v as a flatbuffer vector of size-byte elements,
// aligned to their size; prepend adds one element (flatbuffers builds back
// to front, so the last goes first).
func scalarVector[T any](b *flatbuffers.Builder, v []T, size int, prepend func(T)) flatbuffers.UOffsetT {
	b.StartVector(size, len(v), size)
	for i := len(v) - 1; i >= 0; i-- {
		prepend(v[i])
	}
	return b.EndVector(len(v))
}

func offsetVector(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	return scalarVector(b, offs, 4, b.PrependUOffsetT)
}

func int32Vector(b *flatbuffers.Builder, v []int32) flatbuffers.UOffsetT {
	return scalarVector(b, v, 4, b.PrependInt32)
}

func uint32Vector(b *flatbuffers.Builder, v []uint32) flatbuffers.UOffsetT {
	return scalarVector(b, v, 4, b.PrependUint32)
}

// EncodeBlob wraps g and constants in the byte layout of the upstream
// writer (spec section 1.2): the 30-byte VH00 header padded to 32, the
// flatbuffer at 32 padded to 16, then the constant region padded to 16.
// flatbuffer_size and bytes_size record the unpadded lengths.
func EncodeBlob(g *Graph, constants []byte) ([]byte, error) {
	fb, err := EncodeGraph(g)
	if err != nil {
		return nil, err
	}
	return wrapBlob(fb, constants)
}

// wrapBlob lays out an already-encoded flatbuffer and constants.
func wrapBlob(fb, constants []byte) ([]byte, error) {
	fbPadded := roundUp(uint64(len(fb)), 16)
	if PaddedHeaderLen+fbPadded > math.MaxUint32 {
		return nil, fmt.Errorf("serialization: %d-byte flatbuffer does not fit the VH00 header's 32-bit offsets", len(fb))
	}
	h := newHeader(uint32(len(fb)), uint64(len(constants)))
	total := uint64(h.BytesOffset) + roundUp(uint64(len(constants)), 16)
	out := make([]byte, 0, total)
	out = appendHeader(out, h)
	out = append(out, fb...)
	// make zeroed the whole capacity, so extending the length within it
	// writes the zero padding.
	out = out[:PaddedHeaderLen+fbPadded]
	out = append(out, constants...)
	return out[:total], nil
}

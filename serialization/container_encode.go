package serialization

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/flattensor"
)

// ProgramIdentifier is the file identifier EncodePTE writes.
const ProgramIdentifier = "ET12"

// segmentAlignment is ExecuTorch's default segment_alignment: every segment
// (and the segment base) starts on a multiple of it, so a loader can mmap
// segments directly.
const segmentAlignment = 128

// DelegateSpec describes one delegate for EncodePTE.
type DelegateSpec struct {
	ID   string // e.g. VulkanBackendID
	Blob []byte // the processed bytes
	// Inline stores Blob in Program.backend_delegate_data instead of a
	// segment (the exporter's extract_delegate_segments=False).
	Inline       bool
	CompileSpecs []CompileSpec
	// Inputs and Outputs, when either is non-nil, make EncodePTE add one
	// Tensor EValue per entry to the plan's values and a DelegateCall
	// instruction for this delegate whose args are those values, inputs
	// first. When both are nil the delegate is never called.
	Inputs, Outputs []EValueSpec
}

// EValueSpec is a Tensor EValue for EncodePTE: an ExecuTorch ScalarType
// (ScalarTypeFloat, ...) and sizes (nil for a rank-0 tensor, at most
// MaxTensorDims of them).
type EValueSpec struct {
	ScalarType int8
	Sizes      []int32
}

// PTEOptions describes the .pte EncodePTE writes.
type PTEOptions struct {
	Delegates []DelegateSpec
	// NamedData goes into Program.named_data, one segment per distinct
	// content (keys with identical bytes share a segment, as upstream).
	NamedData []NamedBlob
	// ExtendedHeaderLen is the eh00 length to record: 24 (older exports,
	// no segment_data_size) or 32; 0 means 32.
	ExtendedHeaderLen int
}

// segmentTable collects segment payloads, sharing one segment between equal
// named-data payloads.
type segmentTable struct {
	data  [][]byte
	byKey map[string]uint32 // payload -> segment index, for named data
}

func (s *segmentTable) add(b []byte) uint32 {
	s.data = append(s.data, b)
	return uint32(len(s.data) - 1)
}

func (s *segmentTable) addShared(b []byte) uint32 {
	if s.byKey == nil {
		s.byKey = map[string]uint32{}
	}
	if i, ok := s.byKey[string(b)]; ok {
		return i
	}
	i := s.add(b)
	s.byKey[string(b)] = i
	return i
}

// layout returns each segment's offset relative to the segment base (each
// starting at the previous end rounded up to segmentAlignment) and the
// segment data size (the end of the last one, unpadded, as upstream writes).
func (s *segmentTable) layout() (offsets []uint64, dataSize uint64) {
	offsets = make([]uint64, len(s.data))
	var end uint64
	for i, d := range s.data {
		offsets[i] = roundUp(end, segmentAlignment)
		end = offsets[i] + uint64(len(d))
	}
	return offsets, end
}

// appendSegments appends the segments at their offsets (relative to the
// current end of out, which must be the segment base).
func (s *segmentTable) appendSegments(out []byte, offsets []uint64) []byte {
	base := uint64(len(out))
	for i, d := range s.data {
		out = appendZeros(out, base+offsets[i]-uint64(len(out)))
		out = append(out, d...)
	}
	return out
}

func appendZeros(b []byte, n uint64) []byte {
	return append(b, make([]byte, n)...)
}

// dedupNamed drops repeated keys with identical bytes and rejects repeated
// keys with different bytes.
func dedupNamed(named []NamedBlob) ([]NamedBlob, error) {
	m := NewNamedDataMap()
	out := make([]NamedBlob, 0, len(named))
	for _, nb := range named {
		_, seen := m.Get(nb.Key)
		if err := m.Add(nb.Key, nb.Data); err != nil {
			return nil, err
		}
		if !seen {
			out = append(out, nb)
		}
	}
	return out, nil
}

// EncodePTE writes a minimal ExecuTorch .pte for tests: a Program (ET12)
// with one execution plan "forward" holding opts.Delegates, plus named data.
// It follows the upstream layout (spec section 7.1): segment-located
// delegates and named data are segments after the flatbuffer, the eh00
// header is inserted at offset 8 (root offset shifted by its padded length),
// segment_base_offset = roundup(program_size, 128) and every segment starts
// on a 128-byte boundary. With no segments the file has no eh00 header.
// Delegates with Inputs or Outputs get their Tensor EValues and one
// DelegateCall each, all in a single chain (as upstream writes), in
// delegate order; the chain's and the plan's inputs and outputs list those
// values. There are no operators or memory plan, so ExecuTorch itself could
// not run the result.
func EncodePTE(opts PTEOptions) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("serialization: encoding Program: %v", r)
		}
	}()
	hdrLen := opts.ExtendedHeaderLen
	if hdrLen == 0 {
		hdrLen = extHeaderFullLen
	}
	if hdrLen < extHeaderMinLen || hdrLen > 256 {
		return nil, fmt.Errorf("serialization: EncodePTE: extended header length %d outside [%d,256]", hdrLen, extHeaderMinLen)
	}
	named, err := dedupNamed(opts.NamedData)
	if err != nil {
		return nil, err
	}

	var segs segmentTable
	var inline [][]byte
	refs := make([]delegateRef, len(opts.Delegates))
	for i, d := range opts.Delegates {
		if d.Inline {
			inline = append(inline, d.Blob)
			refs[i] = delegateRef{LocationInline, uint32(len(inline) - 1)}
		} else {
			refs[i] = delegateRef{LocationSegment, segs.add(d.Blob)}
		}
	}
	namedIdx := make([]uint32, len(named))
	for i, nb := range named {
		namedIdx[i] = segs.addShared(nb.Data)
	}
	offsets, dataSize := segs.layout()

	b := flatbuffers.NewBuilder(1024)
	delegates := make([]flatbuffers.UOffsetT, len(opts.Delegates))
	for i, d := range opts.Delegates {
		specs := make([]flatbuffers.UOffsetT, len(d.CompileSpecs))
		for j, cs := range d.CompileSpecs {
			key := b.CreateString(cs.Key)
			val := b.CreateByteVector(cs.Value)
			executorch.CompileSpecStart(b)
			executorch.CompileSpecAddKey(b, key)
			executorch.CompileSpecAddValue(b, val)
			specs[j] = executorch.CompileSpecEnd(b)
		}
		specVec := offsetVector(b, specs)
		id := b.CreateString(d.ID)
		executorch.BackendDelegateDataReferenceStart(b)
		executorch.BackendDelegateDataReferenceAddLocation(b, executorch.DataLocation(refs[i].Location))
		executorch.BackendDelegateDataReferenceAddIndex(b, refs[i].Index)
		ref := executorch.BackendDelegateDataReferenceEnd(b)
		executorch.BackendDelegateStart(b)
		executorch.BackendDelegateAddId(b, id)
		executorch.BackendDelegateAddProcessed(b, ref)
		executorch.BackendDelegateAddCompileSpecs(b, specVec)
		delegates[i] = executorch.BackendDelegateEnd(b)
	}
	delegateVec := offsetVector(b, delegates)
	calls, err := encodeDelegateCalls(b, opts.Delegates)
	if err != nil {
		return nil, err
	}
	planName := b.CreateString("forward")
	executorch.ExecutionPlanStart(b)
	executorch.ExecutionPlanAddName(b, planName)
	if calls.n > 0 {
		executorch.ExecutionPlanAddValues(b, calls.values)
		executorch.ExecutionPlanAddInputs(b, calls.inputs)
		executorch.ExecutionPlanAddOutputs(b, calls.outputs)
		executorch.ExecutionPlanAddChains(b, calls.chains)
	}
	executorch.ExecutionPlanAddDelegates(b, delegateVec)
	plan := executorch.ExecutionPlanEnd(b)
	planVec := offsetVector(b, []flatbuffers.UOffsetT{plan})

	inlineTabs := make([]flatbuffers.UOffsetT, len(inline))
	for i, data := range inline {
		vec := alignedByteVector(b, data, 16) // force_align: 16
		executorch.BackendDelegateInlineDataStart(b)
		executorch.BackendDelegateInlineDataAddData(b, vec)
		inlineTabs[i] = executorch.BackendDelegateInlineDataEnd(b)
	}
	inlineVec := offsetVector(b, inlineTabs)

	segTabs := make([]flatbuffers.UOffsetT, len(segs.data))
	for i, d := range segs.data {
		executorch.DataSegmentStart(b)
		executorch.DataSegmentAddOffset(b, offsets[i])
		executorch.DataSegmentAddSize(b, uint64(len(d)))
		segTabs[i] = executorch.DataSegmentEnd(b)
	}
	segVec := offsetVector(b, segTabs)

	var namedVec flatbuffers.UOffsetT
	if len(named) > 0 {
		tabs := make([]flatbuffers.UOffsetT, len(named))
		for i, nb := range named {
			key := b.CreateString(nb.Key)
			executorch.NamedDataStart(b)
			executorch.NamedDataAddKey(b, key)
			executorch.NamedDataAddSegmentIndex(b, namedIdx[i])
			tabs[i] = executorch.NamedDataEnd(b)
		}
		namedVec = offsetVector(b, tabs)
	}

	executorch.ProgramStart(b)
	executorch.ProgramAddVersion(b, 0)
	executorch.ProgramAddExecutionPlan(b, planVec)
	executorch.ProgramAddBackendDelegateData(b, inlineVec)
	executorch.ProgramAddSegments(b, segVec)
	if len(named) > 0 {
		executorch.ProgramAddNamedData(b, namedVec)
	}
	root := executorch.ProgramEnd(b)
	b.FinishWithFileIdentifier(root, []byte(ProgramIdentifier))
	fb := b.FinishedBytes()

	if len(segs.data) == 0 {
		return fb, nil
	}
	padded := roundUp(uint64(hdrLen), extHeaderAlignment)
	programSize := uint64(len(fb)) + padded
	segBase := roundUp(programSize, segmentAlignment)
	hdr := make([]byte, padded)
	copy(hdr, extHeaderMagic)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(hdrLen))
	binary.LittleEndian.PutUint64(hdr[8:], programSize)
	binary.LittleEndian.PutUint64(hdr[16:], segBase)
	if hdrLen >= extHeaderFullLen {
		binary.LittleEndian.PutUint64(hdr[24:], dataSize)
	}
	out = insertHeader(fb, hdr, segBase+dataSize)
	out = appendZeros(out, segBase-uint64(len(out)))
	return segs.appendSegments(out, offsets), nil
}

// planCalls holds the ExecutionPlan vectors encodeDelegateCalls wrote; n is
// the number of DelegateCall instructions (0: nothing was written).
type planCalls struct {
	n                               int
	values, inputs, outputs, chains flatbuffers.UOffsetT
}

// encodeDelegateCalls writes the EValues and the chain of DelegateCall
// instructions for the delegates that have Inputs or Outputs.
func encodeDelegateCalls(b *flatbuffers.Builder, ds []DelegateSpec) (planCalls, error) {
	var values []flatbuffers.UOffsetT
	var inIdx, outIdx []int32
	var instrs []flatbuffers.UOffsetT
	addValue := func(s EValueSpec) (int32, error) {
		if len(s.Sizes) > MaxTensorDims {
			return 0, fmt.Errorf("serialization: EncodePTE: tensor of rank %d, limit %d", len(s.Sizes), MaxTensorDims)
		}
		sizes := int32Vector(b, s.Sizes)
		order := make([]byte, len(s.Sizes))
		for i := range order {
			order[i] = byte(i)
		}
		dimOrder := b.CreateByteVector(order)
		executorch.TensorStart(b)
		executorch.TensorAddScalarType(b, s.ScalarType)
		executorch.TensorAddSizes(b, sizes)
		executorch.TensorAddDimOrder(b, dimOrder)
		t := executorch.TensorEnd(b)
		executorch.EValueStart(b)
		executorch.EValueAddValType(b, executorch.KernelTypesTensor)
		executorch.EValueAddVal(b, t)
		values = append(values, executorch.EValueEnd(b))
		return int32(len(values) - 1), nil
	}
	for i, d := range ds {
		if d.Inputs == nil && d.Outputs == nil {
			continue
		}
		args := make([]int32, 0, len(d.Inputs)+len(d.Outputs))
		for j, s := range append(append([]EValueSpec{}, d.Inputs...), d.Outputs...) {
			idx, err := addValue(s)
			if err != nil {
				return planCalls{}, err
			}
			args = append(args, idx)
			if j < len(d.Inputs) {
				inIdx = append(inIdx, idx)
			} else {
				outIdx = append(outIdx, idx)
			}
		}
		argVec := int32Vector(b, args)
		executorch.DelegateCallStart(b)
		executorch.DelegateCallAddDelegateIndex(b, int32(i))
		executorch.DelegateCallAddArgs(b, argVec)
		call := executorch.DelegateCallEnd(b)
		executorch.InstructionStart(b)
		executorch.InstructionAddInstrArgsType(b, executorch.InstructionArgumentsDelegateCall)
		executorch.InstructionAddInstrArgs(b, call)
		instrs = append(instrs, executorch.InstructionEnd(b))
	}
	if len(instrs) == 0 {
		return planCalls{}, nil
	}
	pc := planCalls{n: len(instrs)}
	instrVec := offsetVector(b, instrs)
	chainIn, chainOut := int32Vector(b, inIdx), int32Vector(b, outIdx)
	executorch.ChainStart(b)
	executorch.ChainAddInputs(b, chainIn)
	executorch.ChainAddOutputs(b, chainOut)
	executorch.ChainAddInstructions(b, instrVec)
	pc.chains = offsetVector(b, []flatbuffers.UOffsetT{executorch.ChainEnd(b)})
	pc.values = offsetVector(b, values)
	pc.inputs, pc.outputs = int32Vector(b, inIdx), int32Vector(b, outIdx)
	return pc, nil
}

// delegateRef is a resolved BackendDelegateDataReference.
type delegateRef struct {
	Location DataLocation
	Index    uint32
}

// insertHeader returns fb with hdr inserted after its first 8 bytes (root
// offset and file identifier), as upstream's _insert_flatbuffer_header
// does. Flatbuffer offsets are relative, so only the root offset, the one
// offset that crosses the insertion point, needs adjusting. hdr's length
// must keep the alignment the flatbuffer needs (a multiple of 16).
func insertHeader(fb, hdr []byte, capHint uint64) []byte {
	out := make([]byte, 0, max(capHint, uint64(len(fb)+len(hdr))))
	out = binary.LittleEndian.AppendUint32(out, binary.LittleEndian.Uint32(fb)+uint32(len(hdr)))
	out = append(out, fb[4:8]...)
	out = append(out, hdr...)
	return append(out, fb[8:]...)
}

// alignedByteVector writes a [ubyte] vector whose data starts on an align
// boundary (the generated Start...Vector ignores force_align).
func alignedByteVector(b *flatbuffers.Builder, data []byte, align int) flatbuffers.UOffsetT {
	b.StartVector(1, len(data), align)
	for i := len(data) - 1; i >= 0; i-- {
		b.PlaceByte(data[i])
	}
	return b.EndVector(len(data))
}

// EncodePTD writes a .ptd (FlatTensor, FT01) holding named, laid out as
// upstream's flat_tensor serializer does (spec section 7.2): the 40-byte
// FH01 header inserted at offset 8 and padded to 48 (flatbuffer_offset 48,
// flatbuffer_size the flatbuffer's length before insertion),
// segment_base_offset = roundup(48 + flatbuffer_size, 128), and every
// segment on a 128-byte boundary. Keys with identical bytes share a segment.
func EncodePTD(named []NamedBlob) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("serialization: encoding FlatTensor: %v", r)
		}
	}()
	named, err = dedupNamed(named)
	if err != nil {
		return nil, err
	}
	var segs segmentTable
	idx := make([]uint32, len(named))
	for i, nb := range named {
		idx[i] = segs.addShared(nb.Data)
	}
	offsets, dataSize := segs.layout()

	b := flatbuffers.NewBuilder(1024)
	tabs := make([]flatbuffers.UOffsetT, len(named))
	for i, nb := range named {
		key := b.CreateString(nb.Key)
		flattensor.NamedDataStart(b)
		flattensor.NamedDataAddKey(b, key)
		flattensor.NamedDataAddSegmentIndex(b, idx[i])
		tabs[i] = flattensor.NamedDataEnd(b)
	}
	namedVec := offsetVector(b, tabs)
	segTabs := make([]flatbuffers.UOffsetT, len(segs.data))
	for i, d := range segs.data {
		flattensor.DataSegmentStart(b)
		flattensor.DataSegmentAddOffset(b, offsets[i])
		flattensor.DataSegmentAddSize(b, uint64(len(d)))
		segTabs[i] = flattensor.DataSegmentEnd(b)
	}
	segVec := offsetVector(b, segTabs)
	flattensor.FlatTensorStart(b)
	flattensor.FlatTensorAddVersion(b, 0)
	flattensor.FlatTensorAddSegments(b, segVec)
	flattensor.FlatTensorAddNamedData(b, namedVec)
	root := flattensor.FlatTensorEnd(b)
	b.FinishWithFileIdentifier(root, []byte(FlatTensorIdentifier))
	fb := b.FinishedBytes()

	segBase := roundUp(ftHeaderPadded+uint64(len(fb)), segmentAlignment)
	hdr := make([]byte, ftHeaderPadded)
	copy(hdr, ftHeaderMagic)
	binary.LittleEndian.PutUint32(hdr[4:], ftHeaderLen)
	binary.LittleEndian.PutUint64(hdr[8:], ftHeaderPadded)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(len(fb)))
	binary.LittleEndian.PutUint64(hdr[24:], segBase)
	binary.LittleEndian.PutUint64(hdr[32:], dataSize)
	out = insertHeader(fb, hdr, segBase+dataSize)
	out = appendZeros(out, segBase-uint64(len(out)))
	return segs.appendSegments(out, offsets), nil
}

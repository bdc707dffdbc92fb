package serialization

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
)

// VulkanBackendID is the delegate id the Vulkan (and WebGPU) partitioner
// records in BackendDelegate.id.
const VulkanBackendID = "VulkanBackend"

// Extended header ("eh00") layout, relative to file offset 8 (spec 7.1).
const (
	extHeaderOffset    = 8
	extHeaderMinLen    = 24 // magic, length, program_size, segment_base_offset
	extHeaderFullLen   = 32 // ... and segment_data_size
	extHeaderMagic     = "eh00"
	extHeaderAlignment = 16 // the schema's largest force_align
)

// DataLocation says where a delegate's processed bytes are stored.
type DataLocation uint8

// DataLocation values, numbered as in program.fbs.
const (
	// LocationInline: Program.backend_delegate_data[Index].data.
	LocationInline DataLocation = 0
	// LocationSegment: Program.segments[Index].
	LocationSegment DataLocation = 1
)

// String returns "inline", "segment" or DataLocation(n).
func (l DataLocation) String() string {
	switch l {
	case LocationInline:
		return "inline"
	case LocationSegment:
		return "segment"
	}
	return fmt.Sprintf("DataLocation(%d)", uint8(l))
}

// ExtendedHeader is the decoded "eh00" header of a .pte.
type ExtendedHeader struct {
	Length            uint32 // header length as recorded: 24 or 32 today
	ProgramSize       uint64 // bytes of flatbuffer, header included
	SegmentBaseOffset uint64 // file offset of the first segment
	SegmentDataSize   uint64 // 0 when Length < 32
}

// CompileSpec is one BackendDelegate compile spec.
type CompileSpec struct {
	Key   string
	Value []byte // sub-slice of the file
}

// DelegateInfo describes one BackendDelegate of one execution plan.
type DelegateInfo struct {
	Plan     int    // index into Program.Plans
	Delegate int    // index in the plan's delegates (DelegateCall.delegate_index)
	ID       string // backend id, e.g. "VulkanBackend"
	Location DataLocation
	Index    uint32 // into Program.InlineData or Program.Segments, per Location
	// CompileSpecs in file order.
	CompileSpecs []CompileSpec
	// Data is the processed bytes, already resolved and bounds-checked: a
	// sub-slice of the file.
	Data []byte
}

// ExternalTensor is a tensor of an execution plan whose data lives outside
// the .pte (ExtraTensorInfo.location == EXTERNAL): portable-op programs
// name their weights this way and the bytes come from a .ptd under Key.
type ExternalTensor struct {
	Plan       int    // index into Program.Plans
	Value      int    // index in the plan's values
	Key        string // ExtraTensorInfo.fully_qualified_name
	ScalarType int8   // executorch ScalarType (6 = Float)
	Sizes      []int32
}

// Program is what this package reads from a .pte file. Every []byte in it
// is a sub-slice of the data passed to ParseProgram.
type Program struct {
	Identifier string          // file identifier, "ET12" today
	Header     *ExtendedHeader // nil when the file has no eh00 header
	Version    uint32
	Plans      []string // execution plan (method) names, in order
	// ExecutionPlans holds the plans themselves, in the same order: their
	// inputs, outputs, operators and every instruction of every chain.
	ExecutionPlans []ExecutionPlan
	Delegates      []DelegateInfo
	// InlineData holds Program.backend_delegate_data[i].data.
	InlineData [][]byte
	// Segments holds Program.segments[i], resolved against the extended
	// header's segment_base_offset.
	Segments [][]byte
	// NamedData holds Program.named_data resolved to segment bytes; never
	// nil. Merge .ptd maps into it to get the runtime's view.
	NamedData       *NamedDataMap
	ExternalTensors []ExternalTensor
	// DelegateCalls holds every DelegateCall instruction, in plan, chain and
	// instruction order, with its delegate index and argument values
	// already range-checked. See DelegateIO.
	DelegateCalls []DelegateCall
}

// DelegateBlob returns the processed bytes of the first delegate (in plan
// order) whose id is id, as a sub-slice of the file. When there is none the
// error is a *NoDelegateError (errors.Is(err, ErrNoDelegate)) naming the
// delegates the program does have.
func (p *Program) DelegateBlob(id string) ([]byte, error) {
	var have []string
	seen := map[string]bool{}
	for i := range p.Delegates {
		d := &p.Delegates[i]
		if d.ID == id {
			return d.Data, nil
		}
		if !seen[d.ID] {
			seen[d.ID] = true
			have = append(have, d.ID)
		}
	}
	return nil, &NoDelegateError{Want: id, Have: have}
}

// ParseProgram parses a .pte file: the file identifier (ET followed by two
// alphanumerics), the optional eh00 extended header at offset 8 (24- or
// 32-byte form), the Program flatbuffer, and the segments after it. Every
// delegate's data, every segment and every named-data entry is resolved and
// bounds-checked here, so the result needs no further checks. The returned
// Program refers into data; keep data (or its MappedFile) alive while using it.
func ParseProgram(data []byte) (p *Program, err error) {
	defer recoverFormat(&err, 0)
	if len(data) < 8 {
		return nil, formatErr(0, ErrTruncated, len(data), ".pte shorter than 8 bytes")
	}
	if !isProgramIdentifier(data[4:8]) {
		return nil, formatErr(4, ErrBadIdentifier, printable(data[4:8]), "not an ExecuTorch program: identifier does not match ET[0-9a-zA-Z]{2}")
	}
	p = &Program{Identifier: string(data[4:8]), NamedData: NewNamedDataMap()}
	fb := data
	if p.Header, err = parseExtendedHeader(data); err != nil {
		return nil, err
	}
	if p.Header != nil {
		fb = data[:p.Header.ProgramSize]
	}
	if uint64(len(fb)) > MaxFlatbufferSize {
		return nil, formatErr(0, ErrLimit, len(fb), "program flatbuffer larger than %d bytes", MaxFlatbufferSize)
	}
	pd := &programDecoder{v: newVerifier(fb, 0), data: data, p: p}
	if err := pd.program(); err != nil {
		return nil, err
	}
	return p, nil
}

func isProgramIdentifier(b []byte) bool {
	alnum := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return b[0] == 'E' && b[1] == 'T' && alnum(b[2]) && alnum(b[3])
}

// parseExtendedHeader returns the eh00 header, or nil when the magic is
// absent (the upstream reader's NotFound: no segments, the whole file is the
// flatbuffer).
func parseExtendedHeader(data []byte) (*ExtendedHeader, error) {
	const o = extHeaderOffset
	if len(data) < o+8 || string(data[o:o+4]) != extHeaderMagic {
		return nil, nil
	}
	h := &ExtendedHeader{Length: binary.LittleEndian.Uint32(data[o+4:])}
	if h.Length < extHeaderMinLen {
		return nil, formatErr(o+4, ErrBadHeader, h.Length, "eh00 header length below %d", extHeaderMinLen)
	}
	need := o + extHeaderMinLen
	if h.Length >= extHeaderFullLen {
		need = o + extHeaderFullLen
	}
	if len(data) < need {
		return nil, formatErr(o, ErrTruncated, len(data), "file ends inside the eh00 header")
	}
	h.ProgramSize = binary.LittleEndian.Uint64(data[o+8:])
	h.SegmentBaseOffset = binary.LittleEndian.Uint64(data[o+16:])
	if h.Length >= extHeaderFullLen {
		h.SegmentDataSize = binary.LittleEndian.Uint64(data[o+24:])
	}
	switch {
	case h.ProgramSize < uint64(o)+uint64(h.Length):
		return nil, formatErr(o+8, ErrBadHeader, h.ProgramSize, "eh00 program_size smaller than the header")
	case h.ProgramSize > uint64(len(data)):
		return nil, formatErr(o+8, ErrTruncated, h.ProgramSize, "eh00 program_size past end of %d-byte file", len(data))
	case h.SegmentBaseOffset < h.ProgramSize:
		return nil, formatErr(o+16, ErrBadHeader, h.SegmentBaseOffset, "eh00 segment_base_offset inside the program (program_size %d)", h.ProgramSize)
	}
	return h, nil
}

// resolveRange returns data[base+off : base+off+size] or false when the
// range does not fit, with overflow-safe arithmetic.
func resolveRange(data []byte, base, off, size uint64) ([]byte, bool) {
	n := uint64(len(data))
	if base > n || off > n-base {
		return nil, false
	}
	start := base + off
	if size > n-start {
		return nil, false
	}
	end := start + size
	return data[start:end:end], true
}

// programDecoder holds the state of one ParseProgram call.
type programDecoder struct {
	v    *verifier
	data []byte
	p    *Program
}

func (pd *programDecoder) program() error {
	v, p := pd.v, pd.p
	t, err := v.root("Program")
	if err != nil {
		return err
	}
	if err := v.scalar(t, 0, 4, "Program"); err != nil {
		return err
	}
	var fp executorch.Program
	fp.Init(v.buf, flatbuffers.UOffsetT(t.pos))
	p.Version = fp.Version()

	// Inline delegate data.
	start, n, _, err := v.vector(t, 3, 4, MaxDelegates, "Program.backend_delegate_data")
	if err != nil {
		return err
	}
	p.InlineData = make([][]byte, n)
	for i := range p.InlineData {
		et, err := v.elemTable(start, uint32(i), "BackendDelegateInlineData")
		if err != nil {
			return err
		}
		ds, dn, _, err := v.vector(et, 0, 1, MaxFlatbufferSize, "BackendDelegateInlineData.data")
		if err != nil {
			return err
		}
		end := ds + dn
		p.InlineData[i] = v.buf[ds:end:end]
	}

	// Segments.
	start, n, _, err = v.vector(t, 4, 4, MaxSegments, "Program.segments")
	if err != nil {
		return err
	}
	p.Segments = make([][]byte, n)
	for i := range p.Segments {
		st, err := dataSegment(v, start, uint32(i))
		if err != nil {
			return err
		}
		var x executorch.DataSegment
		x.Init(v.buf, flatbuffers.UOffsetT(st.pos))
		off, size, pos := x.Offset(), x.Size(), st.pos
		if p.Header == nil {
			// Without eh00 there is nowhere for segment bytes to be; old
			// exports still list an empty placeholder segment (add.pte).
			if size != 0 {
				return v.errAt(uint64(pos), ErrBadHeader, size, "segment %d has %d bytes but the file has no eh00 header", i, size)
			}
			p.Segments[i] = pd.data[:0:0]
			continue
		}
		seg, ok := resolveRange(pd.data, p.Header.SegmentBaseOffset, off, size)
		if !ok {
			return v.errAt(uint64(pos), ErrTruncated, off, "segment %d [base %d + %d, +%d) past end of %d-byte file", i, p.Header.SegmentBaseOffset, off, size, len(pd.data))
		}
		p.Segments[i] = seg
	}

	// Named data.
	start, n, _, err = v.vector(t, 7, 4, MaxNamedData, "Program.named_data")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		nt, err := v.elemTable(start, i, "NamedData")
		if err != nil {
			return err
		}
		if err := v.scalar(nt, 1, 4, "NamedData"); err != nil {
			return err
		}
		key, _, err := v.str(nt, 0, "NamedData.key")
		if err != nil {
			return err
		}
		var x executorch.NamedData
		x.Init(v.buf, flatbuffers.UOffsetT(nt.pos))
		idx := x.SegmentIndex()
		if uint64(idx) >= uint64(len(p.Segments)) {
			return v.errAt(uint64(nt.pos), ErrBadIndex, idx, "named data %q: segment_index out of range [0,%d)", key, len(p.Segments))
		}
		if err := p.NamedData.Add(key, p.Segments[idx]); err != nil {
			return v.errAt(uint64(nt.pos), ErrDuplicateKey, key, "named data key appears twice with different bytes")
		}
	}

	// Execution plans, last: their delegates index the tables above.
	start, n, _, err = v.vector(t, 1, 4, MaxPlans, "Program.execution_plan")
	if err != nil {
		return err
	}
	p.Plans = make([]string, n)
	p.ExecutionPlans = make([]ExecutionPlan, n)
	for i := range p.Plans {
		if err := pd.plan(start, i); err != nil {
			return err
		}
	}
	return nil
}

// dataSegment verifies segments[i], a DataSegment{offset:ulong; size:ulong}
// table (the same in program.fbs and flat_tensor.fbs).
func dataSegment(v *verifier, start, i uint32) (tbl, error) {
	st, err := v.elemTable(start, i, "DataSegment")
	if err != nil {
		return tbl{}, err
	}
	if err := v.scalar(st, 0, 8, "DataSegment"); err != nil {
		return tbl{}, err
	}
	if err := v.scalar(st, 1, 8, "DataSegment"); err != nil {
		return tbl{}, err
	}
	return st, nil
}

func (pd *programDecoder) plan(start uint32, pi int) error {
	v, p := pd.v, pd.p
	t, err := v.elemTable(start, uint32(pi), "ExecutionPlan")
	if err != nil {
		return err
	}
	if p.Plans[pi], _, err = v.str(t, 0, "ExecutionPlan.name"); err != nil {
		return err
	}
	ep := &p.ExecutionPlans[pi]
	ep.Name = p.Plans[pi]
	// Plans, like any table, may be shared by several vector entries, so
	// what each one iterates is charged to the budget: a forged file cannot
	// make the loops below run more often than it has bytes.
	dstart, nd, _, err := v.vector(t, 7, 4, MaxDelegates, "ExecutionPlan.delegates")
	if err == nil {
		err = v.spend(t.pos, uint64(nd), "ExecutionPlan.delegates")
	}
	if err != nil {
		return err
	}
	for di := uint32(0); di < nd; di++ {
		d, err := pd.delegate(dstart, di)
		if err != nil {
			return err
		}
		d.Plan = pi
		p.Delegates = append(p.Delegates, d)
	}

	vstart, nv, _, err := v.vector(t, 2, 4, MaxValues, "ExecutionPlan.values")
	if err == nil {
		err = v.spend(t.pos, uint64(nv), "ExecutionPlan.values")
	}
	if err != nil {
		return err
	}
	for vi := uint32(0); vi < nv; vi++ {
		if err := pd.externalTensor(vstart, vi, pi); err != nil {
			return err
		}
	}
	if err := pd.planInterface(t, ep, nv); err != nil {
		return err
	}
	if err := pd.planScalars(vstart, ep, pi); err != nil {
		return err
	}
	return pd.chains(t, pi, ep, vstart, nv, nd)
}

func (pd *programDecoder) delegate(start, di uint32) (DelegateInfo, error) {
	v, p := pd.v, pd.p
	t, err := v.elemTable(start, di, "BackendDelegate")
	if err != nil {
		return DelegateInfo{}, err
	}
	d := DelegateInfo{Delegate: int(di)}
	if d.ID, _, err = v.str(t, 0, "BackendDelegate.id"); err != nil {
		return DelegateInfo{}, err
	}
	rpos, ok, err := v.ref(t, 1, "BackendDelegate.processed")
	if err != nil {
		return DelegateInfo{}, err
	}
	if !ok {
		return DelegateInfo{}, v.errAt(uint64(t.pos), ErrBadFlatbuffer, d.ID, "delegate %d has no processed data reference", di)
	}
	rt, err := v.table(rpos, "BackendDelegateDataReference")
	if err != nil {
		return DelegateInfo{}, err
	}
	if err := v.scalar(rt, 0, 1, "BackendDelegateDataReference"); err != nil {
		return DelegateInfo{}, err
	}
	if err := v.scalar(rt, 1, 4, "BackendDelegateDataReference"); err != nil {
		return DelegateInfo{}, err
	}
	var ref executorch.BackendDelegateDataReference
	ref.Init(v.buf, flatbuffers.UOffsetT(rt.pos))
	d.Location = DataLocation(ref.Location())
	d.Index = ref.Index()
	switch d.Location {
	case LocationInline:
		if uint64(d.Index) >= uint64(len(p.InlineData)) {
			return DelegateInfo{}, v.errAt(uint64(rt.pos), ErrBadIndex, d.Index, "delegate %q: inline data index out of range [0,%d)", d.ID, len(p.InlineData))
		}
		d.Data = p.InlineData[d.Index]
	case LocationSegment:
		if uint64(d.Index) >= uint64(len(p.Segments)) {
			return DelegateInfo{}, v.errAt(uint64(rt.pos), ErrBadIndex, d.Index, "delegate %q: segment index out of range [0,%d)", d.ID, len(p.Segments))
		}
		d.Data = p.Segments[d.Index]
	default:
		return DelegateInfo{}, v.errAt(uint64(rt.pos), ErrBadFlatbuffer, d.Location, "delegate %q: unknown data location", d.ID)
	}

	cstart, n, _, err := v.vector(t, 2, 4, MaxDelegates, "BackendDelegate.compile_specs")
	if err == nil {
		err = v.spend(t.pos, uint64(n), "BackendDelegate.compile_specs")
	}
	if err != nil {
		return DelegateInfo{}, err
	}
	if n > 0 {
		d.CompileSpecs = make([]CompileSpec, n)
	}
	for i := range d.CompileSpecs {
		ct, err := v.elemTable(cstart, uint32(i), "CompileSpec")
		if err != nil {
			return DelegateInfo{}, err
		}
		cs := &d.CompileSpecs[i]
		if cs.Key, _, err = v.str(ct, 0, "CompileSpec.key"); err != nil {
			return DelegateInfo{}, err
		}
		vs, vn, _, err := v.vector(ct, 1, 1, MaxFlatbufferSize, "CompileSpec.value")
		if err != nil {
			return DelegateInfo{}, err
		}
		end := vs + vn
		cs.Value = v.buf[vs:end:end]
	}
	return d, nil
}

// kernelTypesTensor is the EValue union tag of Tensor in program.fbs.
const kernelTypesTensor = byte(executorch.KernelTypesTensor)

// evalueAt verifies element i of the EValue vector at start, its union
// tag included, and returns it with its table.
func (v *verifier) evalueAt(start, i uint32) (executorch.EValue, tbl, error) {
	var ev executorch.EValue
	et, err := v.elemTable(start, i, "EValue")
	if err != nil {
		return ev, tbl{}, err
	}
	if err := v.scalar(et, 0, 1, "EValue"); err != nil {
		return ev, tbl{}, err
	}
	ev.Init(v.buf, flatbuffers.UOffsetT(et.pos))
	return ev, et, nil
}

// externalTensor records values[vi] of plan pi if it is a tensor whose data
// is EXTERNAL. Other values are skipped without being read.
func (pd *programDecoder) externalTensor(start, vi uint32, pi int) error {
	v, p := pd.v, pd.p
	ev, et, err := v.evalueAt(start, vi)
	if err != nil {
		return err
	}
	if byte(ev.ValType()) != kernelTypesTensor {
		return nil
	}
	tpos, ok, err := v.ref(et, 1, "EValue.val")
	if err != nil || !ok {
		return err
	}
	tt, err := v.table(tpos, "Tensor")
	if err != nil {
		return err
	}
	ipos, ok, err := v.ref(tt, 9, "Tensor.extra_tensor_info")
	if err != nil || !ok {
		return err
	}
	it, err := v.table(ipos, "ExtraTensorInfo")
	if err != nil {
		return err
	}
	if err := v.scalar(it, 2, 1, "ExtraTensorInfo"); err != nil {
		return err
	}
	var info executorch.ExtraTensorInfo
	info.Init(v.buf, flatbuffers.UOffsetT(it.pos))
	if info.Location() != executorch.TensorDataLocationEXTERNAL {
		return nil
	}
	key, ok, err := v.str(it, 1, "ExtraTensorInfo.fully_qualified_name")
	if err != nil {
		return err
	}
	if !ok || key == "" {
		return v.errAt(uint64(it.pos), ErrBadFlatbuffer, nil, "plan %d value %d: external tensor without fully_qualified_name", pi, vi)
	}
	st, sizes, err := pd.tensorType(tt)
	if err != nil {
		return err
	}
	p.ExternalTensors = append(p.ExternalTensors, ExternalTensor{Plan: pi, Value: int(vi), Key: key, ScalarType: st, Sizes: sizes})
	return nil
}

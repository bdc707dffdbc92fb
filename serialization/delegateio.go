package serialization

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
)

// ExecuTorch ScalarType values (c10's numbering, as in Tensor.scalar_type
// of a .pte). Only the ones ScalarTypeDataType maps, plus Short and UInt16,
// are named.
const (
	ScalarTypeByte   int8 = 0 // uint8
	ScalarTypeChar   int8 = 1 // int8
	ScalarTypeShort  int8 = 2 // int16, no DataType
	ScalarTypeInt    int8 = 3 // int32
	ScalarTypeLong   int8 = 4 // int64
	ScalarTypeHalf   int8 = 5 // float16
	ScalarTypeFloat  int8 = 6 // float32
	ScalarTypeDouble int8 = 7 // float64
	ScalarTypeBool   int8 = 11
	ScalarTypeUInt16 int8 = 27 // no DataType; QNN's quantized masks and logits
)

// ScalarTypeDataType maps an ExecuTorch ScalarType to the DataType of the
// same element type. It reports false for types DataType has no member for
// (Short, complex, quantized, BFloat16, ... and unknown values).
func ScalarTypeDataType(st int8) (DataType, bool) {
	switch st {
	case ScalarTypeByte:
		return Uint8, true
	case ScalarTypeChar:
		return Int8, true
	case ScalarTypeInt:
		return Int32, true
	case ScalarTypeLong:
		return Int64, true
	case ScalarTypeHalf:
		return Float16, true
	case ScalarTypeFloat:
		return Float32, true
	case ScalarTypeDouble:
		return Float64, true
	case ScalarTypeBool:
		return Bool, true
	}
	return 0, false
}

// EValueInfo is the host-side type of one ExecutionPlan value.
type EValueInfo struct {
	// Index into the plan's values.
	Index int
	// Kind is the EValue's KernelTypes member: "Null", "Int", "Bool",
	// "Double", "Tensor", "String", "IntList", "DoubleList", "BoolList",
	// "TensorList" or "OptionalTensorList"; "NONE" for an EValue without a
	// value and "KernelTypes(n)" for a tag the schema does not define.
	Kind string
	// ScalarType and Sizes are set for a Tensor (Sizes non-nil, empty for a
	// rank-0 tensor) and zero otherwise. ScalarType is ExecuTorch's (see
	// ScalarTypeDataType). For a DYNAMIC_BOUND tensor Sizes is the upper bound.
	ScalarType int8
	Sizes      []int32
}

// DelegateCall is a DelegateCall instruction of an execution plan: it runs
// delegate Delegate of plan Plan on Args, the delegate's inputs followed by
// its outputs (how many of each only the delegate's own graph says).
type DelegateCall struct {
	Plan     int // index into Program.Plans
	Delegate int // index into that plan's delegates (DelegateInfo.Delegate)
	Args     []EValueInfo
}

// DelegateIO returns the arguments (inputs, then outputs) of the first
// DelegateCall, in plan, chain and instruction order, whose delegate has the
// given id. These are the types the program presents to its caller: the
// Vulkan exporter narrows int64 and float64 to 32 bits inside the VkGraph,
// so only these say that an output is int64 and must be widened back.
//
// When no delegate has that id the error is a *NoDelegateError, as from
// DelegateBlob. When one does but no instruction calls it the result is an
// empty slice and a nil error. The slice is shared with p.DelegateCalls.
func (p *Program) DelegateIO(id string) ([]EValueInfo, error) {
	type key struct{ plan, delegate int }
	ids := make(map[key]string, len(p.Delegates))
	var have []string
	seen := map[string]bool{}
	for i := range p.Delegates {
		d := &p.Delegates[i]
		ids[key{d.Plan, d.Delegate}] = d.ID
		if !seen[d.ID] {
			seen[d.ID] = true
			have = append(have, d.ID)
		}
	}
	if !seen[id] {
		return nil, &NoDelegateError{Want: id, Have: have}
	}
	for i := range p.DelegateCalls {
		c := &p.DelegateCalls[i]
		if got, ok := ids[key{c.Plan, c.Delegate}]; ok && got == id {
			return c.Args, nil
		}
	}
	return []EValueInfo{}, nil
}

// chains records the DelegateCall instructions of plan pi (table t), whose
// values vector starts at vstart with nv elements and which has nd
// delegates. Other instructions are skipped without being read.
func (pd *programDecoder) chains(t tbl, pi int, vstart, nv, nd uint32) error {
	v := pd.v
	cstart, nc, _, err := v.vector(t, 5, 4, MaxChains, "ExecutionPlan.chains")
	if err == nil {
		err = v.spend(t.pos, uint64(nc), "ExecutionPlan.chains")
	}
	if err != nil {
		return err
	}
	for ci := uint32(0); ci < nc; ci++ {
		ct, err := v.elemTable(cstart, ci, "Chain")
		if err != nil {
			return err
		}
		istart, ni, _, err := v.vector(ct, 2, 4, MaxChainLen, "Chain.instructions")
		if err == nil {
			err = v.spend(ct.pos, uint64(ni), "Chain.instructions")
		}
		if err != nil {
			return err
		}
		for ii := uint32(0); ii < ni; ii++ {
			if err := pd.instruction(istart, ci, ii, pi, vstart, nv, nd); err != nil {
				return err
			}
		}
	}
	return nil
}

func (pd *programDecoder) instruction(start, ci, ii uint32, pi int, vstart, nv, nd uint32) error {
	v := pd.v
	it, err := v.elemTable(start, ii, "Instruction")
	if err != nil {
		return err
	}
	if err := v.scalar(it, 0, 1, "Instruction"); err != nil {
		return err
	}
	var ins executorch.Instruction
	ins.Init(v.buf, flatbuffers.UOffsetT(it.pos))
	if ins.InstrArgsType() != executorch.InstructionArgumentsDelegateCall {
		return nil
	}
	pos, ok, err := v.ref(it, 1, "Instruction.instr_args")
	if err != nil {
		return err
	}
	if !ok {
		return v.errAt(uint64(it.pos), ErrBadFlatbuffer, nil, "plan %d chain %d instruction %d: DelegateCall without its table", pi, ci, ii)
	}
	dt, err := v.table(pos, "DelegateCall")
	if err != nil {
		return err
	}
	if err := v.scalar(dt, 0, 4, "DelegateCall"); err != nil {
		return err
	}
	astart, na, _, err := v.vector(dt, 1, 4, MaxArgs, "DelegateCall.args")
	if err == nil {
		err = v.spend(dt.pos, uint64(na), "DelegateCall.args")
	}
	if err != nil {
		return err
	}
	var x executorch.DelegateCall
	x.Init(v.buf, flatbuffers.UOffsetT(dt.pos))
	di := x.DelegateIndex()
	if di < 0 || uint32(di) >= nd {
		return v.errAt(uint64(dt.pos), ErrBadIndex, di, "plan %d chain %d instruction %d: delegate_index out of range [0,%d)", pi, ci, ii, nd)
	}
	call := DelegateCall{Plan: pi, Delegate: int(di), Args: make([]EValueInfo, na)}
	for j := range call.Args {
		apos := astart + 4*uint32(j)
		idx := int32(v.u32(apos))
		if idx < 0 || uint32(idx) >= nv {
			return v.errAt(uint64(apos), ErrBadValueID, idx, "plan %d chain %d instruction %d: DelegateCall arg %d: EValue index out of range [0,%d)", pi, ci, ii, j, nv)
		}
		if call.Args[j], err = pd.evalueInfo(vstart, uint32(idx), pi); err != nil {
			return err
		}
	}
	pd.p.DelegateCalls = append(pd.p.DelegateCalls, call)
	return nil
}

// evalueInfo decodes the kind of values[vi] of plan pi and, for a tensor,
// its scalar type and sizes.
func (pd *programDecoder) evalueInfo(vstart, vi uint32, pi int) (EValueInfo, error) {
	v := pd.v
	et, err := v.elemTable(vstart, vi, "EValue")
	if err != nil {
		return EValueInfo{}, err
	}
	if err := v.scalar(et, 0, 1, "EValue"); err != nil {
		return EValueInfo{}, err
	}
	var ev executorch.EValue
	ev.Init(v.buf, flatbuffers.UOffsetT(et.pos))
	kind := ev.ValType()
	info := EValueInfo{Index: int(vi), Kind: kind.String()}
	if kind != executorch.KernelTypesTensor {
		return info, nil
	}
	tpos, ok, err := v.ref(et, 1, "EValue.val")
	if err != nil {
		return EValueInfo{}, err
	}
	if !ok {
		return EValueInfo{}, v.errAt(uint64(et.pos), ErrBadFlatbuffer, nil, "plan %d value %d: Tensor EValue without a Tensor table", pi, vi)
	}
	tt, err := v.table(tpos, "Tensor")
	if err != nil {
		return EValueInfo{}, err
	}
	if info.ScalarType, info.Sizes, err = pd.tensorType(tt); err != nil {
		return EValueInfo{}, err
	}
	return info, nil
}

// tensorType reads a verified Tensor table's scalar_type and sizes.
func (pd *programDecoder) tensorType(tt tbl) (int8, []int32, error) {
	v := pd.v
	if err := v.scalar(tt, 0, 1, "Tensor"); err != nil {
		return 0, nil, err
	}
	_, ns, _, err := v.vector(tt, 2, 4, MaxTensorDims, "Tensor.sizes")
	if err == nil {
		err = v.spend(tt.pos, uint64(ns), "Tensor.sizes")
	}
	if err != nil {
		return 0, nil, err
	}
	var x executorch.Tensor
	x.Init(v.buf, flatbuffers.UOffsetT(tt.pos))
	sizes := make([]int32, ns)
	for j := range sizes {
		sizes[j] = x.Sizes(j)
	}
	return x.ScalarType(), sizes, nil
}

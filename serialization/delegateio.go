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

// evalueInfo decodes the kind of values[vi] of plan pi and, for a tensor,
// its scalar type and sizes.
func (pd *programDecoder) evalueInfo(vstart, vi uint32, pi int) (EValueInfo, error) {
	v := pd.v
	ev, et, err := v.evalueAt(vstart, vi)
	if err != nil {
		return EValueInfo{}, err
	}
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

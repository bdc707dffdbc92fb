package serialization

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
)

// InstructionKind is the kind of an execution plan instruction: the tag of
// program.fbs's InstructionArguments union.
type InstructionKind uint8

// InstructionArguments union tags, numbered as in program.fbs.
const (
	InstrNone          InstructionKind = 0
	InstrKernelCall    InstructionKind = 1
	InstrDelegateCall  InstructionKind = 2
	InstrMoveCall      InstructionKind = 3
	InstrJumpFalseCall InstructionKind = 4
	InstrFreeCall      InstructionKind = 5
)

// String returns the union member's name ("KernelCall", "DelegateCall",
// ..., "NONE"), or InstructionArguments(n) for a tag the schema does not
// define.
func (k InstructionKind) String() string {
	return executorch.InstructionArguments(k).String()
}

// ExecutionPlan is one execution plan (method) of a program: its interface
// and every instruction of every chain, in file order.
type ExecutionPlan struct {
	Name string
	// Inputs and Outputs are the plan's EValue indices, range-checked
	// against its values.
	Inputs, Outputs []int32
	// Operators holds ExecutionPlan.operators as "name.overload", or just
	// "name" when the overload is empty; KernelCall.op_index indexes it.
	Operators []string
	Chains    []Chain
	// Scalars are the outputs that are Int, Bool or Double values (see
	// PlanScalar), in output order.
	Scalars []PlanScalar
}

// Chain is one chain of an execution plan (upstream writes one per plan).
type Chain struct {
	Instructions []Instruction
}

// Instruction is one instruction of a chain. Kind says which of the other
// fields are set; operands of the other kinds (MoveCall, JumpFalseCall,
// FreeCall) are not read, and neither is anything of an undefined kind.
type Instruction struct {
	Kind InstructionKind
	// Delegate and Args are set for a DelegateCall: the index into the
	// plan's delegates (DelegateInfo.Delegate) and the EValue indices of
	// the delegate's inputs, then its outputs. Both are range-checked, and
	// the call is also in Program.DelegateCalls with its argument types.
	Delegate int
	Args     []int32
	// OpIndex and Operator are set for a KernelCall: KernelCall.op_index
	// (-1 when the instruction carries no KernelCall table) and the entry of
	// the plan's Operators it names ("" when op_index is outside them).
	OpIndex  int
	Operator string
}

// NumInstructions returns the number of instructions over all chains.
func (ep *ExecutionPlan) NumInstructions() int {
	n := 0
	for i := range ep.Chains {
		n += len(ep.Chains[i].Instructions)
	}
	return n
}

// planInterface reads the inputs, outputs and operators of the plan in
// table t, which has nv values.
func (pd *programDecoder) planInterface(t tbl, ep *ExecutionPlan, nv uint32) error {
	var err error
	if ep.Inputs, err = pd.valueIDs(t, 3, nv, "ExecutionPlan.inputs"); err != nil {
		return err
	}
	if ep.Outputs, err = pd.valueIDs(t, 4, nv, "ExecutionPlan.outputs"); err != nil {
		return err
	}
	ep.Operators, err = pd.operators(t)
	return err
}

// valueIDs reads the [int] vector in slot of t as EValue indices below nv.
// An absent vector is an empty slice.
func (pd *programDecoder) valueIDs(t tbl, slot int, nv uint32, what string) ([]int32, error) {
	v := pd.v
	start, n, _, err := v.vector(t, slot, 4, MaxIOIDs, what)
	if err == nil {
		err = v.spend(t.pos, uint64(n), what)
	}
	if err != nil {
		return nil, err
	}
	ids := make([]int32, n)
	for i := range ids {
		pos := start + 4*uint32(i)
		id := int32(v.u32(pos))
		if id < 0 || uint32(id) >= nv {
			return nil, v.errAt(uint64(pos), ErrBadValueID, id, "%s[%d]: EValue index out of range [0,%d)", what, i, nv)
		}
		ids[i] = id
	}
	return ids, nil
}

// operators reads ExecutionPlan.operators of the plan in table t.
func (pd *programDecoder) operators(t tbl) ([]string, error) {
	v := pd.v
	start, n, _, err := v.vector(t, 6, 4, MaxOperators, "ExecutionPlan.operators")
	if err == nil {
		err = v.spend(t.pos, uint64(n), "ExecutionPlan.operators")
	}
	if err != nil {
		return nil, err
	}
	ops := make([]string, n)
	for i := range ops {
		ot, err := v.elemTable(start, uint32(i), "Operator")
		if err != nil {
			return nil, err
		}
		name, _, err := v.str(ot, 0, "Operator.name")
		if err != nil {
			return nil, err
		}
		overload, _, err := v.str(ot, 1, "Operator.overload")
		if err != nil {
			return nil, err
		}
		if overload != "" {
			name += "." + overload
		}
		ops[i] = name
	}
	return ops, nil
}

// chains reads every instruction of plan pi (table t, decoded so far into
// ep), whose values vector starts at vstart with nv elements and which has
// nd delegates. DelegateCalls are also recorded in Program.DelegateCalls.
func (pd *programDecoder) chains(t tbl, pi int, ep *ExecutionPlan, vstart, nv, nd uint32) error {
	v := pd.v
	cstart, nc, _, err := v.vector(t, 5, 4, MaxChains, "ExecutionPlan.chains")
	if err == nil {
		err = v.spend(t.pos, uint64(nc), "ExecutionPlan.chains")
	}
	if err != nil {
		return err
	}
	ep.Chains = make([]Chain, nc)
	for ci := range ep.Chains {
		ct, err := v.elemTable(cstart, uint32(ci), "Chain")
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
		ins := make([]Instruction, ni)
		for ii := range ins {
			if ins[ii], err = pd.instruction(istart, uint32(ci), uint32(ii), pi, ep, vstart, nv, nd); err != nil {
				return err
			}
		}
		ep.Chains[ci].Instructions = ins
	}
	return nil
}

// instruction reads instruction ii of chain ci of plan pi; the other
// arguments are chains'.
func (pd *programDecoder) instruction(start, ci, ii uint32, pi int, ep *ExecutionPlan, vstart, nv, nd uint32) (Instruction, error) {
	v := pd.v
	it, err := v.elemTable(start, ii, "Instruction")
	if err != nil {
		return Instruction{}, err
	}
	if err := v.scalar(it, 0, 1, "Instruction"); err != nil {
		return Instruction{}, err
	}
	var x executorch.Instruction
	x.Init(v.buf, flatbuffers.UOffsetT(it.pos))
	in := Instruction{Kind: InstructionKind(x.InstrArgsType())}
	switch in.Kind {
	case InstrKernelCall:
		in.OpIndex, in.Operator, err = pd.kernelCall(it, ep.Operators)
	case InstrDelegateCall:
		in.Delegate, in.Args, err = pd.delegateCall(it, ci, ii, pi, vstart, nv, nd)
	}
	if err != nil {
		return Instruction{}, err
	}
	return in, nil
}

// kernelCall reads the KernelCall table of instruction it: its op_index
// and the operator that names, if ops has it. Its args are not read.
func (pd *programDecoder) kernelCall(it tbl, ops []string) (int, string, error) {
	v := pd.v
	pos, ok, err := v.ref(it, 1, "Instruction.instr_args")
	if err != nil || !ok {
		return -1, "", err
	}
	kt, err := v.table(pos, "KernelCall")
	if err != nil {
		return 0, "", err
	}
	if err := v.scalar(kt, 0, 4, "KernelCall"); err != nil {
		return 0, "", err
	}
	var x executorch.KernelCall
	x.Init(v.buf, flatbuffers.UOffsetT(kt.pos))
	op := x.OpIndex()
	if op < 0 || int64(op) >= int64(len(ops)) {
		return int(op), "", nil
	}
	return int(op), ops[op], nil
}

// delegateCall reads the DelegateCall table of instruction it (instruction
// ii of chain ci of plan pi) and records the call, with its argument types,
// in Program.DelegateCalls.
func (pd *programDecoder) delegateCall(it tbl, ci, ii uint32, pi int, vstart, nv, nd uint32) (int, []int32, error) {
	v := pd.v
	pos, ok, err := v.ref(it, 1, "Instruction.instr_args")
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		return 0, nil, v.errAt(uint64(it.pos), ErrBadFlatbuffer, nil, "plan %d chain %d instruction %d: DelegateCall without its table", pi, ci, ii)
	}
	dt, err := v.table(pos, "DelegateCall")
	if err != nil {
		return 0, nil, err
	}
	if err := v.scalar(dt, 0, 4, "DelegateCall"); err != nil {
		return 0, nil, err
	}
	astart, na, _, err := v.vector(dt, 1, 4, MaxArgs, "DelegateCall.args")
	if err == nil {
		err = v.spend(dt.pos, uint64(na), "DelegateCall.args")
	}
	if err != nil {
		return 0, nil, err
	}
	var x executorch.DelegateCall
	x.Init(v.buf, flatbuffers.UOffsetT(dt.pos))
	di := x.DelegateIndex()
	if di < 0 || uint32(di) >= nd {
		return 0, nil, v.errAt(uint64(dt.pos), ErrBadIndex, di, "plan %d chain %d instruction %d: delegate_index out of range [0,%d)", pi, ci, ii, nd)
	}
	args := make([]int32, na)
	call := DelegateCall{Plan: pi, Delegate: int(di), Args: make([]EValueInfo, na)}
	for j := range call.Args {
		apos := astart + 4*uint32(j)
		idx := int32(v.u32(apos))
		if idx < 0 || uint32(idx) >= nv {
			return 0, nil, v.errAt(uint64(apos), ErrBadValueID, idx, "plan %d chain %d instruction %d: DelegateCall arg %d: EValue index out of range [0,%d)", pi, ci, ii, j, nv)
		}
		args[j] = idx
		if call.Args[j], err = pd.evalueInfo(vstart, uint32(idx), pi); err != nil {
			return 0, nil, err
		}
	}
	pd.p.DelegateCalls = append(pd.p.DelegateCalls, call)
	return int(di), args, nil
}

package wgdelegate

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrUnsupportedPlan is matched (errors.Is) by a *PlanError: the program's
// execution plan does something other than call VulkanBackend delegates.
var ErrUnsupportedPlan = errors.New("unsupported execution plan")

// PlanError reports an instruction of a .pte execution plan that Open
// cannot run. Only plans made entirely of DelegateCall instructions to
// VulkanBackend delegates run; anything else (a portable kernel, a move, a
// jump, ...) needs the ExecuTorch runtime.
type PlanError struct {
	Plan        string // the execution plan (method) name
	Chain       int
	Instruction int    // index in the chain; -1 when the error is not about one instruction
	Kind        string // "KernelCall", "MoveCall", "JumpFalseCall", "FreeCall", "DelegateCall", ...
	Operator    string // for a KernelCall, the operator as "name.overload" when the plan lists it
	Msg         string
}

func (e *PlanError) Error() string {
	where := fmt.Sprintf("plan %q", e.Plan)
	if e.Instruction >= 0 {
		where += fmt.Sprintf(" chain %d instruction %d", e.Chain, e.Instruction)
	}
	what := e.Kind
	if e.Operator != "" {
		what += " " + e.Operator
	}
	if what != "" {
		what += ": "
	}
	return fmt.Sprintf("%s: %s%s", where, what, e.Msg)
}

func (e *PlanError) Unwrap() error { return ErrUnsupportedPlan }

// Instruction kinds, the InstructionArguments union of program.fbs.
const (
	instrNone          = 0
	instrKernelCall    = 1
	instrDelegateCall  = 2
	instrMoveCall      = 3
	instrJumpFalseCall = 4
	instrFreeCall      = 5
)

func instrKindName(k byte) string {
	switch k {
	case instrNone:
		return "NONE"
	case instrKernelCall:
		return "KernelCall"
	case instrDelegateCall:
		return "DelegateCall"
	case instrMoveCall:
		return "MoveCall"
	case instrJumpFalseCall:
		return "JumpFalseCall"
	case instrFreeCall:
		return "FreeCall"
	}
	return fmt.Sprintf("InstructionArguments(%d)", k)
}

// planInstr is one instruction of an execution plan.
type planInstr struct {
	chain, index int
	kind         byte
	delegate     int32   // DelegateCall.delegate_index
	args         []int32 // DelegateCall.args
	operator     string  // KernelCall: "name.overload", or "" when unknown
}

// planInfo is what Open needs from an execution plan beyond what
// serialization.ParseProgram reports: the plan's input and output EValue
// indices and every instruction, delegate calls or not.
type planInfo struct {
	name            string
	inputs, outputs []int32
	instrs          []planInstr
}

// fbReader reads a flatbuffer with every offset bounds-checked; it reports
// a malformed buffer as an error, never a panic. ParseProgram has already
// verified the parts it reads; this reads the few fields it skips.
type fbReader struct {
	buf []byte
	err error
}

var errPlanFormat = errors.New("malformed execution plan")

func (r *fbReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("wgdelegate: %w: %s", errPlanFormat, what)
	}
}

func (r *fbReader) u32(pos uint64) uint32 {
	if r.err != nil || pos+4 > uint64(len(r.buf)) {
		r.fail("offset out of range")
		return 0
	}
	return binary.LittleEndian.Uint32(r.buf[pos:])
}

func (r *fbReader) u16(pos uint64) uint16 {
	if r.err != nil || pos+2 > uint64(len(r.buf)) {
		r.fail("offset out of range")
		return 0
	}
	return binary.LittleEndian.Uint16(r.buf[pos:])
}

// table is a table position and its vtable.
type fbTable struct{ pos, vt uint64 }

func (r *fbReader) table(pos uint64) fbTable {
	soff := int64(int32(r.u32(pos)))
	vt := int64(pos) - soff
	if vt < 0 || vt+4 > int64(len(r.buf)) {
		r.fail("vtable out of range")
		return fbTable{}
	}
	return fbTable{pos: pos, vt: uint64(vt)}
}

// field returns the absolute position of field slot, or 0 when absent.
func (r *fbReader) field(t fbTable, slot int) uint64 {
	if r.err != nil {
		return 0
	}
	vlen := uint64(r.u16(t.vt))
	o := 4 + 2*uint64(slot)
	if o+2 > vlen {
		return 0
	}
	off := uint64(r.u16(t.vt + o))
	if off == 0 {
		return 0
	}
	return t.pos + off
}

// deref follows the uoffset stored at pos.
func (r *fbReader) deref(pos uint64) uint64 { return pos + uint64(r.u32(pos)) }

// vector returns the element start and length of the vector in field slot
// (0, 0 when absent), checking that n elements of elem bytes fit.
func (r *fbReader) vector(t fbTable, slot int, elem uint64) (uint64, int) {
	f := r.field(t, slot)
	if f == 0 {
		return 0, 0
	}
	v := r.deref(f)
	n := uint64(r.u32(v))
	if r.err == nil && (n > uint64(len(r.buf))/elem || v+4+n*elem > uint64(len(r.buf))) {
		r.fail("vector out of range")
	}
	if r.err != nil {
		return 0, 0
	}
	return v + 4, int(n)
}

func (r *fbReader) ints(t fbTable, slot int) []int32 {
	start, n := r.vector(t, slot, 4)
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.u32(start + 4*uint64(i)))
	}
	return out
}

func (r *fbReader) str(t fbTable, slot int) string {
	start, n := r.vector(t, slot, 1)
	if r.err != nil {
		return ""
	}
	return string(r.buf[start : start+uint64(n)])
}

func (r *fbReader) elemTable(start uint64, i int) fbTable {
	p := start + 4*uint64(i)
	return r.table(r.deref(p))
}

// readPlan reads execution plan pi of the Program flatbuffer fb (the .pte
// up to program_size). Slot numbers are program.fbs's: Program.execution_plan
// 1; ExecutionPlan name 0, inputs 3, outputs 4, chains 5, operators 6;
// Chain.instructions 2; Instruction type 0, args 1; KernelCall.op_index 0;
// DelegateCall delegate_index 0, args 1; Operator name 0, overload 1.
func readPlan(fb []byte, pi int) (*planInfo, error) {
	r := &fbReader{buf: fb}
	root := r.table(uint64(r.u32(0)))
	pstart, np := r.vector(root, 1, 4)
	if r.err == nil && (pi < 0 || pi >= np) {
		return nil, fmt.Errorf("wgdelegate: execution plan %d out of range [0,%d)", pi, np)
	}
	if r.err != nil {
		return nil, r.err
	}
	pt := r.elemTable(pstart, pi)
	info := &planInfo{name: r.str(pt, 0), inputs: r.ints(pt, 3), outputs: r.ints(pt, 4)}
	var operators []string
	ostart, no := r.vector(pt, 6, 4)
	for i := 0; i < no && r.err == nil; i++ {
		ot := r.elemTable(ostart, i)
		name := r.str(ot, 0)
		if ov := r.str(ot, 1); ov != "" {
			name += "." + ov
		}
		operators = append(operators, name)
	}
	cstart, nc := r.vector(pt, 5, 4)
	for ci := 0; ci < nc && r.err == nil; ci++ {
		ct := r.elemTable(cstart, ci)
		istart, ni := r.vector(ct, 2, 4)
		for ii := 0; ii < ni && r.err == nil; ii++ {
			it := r.elemTable(istart, ii)
			in := planInstr{chain: ci, index: ii}
			if f := r.field(it, 0); f != 0 && r.err == nil {
				if f >= uint64(len(fb)) {
					r.fail("instruction type out of range")
					break
				}
				in.kind = fb[f]
			}
			af := r.field(it, 1)
			switch in.kind {
			case instrKernelCall:
				if af != 0 {
					kt := r.table(r.deref(af))
					op := int32(0) // absent: the default, 0
					if f := r.field(kt, 0); f != 0 {
						op = int32(r.u32(f))
					}
					if op >= 0 && int(op) < len(operators) {
						in.operator = operators[op]
					}
				}
			case instrDelegateCall:
				if af == 0 {
					r.fail("DelegateCall without its table")
					break
				}
				dt := r.table(r.deref(af))
				if f := r.field(dt, 0); f != 0 {
					in.delegate = int32(r.u32(f))
				}
				in.args = r.ints(dt, 1)
			}
			info.instrs = append(info.instrs, in)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return info, nil
}

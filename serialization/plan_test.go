package serialization

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
)

// handPlan describes one execution plan for planPTE.
type handPlan struct {
	name            string
	values          int  // Int EValues
	bareValues      bool // the Int EValues lack their Int tables
	inputs, outputs []int32
	operators       [][2]string // name, overload
	// sharedOperator > 0 makes ExecutionPlan.operators that many
	// references to one table, operators[0].
	sharedOperator int
	chains         [][]handInstr
}

// handInstr is one instruction for planPTE.
type handInstr struct {
	kind     executorch.InstructionArguments
	bare     bool  // no instr_args table
	op       int32 // KernelCall.op_index
	delegate int32 // DelegateCall.delegate_index
	args     []int32
}

// planPTE builds a program (no eh00, so positions are file offsets) of the
// given plans, each with one inline delegate "H", so that instructions
// EncodePTE never writes can be tested. A kind without a table in the
// schema (NONE, undefined tags) gets a KernelCall table unless bare.
func planPTE(plans ...handPlan) []byte {
	b := flatbuffers.NewBuilder(1024)
	var planTabs []flatbuffers.UOffsetT
	for _, hp := range plans {
		vals := make([]flatbuffers.UOffsetT, hp.values)
		for i := range vals {
			vals[i] = handValue(b, executorch.KernelTypesInt, hp.bareValues)
		}
		valVec := offsetVector(b, vals)
		chains := make([]flatbuffers.UOffsetT, len(hp.chains))
		for ci, ch := range hp.chains {
			instrs := make([]flatbuffers.UOffsetT, len(ch))
			for ii, in := range ch {
				instrs[ii] = handInstruction(b, in)
			}
			vec := offsetVector(b, instrs)
			executorch.ChainStart(b)
			executorch.ChainAddInstructions(b, vec)
			chains[ci] = executorch.ChainEnd(b)
		}
		chainVec := offsetVector(b, chains)
		ops := make([]flatbuffers.UOffsetT, len(hp.operators))
		for i, o := range hp.operators {
			name, overload := b.CreateString(o[0]), b.CreateString(o[1])
			executorch.OperatorStart(b)
			executorch.OperatorAddName(b, name)
			executorch.OperatorAddOverload(b, overload)
			ops[i] = executorch.OperatorEnd(b)
		}
		if hp.sharedOperator > 0 {
			shared := ops[0]
			ops = make([]flatbuffers.UOffsetT, hp.sharedOperator)
			for i := range ops {
				ops[i] = shared
			}
		}
		opVec := offsetVector(b, ops)
		inVec, outVec := int32Vector(b, hp.inputs), int32Vector(b, hp.outputs)
		dels := delegateHVector(b)
		name := b.CreateString(hp.name)
		executorch.ExecutionPlanStart(b)
		executorch.ExecutionPlanAddName(b, name)
		executorch.ExecutionPlanAddValues(b, valVec)
		if hp.inputs != nil {
			executorch.ExecutionPlanAddInputs(b, inVec)
		}
		if hp.outputs != nil {
			executorch.ExecutionPlanAddOutputs(b, outVec)
		}
		if hp.chains != nil {
			executorch.ExecutionPlanAddChains(b, chainVec)
		}
		if hp.operators != nil {
			executorch.ExecutionPlanAddOperators(b, opVec)
		}
		executorch.ExecutionPlanAddDelegates(b, dels)
		planTabs = append(planTabs, executorch.ExecutionPlanEnd(b))
	}
	planVec := offsetVector(b, planTabs)
	return finishTestProgram(b, planVec)
}

func handInstruction(b *flatbuffers.Builder, in handInstr) flatbuffers.UOffsetT {
	var args flatbuffers.UOffsetT
	if !in.bare {
		switch in.kind {
		case executorch.InstructionArgumentsDelegateCall:
			vec := int32Vector(b, in.args)
			executorch.DelegateCallStart(b)
			executorch.DelegateCallAddDelegateIndex(b, in.delegate)
			executorch.DelegateCallAddArgs(b, vec)
			args = executorch.DelegateCallEnd(b)
		case executorch.InstructionArgumentsMoveCall:
			executorch.MoveCallStart(b)
			executorch.MoveCallAddMoveFrom(b, 1)
			executorch.MoveCallAddMoveTo(b, 2)
			args = executorch.MoveCallEnd(b)
		case executorch.InstructionArgumentsJumpFalseCall:
			executorch.JumpFalseCallStart(b)
			executorch.JumpFalseCallAddCondValueIndex(b, 1)
			executorch.JumpFalseCallAddDestinationInstruction(b, 0)
			args = executorch.JumpFalseCallEnd(b)
		case executorch.InstructionArgumentsFreeCall:
			executorch.FreeCallStart(b)
			executorch.FreeCallAddValueIndex(b, 1)
			args = executorch.FreeCallEnd(b)
		default: // KernelCall, NONE and undefined tags
			vec := int32Vector(b, in.args)
			executorch.KernelCallStart(b)
			executorch.KernelCallAddOpIndex(b, in.op)
			executorch.KernelCallAddArgs(b, vec)
			args = executorch.KernelCallEnd(b)
		}
	}
	executorch.InstructionStart(b)
	executorch.InstructionAddInstrArgsType(b, in.kind)
	if args != 0 {
		executorch.InstructionAddInstrArgs(b, args)
	}
	return executorch.InstructionEnd(b)
}

func TestInstructionKindString(t *testing.T) {
	for _, tc := range []struct {
		k    InstructionKind
		want string
	}{
		{InstrNone, "NONE"},
		{InstrKernelCall, "KernelCall"},
		{InstrDelegateCall, "DelegateCall"},
		{InstrMoveCall, "MoveCall"},
		{InstrJumpFalseCall, "JumpFalseCall"},
		{InstrFreeCall, "FreeCall"},
		{6, "InstructionArguments(6)"},
		{255, "InstructionArguments(255)"},
	} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("InstructionKind(%d).String() = %q, want %q", uint8(tc.k), got, tc.want)
		}
	}
}

// TestExecutionPlans decodes a plan with every instruction kind over two
// chains, and a plan with nothing in it.
func TestExecutionPlans(t *testing.T) {
	kc := func(op int32) handInstr {
		return handInstr{kind: executorch.InstructionArgumentsKernelCall, op: op, args: []int32{0, 1, 2}}
	}
	data := planPTE(handPlan{
		name:      "forward",
		values:    4,
		inputs:    []int32{0, 1},
		outputs:   []int32{3},
		operators: [][2]string{{"aten::add", "out"}, {"aten::relu", ""}},
		chains: [][]handInstr{
			{
				kc(0), kc(1), kc(7), kc(-1),
				{kind: executorch.InstructionArgumentsKernelCall, bare: true},
				{kind: executorch.InstructionArgumentsDelegateCall, args: []int32{2, 3}},
			},
			{
				{kind: executorch.InstructionArgumentsMoveCall},
				{kind: executorch.InstructionArgumentsJumpFalseCall},
				{kind: executorch.InstructionArgumentsFreeCall},
				{kind: executorch.InstructionArgumentsNONE, bare: true},
				{kind: 200, op: 99},
			},
		},
	}, handPlan{name: "empty"})
	p, err := ParseProgram(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []ExecutionPlan{{
		Name:      "forward",
		Inputs:    []int32{0, 1},
		Outputs:   []int32{3},
		Operators: []string{"aten::add.out", "aten::relu"},
		Chains: []Chain{
			{Instructions: []Instruction{
				{Kind: InstrKernelCall, OpIndex: 0, Operator: "aten::add.out"},
				{Kind: InstrKernelCall, OpIndex: 1, Operator: "aten::relu"},
				{Kind: InstrKernelCall, OpIndex: 7},
				{Kind: InstrKernelCall, OpIndex: -1},
				{Kind: InstrKernelCall, OpIndex: -1}, // no table
				{Kind: InstrDelegateCall, Delegate: 0, Args: []int32{2, 3}},
			}},
			{Instructions: []Instruction{
				{Kind: InstrMoveCall},
				{Kind: InstrJumpFalseCall},
				{Kind: InstrFreeCall},
				{Kind: InstrNone},
				{Kind: 200},
			}},
		},
		// The hand-built values are Ints; output 3 is one.
		Scalars: []PlanScalar{{Output: 0, Kind: "Int", Int: 3}},
	}, {
		Name:      "empty",
		Inputs:    []int32{},
		Outputs:   []int32{},
		Operators: []string{},
		Chains:    []Chain{},
	}}
	if !reflect.DeepEqual(p.ExecutionPlans, want) {
		t.Errorf("ExecutionPlans\n%+v\nwant\n%+v", p.ExecutionPlans, want)
	}
	if !reflect.DeepEqual(p.Plans, []string{"forward", "empty"}) {
		t.Errorf("Plans %q", p.Plans)
	}
	if n := p.ExecutionPlans[0].NumInstructions(); n != 11 {
		t.Errorf("NumInstructions = %d, want 11", n)
	}
	calls := []DelegateCall{{Plan: 0, Delegate: 0, Args: []EValueInfo{{Index: 2, Kind: "Int"}, {Index: 3, Kind: "Int"}}}}
	if !reflect.DeepEqual(p.DelegateCalls, calls) {
		t.Errorf("DelegateCalls %+v", p.DelegateCalls)
	}
}

// TestExecutionPlanEncodePTE: EncodePTE's plan lists the called delegates'
// values as its inputs and outputs, in delegate order.
func TestExecutionPlanEncodePTE(t *testing.T) {
	p, err := ParseProgram(validPTE(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []ExecutionPlan{{
		Name:      "forward",
		Inputs:    []int32{0},
		Outputs:   []int32{1},
		Operators: []string{},
		Chains: []Chain{{Instructions: []Instruction{
			{Kind: InstrDelegateCall, Delegate: 1, Args: []int32{0, 1}},
		}}},
	}}
	if !reflect.DeepEqual(p.ExecutionPlans, want) {
		t.Errorf("ExecutionPlans\n%+v\nwant\n%+v", p.ExecutionPlans, want)
	}
}

// TestRealExecutionPlans reads the plans of the real exports: the portable
// ones are KernelCalls of named operators ("aten::add.out"), the QNN one
// has a DelegateCall in each of its two model plans and no instruction in
// its 27 constant methods (get_vocab_size, ...).
func TestRealExecutionPlans(t *testing.T) {
	for _, rp := range realPrograms {
		t.Run(rp.file, func(t *testing.T) {
			p, err := ParseProgram(readReal(t, rp.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.ExecutionPlans) != len(p.Plans) {
				t.Fatalf("%d ExecutionPlans for %d plans", len(p.ExecutionPlans), len(p.Plans))
			}
			var delegateCalls int
			for pi := range p.ExecutionPlans {
				ep := &p.ExecutionPlans[pi]
				if ep.Name != p.Plans[pi] || len(ep.Chains) != 1 {
					t.Errorf("plan %d: name %q (Plans has %q), %d chains", pi, ep.Name, p.Plans[pi], len(ep.Chains))
				}
				kinds := map[InstructionKind]int{}
				for _, in := range ep.Chains[0].Instructions {
					kinds[in.Kind]++
					switch in.Kind {
					case InstrKernelCall:
						if !strings.Contains(in.Operator, "::") {
							t.Errorf("plan %q: KernelCall %+v names no operator", ep.Name, in)
						}
					case InstrDelegateCall:
						delegateCalls++
					default:
						t.Errorf("plan %q: unexpected %v", ep.Name, in.Kind)
					}
				}
				t.Logf("plan %q: inputs %v outputs %v, %d operators %q, instructions %v", ep.Name, ep.Inputs, ep.Outputs, len(ep.Operators), ep.Operators, kinds)
			}
			if delegateCalls != len(p.DelegateCalls) {
				t.Errorf("%d DelegateCall instructions, %d DelegateCalls", delegateCalls, len(p.DelegateCalls))
			}
		})
	}
}

// offRejectCase is a malformed input, the sentinel it must produce and the
// byte offset the *FormatError must report.
type offRejectCase struct {
	name string
	make func(t testing.TB) (data []byte, off uint32)
	want error
}

// rejectPlan is the plan planRejectCases break: a KernelCall of its one
// operator, then a DelegateCall.
func rejectPlan() handPlan {
	return handPlan{
		name:      "forward",
		values:    3,
		inputs:    []int32{0},
		outputs:   []int32{2},
		operators: [][2]string{{"aten::add", "out"}},
		chains: [][]handInstr{{
			{kind: executorch.InstructionArgumentsKernelCall},
			{kind: executorch.InstructionArgumentsDelegateCall, args: []int32{0, 2}},
		}},
	}
}

// planRejectCases break one field of rejectPlan's program (or validPTE's,
// whose eh00 header shifts every position), one per rejection path of the
// plan reader beyond DelegateCalls (delegateCallRejectCases).
func planRejectCases() []offRejectCase {
	// plan returns a case that mutates rejectPlan's program through its
	// plan table; mut returns the offset the error must report.
	plan := func(mut func(n fbNav, plan tbl, b []byte) uint32) func(t testing.TB) ([]byte, uint32) {
		return func(t testing.TB) ([]byte, uint32) {
			b := planPTE(rejectPlan())
			n := newNav(t, b)
			return b, mut(n, n.elem(n.root(), 1, 0), b)
		}
	}
	instr := func(n fbNav, plan tbl, i uint32) tbl { return n.elem(n.elem(plan, 5, 0), 2, i) }
	operator := func(n fbNav, plan tbl) tbl { return n.elem(plan, 6, 0) }
	return []offRejectCase{
		{"plan inputs over cap", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(plan, 3)
			le32(b, pos, MaxIOIDs+1)
			return pos
		}), ErrLimit},
		{"plan outputs past end", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(plan, 4)
			le32(b, pos, MaxIOIDs)
			return pos
		}), ErrTruncated},
		{"plan input out of range", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(plan, 3) + 4
			le32(b, pos, 3)
			return pos
		}), ErrBadValueID},
		{"plan output negative", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(plan, 4) + 4
			le32(b, pos, 0xFFFFFFFF)
			return pos
		}), ErrBadValueID},
		{"plan output out of range after eh00", func(t testing.TB) ([]byte, uint32) {
			b := validPTE(t)
			n := newNav(t, b)
			pos := n.vecLenPos(n.elem(n.root(), 1, 0), 4) + 4
			le32(b, pos, 2)
			return b, pos
		}, ErrBadValueID},
		{"operators over cap", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(plan, 6)
			le32(b, pos, MaxOperators+1)
			return pos
		}), ErrLimit},
		{"misaligned Operator table", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(plan, 6) + 4
			rel := n.v.u32(pos) + 2
			le32(b, pos, rel)
			return pos + rel
		}), ErrBadFlatbuffer},
		{"Operator name not NUL-terminated", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(operator(n, plan), 0)
			end := pos + 4 + n.v.u32(pos)
			b[end] = 'x'
			return end
		}), ErrBadFlatbuffer},
		{"Operator overload past end", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(operator(n, plan), 1)
			le32(b, pos, MaxStringLen)
			return pos
		}), ErrTruncated},
		{"Operator name over cap", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.vecLenPos(operator(n, plan), 0)
			le32(b, pos, MaxStringLen+1)
			return pos
		}), ErrLimit},
		{"shared Operator amplification", func(t testing.TB) ([]byte, uint32) {
			// 1000 operators, all one table with a 2000-byte name:
			// decoding would materialise far more than the file holds.
			hp := rejectPlan()
			hp.operators = [][2]string{{strings.Repeat("x", 2000), ""}}
			hp.sharedOperator = 1000
			b := planPTE(hp)
			n := newNav(t, b)
			return b, n.vecLenPos(operator(n, n.elem(n.root(), 1, 0)), 0) + 4
		}, ErrLimit},
		{"Instruction vtable outside flatbuffer", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			it := instr(n, plan, 0)
			le32(b, it.pos, 0x7FFFFFF0)
			return it.pos
		}), ErrTruncated},
		{"instruction type past end", func(t testing.TB) ([]byte, uint32) {
			// The builder shares the Instruction vtable with the EValues,
			// so give the instruction one of its own: slot 0 at in-table
			// offset 0xFFF0.
			b := planPTE(rejectPlan())
			n := newNav(t, b)
			it := instr(n, n.elem(n.root(), 1, 0), 0)
			return withVtable(b, it, 8, 0xFFF0), it.pos
		}, ErrTruncated},
		{"KernelCall table past end", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.field(instr(n, plan, 0), 1)
			le32(b, pos, uint32(len(b)))
			return pos
		}), ErrTruncated},
		{"misaligned KernelCall table", plan(func(n fbNav, plan tbl, b []byte) uint32 {
			pos := n.field(instr(n, plan, 0), 1)
			rel := n.v.u32(pos) + 1
			le32(b, pos, rel)
			return pos + rel
		}), ErrBadFlatbuffer},
		{"misaligned KernelCall op_index", func(t testing.TB) ([]byte, uint32) {
			// A vtable of its own (the DelegateCall may share the old
			// one) puts op_index at in-table offset 5.
			b := planPTE(rejectPlan())
			n := newNav(t, b)
			kt := n.child(instr(n, n.elem(n.root(), 1, 0), 0), 1)
			return withVtable(b, kt, 12, 5), kt.pos + 5
		}, ErrBadFlatbuffer},
	}
}

// withVtable appends a vtable (table size objLen, then the field offsets)
// to the flatbuffer b and points table t at it, so that t's layout can be
// broken without touching the tables that share its vtable.
func withVtable(b []byte, t tbl, objLen uint16, fields ...uint16) []byte {
	vt := uint32(len(b))
	for _, v := range append([]uint16{uint16(4 + 2*len(fields)), objLen}, fields...) {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	le32(b, t.pos, uint32(int32(t.pos)-int32(vt)))
	return b
}

func TestRejectExecutionPlan(t *testing.T) {
	for _, c := range planRejectCases() {
		t.Run(c.name, func(t *testing.T) {
			data, off := c.make(t)
			before := recoveredPanics.Load()
			_, err := ParseProgram(data)
			if recoveredPanics.Load() != before {
				t.Errorf("the decoder recovered a panic")
			}
			fe := assertFormatErr(t, err, c.want)
			if fe.Off != int64(off) {
				t.Errorf("error at offset %d, want %d: %v", fe.Off, off, err)
			}
			t.Log(err)
		})
	}
}

package wgdelegate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
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

// call is one delegate call to build: the decoded blob, the plan EValues
// it reads and writes (nil in and out for a direct blob), and the
// program's types for its arguments.
type call struct {
	delegate int
	blob     *serialization.Blob
	in, out  []int32
	argInfo  []serialization.EValueInfo
	direct   bool
	// the plan's name, inputs and outputs (when !direct)
	plan            string
	planIn, planOut []int32
}

// planCalls decodes what data asks to run: a raw blob, a program's single
// uncalled VulkanBackend delegate, or a plan of delegate calls. Named data
// found in a program is merged into named.
func planCalls(data []byte, named *serialization.NamedDataMap) ([]call, error) {
	switch Detect(data) {
	case FormatBlob:
		b, err := serialization.DecodeBlob(data)
		if err != nil {
			return nil, err
		}
		return []call{{blob: b, direct: true}}, nil
	case FormatProgram:
	default:
		return nil, ErrUnknownFormat
	}
	p, err := serialization.ParseProgram(data)
	if err != nil {
		return nil, err
	}
	if err := named.Merge(p.NamedData); err != nil {
		return nil, err
	}
	pi := slices.Index(p.Plans, "forward")
	if pi < 0 {
		pi = 0
	}
	var plan *serialization.ExecutionPlan
	if len(p.ExecutionPlans) > 0 {
		plan = &p.ExecutionPlans[pi]
	}
	// A program without any VulkanBackend delegate says so, naming the
	// delegates it has, before its plan is looked at.
	first, err := p.DelegateBlob(serialization.VulkanBackendID)
	if err != nil {
		return nil, err
	}
	if plan == nil || plan.NumInstructions() == 0 {
		// Nothing calls a delegate: run the first VulkanBackend one as is.
		b, err := serialization.DecodeBlob(first)
		if err != nil {
			return nil, err
		}
		return []call{{blob: b, direct: true}}, nil
	}
	ids := map[int]*serialization.DelegateInfo{}
	for i := range p.Delegates {
		if d := &p.Delegates[i]; d.Plan == pi {
			ids[d.Delegate] = d
		}
	}
	var argInfo [][]serialization.EValueInfo
	for _, dc := range p.DelegateCalls {
		if dc.Plan == pi {
			argInfo = append(argInfo, dc.Args)
		}
	}
	var calls []call
	decoded := map[int]*serialization.Blob{}
	for ci, ch := range plan.Chains {
		for ii, in := range ch.Instructions {
			c, err := planCall(plan, ci, ii, &in, ids, decoded)
			if err != nil {
				return nil, err
			}
			if k := len(calls); k < len(argInfo) && len(argInfo[k]) == len(in.Args) {
				c.argInfo = argInfo[k]
			}
			calls = append(calls, c)
		}
	}
	return calls, nil
}

// planCall checks that instruction ii of chain ci of plan is a call of a
// VulkanBackend delegate (one of ids, by index) with as many arguments as
// its graph has inputs and outputs, and returns the call. Delegates are
// decoded once, into decoded.
func planCall(plan *serialization.ExecutionPlan, ci, ii int, in *serialization.Instruction,
	ids map[int]*serialization.DelegateInfo, decoded map[int]*serialization.Blob) (call, error) {
	perr := func(format string, a ...any) error {
		return &PlanError{Plan: plan.Name, Chain: ci, Instruction: ii, Kind: in.Kind.String(), Operator: in.Operator, Msg: fmt.Sprintf(format, a...)}
	}
	if in.Kind != serialization.InstrDelegateCall {
		return call{}, perr("not supported: only VulkanBackend delegate calls run (the rest of the program needs the ExecuTorch runtime)")
	}
	d := ids[in.Delegate]
	if d == nil {
		return call{}, perr("delegate index %d out of range", in.Delegate)
	}
	if d.ID != serialization.VulkanBackendID {
		return call{}, perr("delegate %d is %q: only %s delegates run", in.Delegate, d.ID, serialization.VulkanBackendID)
	}
	b := decoded[d.Delegate]
	if b == nil {
		var err error
		if b, err = serialization.DecodeBlob(d.Data); err != nil {
			return call{}, fmt.Errorf("delegate %d: %w", d.Delegate, err)
		}
		decoded[d.Delegate] = b
	}
	nIn, nOut := len(b.Graph.InputIDs), len(b.Graph.OutputIDs)
	if len(in.Args) != nIn+nOut {
		return call{}, perr("%d arguments, but delegate %d's graph has %d inputs and %d outputs", len(in.Args), d.Delegate, nIn, nOut)
	}
	return call{delegate: d.Delegate, blob: b, in: in.Args[:nIn:nIn], out: in.Args[nIn:],
		plan: plan.Name, planIn: plan.Inputs, planOut: plan.Outputs}, nil
}

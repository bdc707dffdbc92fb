package serialization

import (
	"errors"
	"math"
	"reflect"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate/serialization/internal/fb/executorch"
)

func TestScalarTypeDataType(t *testing.T) {
	want := map[int8]DataType{
		0: Uint8, 1: Int8, 3: Int32, 4: Int64, 5: Float16, 6: Float32, 7: Float64, 11: Bool,
	}
	for st := int8(math.MinInt8); ; st++ {
		got, ok := ScalarTypeDataType(st)
		w, wok := want[st]
		if ok != wok || got != w {
			t.Errorf("ScalarTypeDataType(%d) = %v, %v; want %v, %v", st, got, ok, w, wok)
		}
		if st == math.MaxInt8 {
			break
		}
	}
}

func TestDelegateIORoundTrip(t *testing.T) {
	f32 := EValueSpec{ScalarType: ScalarTypeFloat, Sizes: []int32{1, 2}}
	i64 := EValueSpec{ScalarType: ScalarTypeLong, Sizes: []int32{3}}
	scalar := EValueSpec{ScalarType: ScalarTypeInt}
	b3 := EValueSpec{ScalarType: ScalarTypeBool, Sizes: []int32{1, 2, 3}}
	f64 := EValueSpec{ScalarType: ScalarTypeDouble, Sizes: []int32{4}}
	for _, inline := range []bool{false, true} {
		data, err := EncodePTE(PTEOptions{Delegates: []DelegateSpec{
			{ID: "QnnBackend", Blob: []byte("q"), Inline: inline, Inputs: []EValueSpec{f32}, Outputs: []EValueSpec{i64}},
			{ID: "NoCall", Blob: []byte("n"), Inline: inline},
			{ID: VulkanBackendID, Blob: []byte("v"), Inline: inline, Inputs: []EValueSpec{scalar, f32}, Outputs: []EValueSpec{b3, f64}},
			{ID: "NoArgs", Blob: []byte("e"), Inline: inline, Outputs: []EValueSpec{}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseProgram(data)
		if err != nil {
			t.Fatal(err)
		}
		info := func(idx int, s EValueSpec) EValueInfo {
			sizes := s.Sizes
			if sizes == nil {
				sizes = []int32{}
			}
			return EValueInfo{Index: idx, Kind: "Tensor", ScalarType: s.ScalarType, Sizes: sizes}
		}
		want := []DelegateCall{
			{Plan: 0, Delegate: 0, Args: []EValueInfo{info(0, f32), info(1, i64)}},
			{Plan: 0, Delegate: 2, Args: []EValueInfo{info(2, scalar), info(3, f32), info(4, b3), info(5, f64)}},
			{Plan: 0, Delegate: 3, Args: []EValueInfo{}},
		}
		if !reflect.DeepEqual(p.DelegateCalls, want) {
			t.Fatalf("inline %v: DelegateCalls\n%+v\nwant\n%+v", inline, p.DelegateCalls, want)
		}
		io, err := p.DelegateIO(VulkanBackendID)
		if err != nil || !reflect.DeepEqual(io, want[1].Args) {
			t.Errorf("DelegateIO(Vulkan) = %+v, %v", io, err)
		}
		// The program-level types are what the runtime widens back to.
		var dts []DataType
		for _, a := range io {
			dt, ok := ScalarTypeDataType(a.ScalarType)
			if !ok {
				t.Errorf("arg %+v has no DataType", a)
			}
			dts = append(dts, dt)
		}
		if !reflect.DeepEqual(dts, []DataType{Int32, Float32, Bool, Float64}) {
			t.Errorf("Vulkan arg types %v", dts)
		}
		if io, err := p.DelegateIO("QnnBackend"); err != nil || len(io) != 2 || io[1].ScalarType != ScalarTypeLong {
			t.Errorf("DelegateIO(Qnn) = %+v, %v", io, err)
		}
		for _, id := range []string{"NoCall", "NoArgs"} {
			if io, err := p.DelegateIO(id); err != nil || io == nil || len(io) != 0 {
				t.Errorf("DelegateIO(%q) = %#v, %v; want empty slice, nil", id, io, err)
			}
		}
		_, err = p.DelegateIO("XnnpackBackend")
		var nd *NoDelegateError
		if !errors.As(err, &nd) || !errors.Is(err, ErrNoDelegate) || !reflect.DeepEqual(nd.Have, []string{"QnnBackend", "NoCall", VulkanBackendID, "NoArgs"}) {
			t.Errorf("DelegateIO(missing) error %v", err)
		}
		// The blobs are where they were.
		if blob, err := p.DelegateBlob(VulkanBackendID); err != nil || string(blob) != "v" {
			t.Errorf("DelegateBlob = %q, %v", blob, err)
		}
	}
}

// The first call of a delegate with the id counts, even if an earlier
// delegate with the same id is never called.
func TestDelegateIOFirstCalled(t *testing.T) {
	data, err := EncodePTE(PTEOptions{Delegates: []DelegateSpec{
		{ID: "X", Blob: []byte("0")},
		{ID: "X", Blob: []byte("1"), Inputs: []EValueSpec{{ScalarType: ScalarTypeChar, Sizes: []int32{5}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProgram(data)
	if err != nil {
		t.Fatal(err)
	}
	io, err := p.DelegateIO("X")
	if err != nil || len(io) != 1 || io[0].ScalarType != ScalarTypeChar || !reflect.DeepEqual(io[0].Sizes, []int32{5}) {
		t.Errorf("DelegateIO = %+v, %v", io, err)
	}
	if _, err := EncodePTE(PTEOptions{Delegates: []DelegateSpec{
		{ID: "X", Blob: []byte("0"), Inputs: []EValueSpec{{Sizes: make([]int32, MaxTensorDims+1)}}},
	}}); err == nil {
		t.Error("EncodePTE accepted a tensor over MaxTensorDims")
	}
}

// planValues returns how many values plan pi of a parsed .pte holds.
func planValues(t *testing.T, data []byte, pi int) uint32 {
	n := newNav(t, data)
	_, nv, _, err := n.v.vector(n.elem(n.root(), 1, uint32(pi)), 2, 4, math.MaxUint32, "values")
	if err != nil {
		t.Fatal(err)
	}
	return nv
}

// TestRealDelegateIO reads the DelegateCalls of the real exports. Only
// stories260k_qnn.pte has delegates: each of its two plans calls its one
// QnnBackend delegate with 24 tensors, the int32 token and position ids
// first, uint8 (quantized) KV caches in between and uint16 logits over the
// 512-token vocabulary last; the attention mask is uint16 too. UInt16 has no
// DataType, so ScalarTypeDataType reports false for those.
func TestRealDelegateIO(t *testing.T) {
	for _, rp := range realPrograms {
		t.Run(rp.file, func(t *testing.T) {
			p, data := parseReal(t, rp.file)
			if len(rp.delegates) == 0 {
				if len(p.DelegateCalls) != 0 {
					t.Errorf("%d DelegateCalls in a program without delegates", len(p.DelegateCalls))
				}
				return
			}
			if len(p.DelegateCalls) == 0 {
				t.Fatal("no DelegateCalls")
			}
			for _, c := range p.DelegateCalls {
				found := false
				for _, d := range p.Delegates {
					found = found || d.Plan == c.Plan && d.Delegate == c.Delegate
				}
				if !found {
					t.Errorf("call %+v names no delegate", c)
				}
				nv := planValues(t, data, c.Plan)
				t.Logf("plan %q (%d values): DelegateCall delegate %d, %d args", p.Plans[c.Plan], nv, c.Delegate, len(c.Args))
				seen := map[int]bool{}
				for j, a := range c.Args {
					dt, ok := ScalarTypeDataType(a.ScalarType)
					name := dt.String()
					if !ok {
						name = "no DataType"
					}
					t.Logf("  arg %2d: value %2d %s scalar_type %2d (%s) sizes %v", j, a.Index, a.Kind, a.ScalarType, name, a.Sizes)
					if a.Index < 0 || uint32(a.Index) >= nv || seen[a.Index] {
						t.Errorf("arg %d: value %d out of range [0,%d) or repeated", j, a.Index, nv)
					}
					seen[a.Index] = true
					if a.Kind != "Tensor" || len(a.Sizes) == 0 || !ok && a.ScalarType != ScalarTypeUInt16 {
						t.Errorf("arg %d: unexpected %+v", j, a)
					}
				}
				first, last := c.Args[0], c.Args[len(c.Args)-1]
				if len(c.Args) != 24 || first.ScalarType != ScalarTypeInt || last.ScalarType != ScalarTypeUInt16 || last.Sizes[len(last.Sizes)-1] != 512 {
					t.Errorf("plan %q: %d args, first %+v, last %+v", p.Plans[c.Plan], len(c.Args), first, last)
				}
			}
			if len(p.DelegateCalls) != len(p.Delegates) {
				t.Errorf("%d DelegateCalls for %d delegates", len(p.DelegateCalls), len(p.Delegates))
			}
			io, err := p.DelegateIO("QnnBackend")
			if err != nil || len(io) == 0 {
				t.Fatalf("DelegateIO(QnnBackend) = %v, %v", io, err)
			}
			if !reflect.DeepEqual(io, p.DelegateCalls[0].Args) {
				t.Error("DelegateIO is not the first call's args")
			}
			if _, err := p.DelegateIO(VulkanBackendID); !errors.Is(err, ErrNoDelegate) {
				t.Errorf("DelegateIO(Vulkan) error %v", err)
			}
		})
	}
}

// handPTE builds a program (no eh00, one inline delegate "H") whose plan
// has the given values and one chain with the given instructions, so that
// shapes EncodePTE never writes can be tested.
func handPTE(values, instrs func(b *flatbuffers.Builder) []flatbuffers.UOffsetT) []byte {
	b := flatbuffers.NewBuilder(256)
	vals := offsetVector(b, values(b))
	ins := offsetVector(b, instrs(b))
	executorch.ChainStart(b)
	executorch.ChainAddInstructions(b, ins)
	chains := offsetVector(b, []flatbuffers.UOffsetT{executorch.ChainEnd(b)})
	dels := delegateHVector(b)
	name := b.CreateString("forward")
	executorch.ExecutionPlanStart(b)
	executorch.ExecutionPlanAddName(b, name)
	executorch.ExecutionPlanAddValues(b, vals)
	executorch.ExecutionPlanAddChains(b, chains)
	executorch.ExecutionPlanAddDelegates(b, dels)
	plans := offsetVector(b, []flatbuffers.UOffsetT{executorch.ExecutionPlanEnd(b)})
	return finishTestProgram(b, plans)
}

// delegateHVector builds a plan's delegate vector: the one delegate "H",
// whose processed data reference is all defaults (inline entry 0, the "h"
// payload of finishTestProgram).
func delegateHVector(b *flatbuffers.Builder) flatbuffers.UOffsetT {
	id := b.CreateString("H")
	executorch.BackendDelegateDataReferenceStart(b)
	ref := executorch.BackendDelegateDataReferenceEnd(b)
	executorch.BackendDelegateStart(b)
	executorch.BackendDelegateAddId(b, id)
	executorch.BackendDelegateAddProcessed(b, ref)
	return offsetVector(b, []flatbuffers.UOffsetT{executorch.BackendDelegateEnd(b)})
}

// finishTestProgram finishes a test Program with execution plans plans and
// one inline delegate payload ("h").
func finishTestProgram(b *flatbuffers.Builder, plans flatbuffers.UOffsetT) []byte {
	blob := alignedByteVector(b, []byte("h"), 16)
	executorch.BackendDelegateInlineDataStart(b)
	executorch.BackendDelegateInlineDataAddData(b, blob)
	inl := offsetVector(b, []flatbuffers.UOffsetT{executorch.BackendDelegateInlineDataEnd(b)})
	executorch.ProgramStart(b)
	executorch.ProgramAddExecutionPlan(b, plans)
	executorch.ProgramAddBackendDelegateData(b, inl)
	b.FinishWithFileIdentifier(executorch.ProgramEnd(b), []byte(ProgramIdentifier))
	return b.FinishedBytes()
}

// handValue is an EValue of the given kind; a Tensor or an Int gets a table
// unless bare.
func handValue(b *flatbuffers.Builder, kind executorch.KernelTypes, bare bool) flatbuffers.UOffsetT {
	var val flatbuffers.UOffsetT
	switch {
	case kind == executorch.KernelTypesTensor && !bare:
		sizes := int32Vector(b, []int32{7})
		executorch.TensorStart(b)
		executorch.TensorAddScalarType(b, ScalarTypeLong)
		executorch.TensorAddSizes(b, sizes)
		val = executorch.TensorEnd(b)
	case kind == executorch.KernelTypesInt && !bare:
		executorch.IntStart(b)
		executorch.IntAddIntVal(b, 3)
		val = executorch.IntEnd(b)
	}
	executorch.EValueStart(b)
	executorch.EValueAddValType(b, kind)
	if val != 0 {
		executorch.EValueAddVal(b, val)
	}
	return executorch.EValueEnd(b)
}

// handCall is a DelegateCall instruction of delegate 0; bare omits its table.
func handCall(b *flatbuffers.Builder, bare bool, args ...int32) flatbuffers.UOffsetT {
	var call flatbuffers.UOffsetT
	if !bare {
		vec := int32Vector(b, args)
		executorch.DelegateCallStart(b)
		executorch.DelegateCallAddArgs(b, vec)
		call = executorch.DelegateCallEnd(b)
	}
	executorch.InstructionStart(b)
	executorch.InstructionAddInstrArgsType(b, executorch.InstructionArgumentsDelegateCall)
	if !bare {
		executorch.InstructionAddInstrArgs(b, call)
	}
	return executorch.InstructionEnd(b)
}

// handOther is a non-delegate instruction (KernelCall or MoveCall), or one
// with an undefined union tag; the parser must skip all of them unread.
func handOther(b *flatbuffers.Builder, tag executorch.InstructionArguments) flatbuffers.UOffsetT {
	executorch.KernelCallStart(b)
	executorch.KernelCallAddOpIndex(b, 99) // no operators: never checked
	kc := executorch.KernelCallEnd(b)
	executorch.InstructionStart(b)
	executorch.InstructionAddInstrArgsType(b, tag)
	executorch.InstructionAddInstrArgs(b, kc)
	return executorch.InstructionEnd(b)
}

func TestHandBuiltDelegateCalls(t *testing.T) {
	data := handPTE(func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
		return []flatbuffers.UOffsetT{
			handValue(b, executorch.KernelTypesTensor, false),
			handValue(b, executorch.KernelTypesInt, false),
			handValue(b, executorch.KernelTypesNull, true),
			handValue(b, executorch.KernelTypesNONE, true),
			handValue(b, 42, true),
		}
	}, func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
		return []flatbuffers.UOffsetT{
			handOther(b, executorch.InstructionArgumentsKernelCall),
			handCall(b, false, 1, 2, 3, 4, 0),
			handOther(b, executorch.InstructionArgumentsMoveCall),
			handOther(b, 200),
			handCall(b, false, 0),
		}
	})
	p, err := ParseProgram(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []DelegateCall{
		{Args: []EValueInfo{{Index: 1, Kind: "Int"}, {Index: 2, Kind: "Null"}, {Index: 3, Kind: "NONE"}, {Index: 4, Kind: "KernelTypes(42)"},
			{Index: 0, Kind: "Tensor", ScalarType: ScalarTypeLong, Sizes: []int32{7}}}},
		{Args: []EValueInfo{{Index: 0, Kind: "Tensor", ScalarType: ScalarTypeLong, Sizes: []int32{7}}}},
	}
	if !reflect.DeepEqual(p.DelegateCalls, want) {
		t.Errorf("DelegateCalls %+v", p.DelegateCalls)
	}
	if io, err := p.DelegateIO("H"); err != nil || !reflect.DeepEqual(io, want[0].Args) {
		t.Errorf("DelegateIO = %+v, %v", io, err)
	}
}

// delegateCallRejectCases break the DelegateCall that validPTE gives
// delegate B (index 1; args: 2 tensor values) or build programs by hand.
func delegateCallRejectCases() []rejectCase {
	pte := func(mut func(n fbNav, call tbl, b []byte)) func(t testing.TB) []byte {
		return func(t testing.TB) []byte {
			b := validPTE(t)
			n := newNav(t, b)
			plan := n.elem(n.root(), 1, 0)
			instr := n.elem(n.elem(plan, 5, 0), 2, 0)
			mut(n, n.child(instr, 1), b)
			return b
		}
	}
	hand := func(values func(b *flatbuffers.Builder) []flatbuffers.UOffsetT, instr func(b *flatbuffers.Builder) flatbuffers.UOffsetT) func(t testing.TB) []byte {
		return func(testing.TB) []byte {
			return handPTE(values, func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
				return []flatbuffers.UOffsetT{instr(b)}
			})
		}
	}
	oneTensor := func(bare bool) func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
		return func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
			return []flatbuffers.UOffsetT{handValue(b, executorch.KernelTypesTensor, bare)}
		}
	}
	return []rejectCase{
		{"delegate_index out of range", pte(func(n fbNav, call tbl, b []byte) { le32(b, n.field(call, 0), 4) }), ErrBadIndex},
		{"delegate_index negative", pte(func(n fbNav, call tbl, b []byte) { le32(b, n.field(call, 0), math.MaxUint32) }), ErrBadIndex},
		{"DelegateCall arg out of range", pte(func(n fbNav, call tbl, b []byte) { le32(b, n.vecLenPos(call, 1)+8, 2) }), ErrBadValueID},
		{"DelegateCall arg negative", pte(func(n fbNav, call tbl, b []byte) { le32(b, n.vecLenPos(call, 1)+4, 1<<31) }), ErrBadValueID},
		{"DelegateCall args over cap", pte(func(n fbNav, call tbl, b []byte) { le32(b, n.vecLenPos(call, 1), MaxArgs+1) }), ErrLimit},
		{"DelegateCall args past end", pte(func(n fbNav, call tbl, b []byte) { le32(b, n.vecLenPos(call, 1), MaxArgs) }), ErrTruncated},
		{"instructions over cap", func(t testing.TB) []byte {
			b := validPTE(t)
			n := newNav(t, b)
			le32(b, n.vecLenPos(n.elem(n.elem(n.root(), 1, 0), 5, 0), 2), MaxChainLen+1)
			return b
		}, ErrLimit},
		{"chains over cap", func(t testing.TB) []byte {
			b := validPTE(t)
			n := newNav(t, b)
			le32(b, n.vecLenPos(n.elem(n.root(), 1, 0), 5), MaxChains+1)
			return b
		}, ErrLimit},
		{"DelegateCall without table", hand(oneTensor(false), func(b *flatbuffers.Builder) flatbuffers.UOffsetT { return handCall(b, true) }), ErrBadFlatbuffer},
		{"Tensor arg without table", hand(oneTensor(true), func(b *flatbuffers.Builder) flatbuffers.UOffsetT { return handCall(b, false, 0) }), ErrBadFlatbuffer},
		{"hand-built arg out of range", hand(oneTensor(false), func(b *flatbuffers.Builder) flatbuffers.UOffsetT { return handCall(b, false, 0, 1) }), ErrBadValueID},
	}
}

func TestRejectDelegateCall(t *testing.T) {
	for _, c := range delegateCallRejectCases() {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseProgram(c.make(t))
			assertFormatErr(t, err, c.want)
			t.Log(err)
		})
	}
}

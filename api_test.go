package wgdelegate_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tests of the public API: Open/Load options, the Model over execution
// plans of several delegate calls, and typed tensors.

// Instruction kinds of program.fbs's InstructionArguments union.
const (
	kernelCall   = 1
	delegateCall = 2
	moveCall     = 3
)

// planInstr is one instruction for encodePlan.
type planInstr struct {
	kind     byte
	delegate int32   // DelegateCall.delegate_index
	args     []int32 // DelegateCall.args
	op       int32   // KernelCall.op_index
}

// planSpec describes a .pte execution plan that serialization.EncodePTE
// cannot express: values shared between delegate calls (one call's outputs
// feeding another), plan inputs and outputs chosen freely, and non-delegate
// instructions.
type planSpec struct {
	delegates []serialization.DelegateSpec // only ID and Blob are used; stored inline
	values    []serialization.EValueSpec   // Tensor EValues, by index
	inputs    []int32
	outputs   []int32
	instrs    []planInstr
	operators [][2]string // name, overload
}

// encodePlan writes spec as a minimal .pte (ET12, no extended header, the
// delegates inline) with the flatbuffers builder directly. Slot numbers are
// program.fbs's.
func encodePlan(t testing.TB, spec planSpec) []byte {
	t.Helper()
	b := flatbuffers.NewBuilder(1024)
	ints := func(v []int32) flatbuffers.UOffsetT {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependInt32(v[i])
		}
		return b.EndVector(len(v))
	}
	offsets := func(v []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependUOffsetT(v[i])
		}
		return b.EndVector(len(v))
	}
	var inline, delegates []flatbuffers.UOffsetT
	for i, d := range spec.delegates {
		b.StartVector(1, len(d.Blob), 16)
		for j := len(d.Blob) - 1; j >= 0; j-- {
			b.PrependByte(d.Blob[j])
		}
		data := b.EndVector(len(d.Blob))
		b.StartObject(1) // BackendDelegateInlineData
		b.PrependUOffsetTSlot(0, data, 0)
		inline = append(inline, b.EndObject())

		id := b.CreateString(d.ID)
		b.StartObject(2) // BackendDelegateDataReference: INLINE, index i
		b.PrependByteSlot(0, 0, 0)
		b.PrependUint32Slot(1, uint32(i), 0)
		ref := b.EndObject()
		b.StartObject(3) // BackendDelegate
		b.PrependUOffsetTSlot(0, id, 0)
		b.PrependUOffsetTSlot(1, ref, 0)
		delegates = append(delegates, b.EndObject())
	}
	var values []flatbuffers.UOffsetT
	for _, v := range spec.values {
		sizes := ints(v.Sizes)
		order := make([]byte, len(v.Sizes))
		for i := range order {
			order[i] = byte(i)
		}
		dimOrder := b.CreateByteVector(order)
		b.StartObject(10) // Tensor
		b.PrependInt8Slot(0, v.ScalarType, 0)
		b.PrependUOffsetTSlot(2, sizes, 0)
		b.PrependUOffsetTSlot(3, dimOrder, 0)
		tt := b.EndObject()
		b.StartObject(2) // EValue: val_type Tensor (5), val
		b.PrependByteSlot(0, 5, 0)
		b.PrependUOffsetTSlot(1, tt, 0)
		values = append(values, b.EndObject())
	}
	var instrs []flatbuffers.UOffsetT
	for _, in := range spec.instrs {
		var args flatbuffers.UOffsetT
		switch in.kind {
		case delegateCall:
			a := ints(in.args)
			b.StartObject(2)
			b.PrependInt32Slot(0, in.delegate, 0)
			b.PrependUOffsetTSlot(1, a, 0)
			args = b.EndObject()
		case kernelCall:
			a := ints(nil)
			b.StartObject(2)
			b.PrependInt32Slot(0, in.op, 0)
			b.PrependUOffsetTSlot(1, a, 0)
			args = b.EndObject()
		default: // MoveCall and friends: two ints, both 0
			b.StartObject(2)
			args = b.EndObject()
		}
		b.StartObject(2) // Instruction
		b.PrependByteSlot(0, in.kind, 0)
		b.PrependUOffsetTSlot(1, args, 0)
		instrs = append(instrs, b.EndObject())
	}
	instrVec := offsets(instrs)
	b.StartObject(4) // Chain
	b.PrependUOffsetTSlot(2, instrVec, 0)
	chain := b.EndObject()
	var ops []flatbuffers.UOffsetT
	for _, o := range spec.operators {
		name, overload := b.CreateString(o[0]), b.CreateString(o[1])
		b.StartObject(2)
		b.PrependUOffsetTSlot(0, name, 0)
		b.PrependUOffsetTSlot(1, overload, 0)
		ops = append(ops, b.EndObject())
	}
	name := b.CreateString("forward")
	valueVec, inVec, outVec := offsets(values), ints(spec.inputs), ints(spec.outputs)
	chainVec, opVec, delVec := offsets([]flatbuffers.UOffsetT{chain}), offsets(ops), offsets(delegates)
	b.StartObject(10) // ExecutionPlan
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependUOffsetTSlot(2, valueVec, 0)
	b.PrependUOffsetTSlot(3, inVec, 0)
	b.PrependUOffsetTSlot(4, outVec, 0)
	b.PrependUOffsetTSlot(5, chainVec, 0)
	b.PrependUOffsetTSlot(6, opVec, 0)
	b.PrependUOffsetTSlot(7, delVec, 0)
	plan := b.EndObject()
	planVec, inlineVec, segVec := offsets([]flatbuffers.UOffsetT{plan}), offsets(inline), offsets(nil)
	b.StartObject(8) // Program
	b.PrependUOffsetTSlot(1, planVec, 0)
	b.PrependUOffsetTSlot(3, inlineVec, 0)
	b.PrependUOffsetTSlot(4, segVec, 0)
	b.FinishWithFileIdentifier(b.EndObject(), []byte("ET12"))
	return b.FinishedBytes()
}

func f32spec(sizes ...int32) serialization.EValueSpec {
	return serialization.EValueSpec{ScalarType: serialization.ScalarTypeFloat, Sizes: sizes}
}

// mustBlob encodes b, failing t on an error.
func mustBlob(t testing.TB, b *serialization.Builder) []byte {
	t.Helper()
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// addBlob is y = x + w (alpha 1), all float32 of n elements.
func addBlob(t testing.TB, n int64) []byte {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(n), -1)
	w := b.Tensor(serialization.Float32, dims(n), -1)
	y := b.Tensor(serialization.Float32, dims(n), -1)
	b.Op("aten.add.Tensor", x, w, b.Double(1), y)
	b.Inputs(x, w)
	b.Outputs(y)
	return mustBlob(t, b)
}

// reluBlob is y = relu(x), float32 of n elements.
func reluBlob(t testing.TB, n int64) []byte {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(n), -1)
	y := b.Tensor(serialization.Float32, dims(n), -1)
	b.Op("aten.relu.default", x, y)
	b.Inputs(x)
	b.Outputs(y)
	return mustBlob(t, b)
}

// chainSpec: values 0 x, 1 w, 2 s = add(x, w), 3 r = relu(s),
// 4 rr = relu(r) (the relu delegate called twice); outputs [rr, s].
func chainSpec(t testing.TB) planSpec {
	vk := serialization.VulkanBackendID
	return planSpec{
		delegates: []serialization.DelegateSpec{{ID: vk, Blob: reluBlob(t, 5)}, {ID: vk, Blob: addBlob(t, 5)}},
		values:    []serialization.EValueSpec{f32spec(5), f32spec(5), f32spec(5), f32spec(5), f32spec(5)},
		inputs:    []int32{0, 1},
		outputs:   []int32{4, 2},
		instrs: []planInstr{
			{kind: delegateCall, delegate: 1, args: []int32{0, 1, 2}},
			{kind: delegateCall, delegate: 0, args: []int32{2, 3}},
			{kind: delegateCall, delegate: 0, args: []int32{3, 4}},
		},
	}
}

// loadPTE loads pte on the test device; the model is closed when t ends.
func loadPTE(t testing.TB, pte []byte) *wgdelegate.Model {
	t.Helper()
	m, err := wgdelegate.Load(context.Background(), pte, wgdelegate.WithDevice(device(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestChainedDelegates(t *testing.T) {
	requireOps(t, "aten.add.Tensor", "aten.relu.default")
	pte := encodePlan(t, chainSpec(t))
	ctx := context.Background()
	m := loadPTE(t, pte)
	if m.NumDelegates() != 2 || m.NumInputs() != 2 || m.NumOutputs() != 2 {
		t.Fatalf("delegates %d, inputs %d, outputs %d", m.NumDelegates(), m.NumInputs(), m.NumOutputs())
	}
	if dt, shape, err := m.OutputInfo(1); err != nil || dt != serialization.Float32 || !slices.Equal(shape, []int64{5}) {
		t.Errorf("output 1 info %v %v, %v", dt, shape, err)
	}
	x := []float32{-3, -1, 0, 2, 4}
	w := []float32{1, 2, -1, -5, 0.5}
	outs, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{5}, x), wgdelegate.FromFloat32([]int64{5}, w))
	if err != nil {
		t.Fatal(err)
	}
	sum, relu := make([]float32, 5), make([]float32, 5)
	for i := range x {
		sum[i] = x[i] + w[i]
		relu[i] = max(sum[i], 0)
	}
	closeTo(t, f32(t, outs[0]), relu, 0)
	closeTo(t, f32(t, outs[1]), sum, 0)
	if st := m.MemoryStats(); st.NumDispatches < 2 {
		t.Errorf("stats %+v", st)
	}

	// Input errors keep their kind through the plan.
	if _, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{5}, x)); !errors.Is(err, graph.ErrInput) {
		t.Errorf("one input: %v", err)
	}
	if _, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{5}, x), wgdelegate.FromInt32([]int64{5}, make([]int32, 5))); !errors.Is(err, graph.ErrInput) {
		t.Errorf("int32 input: %v", err)
	}
	m.Close()
	if _, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{5}, x), wgdelegate.FromFloat32([]int64{5}, w)); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestInfoIndex: InputInfo and OutputInfo answer an index the model does
// not have with an *IndexError (ErrIndex), not a panic, for a one-delegate
// model and a chained plan alike.
func TestInfoIndex(t *testing.T) {
	requireOps(t, "aten.add.Tensor", "aten.relu.default")
	single := loadPTE(t, reluBlob(t, 4))
	chained := loadPTE(t, encodePlan(t, chainSpec(t)))
	for _, tc := range []struct {
		name  string
		m     *wgdelegate.Model
		what  string
		index int
		count int // the model's count; index < count is in range
	}{
		{"single input 0", single, "input", 0, 1},
		{"single input 5", single, "input", 5, 1},
		{"single input -1", single, "input", -1, 1},
		{"single output 0", single, "output", 0, 1},
		{"single output 1", single, "output", 1, 1},
		{"chained input 1", chained, "input", 1, 2},
		{"chained input 2", chained, "input", 2, 2},
		{"chained output 1", chained, "output", 1, 2},
		{"chained output 7", chained, "output", 7, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := tc.m.InputInfo
			if tc.what == "output" {
				info = tc.m.OutputInfo
			}
			dt, shape, err := info(tc.index)
			if tc.index >= 0 && tc.index < tc.count {
				if err != nil || dt != serialization.Float32 || len(shape) != 1 {
					t.Fatalf("%s(%d) = %v %v, %v", tc.what, tc.index, dt, shape, err)
				}
				return
			}
			var ie *wgdelegate.IndexError
			if !errors.Is(err, wgdelegate.ErrIndex) || !errors.As(err, &ie) || ie.What != tc.what || ie.Index != tc.index || ie.Count != tc.count {
				t.Fatalf("%s(%d): %v (%#v), want an *IndexError{%s %d of %d}", tc.what, tc.index, err, ie, tc.what, tc.index, tc.count)
			}
			if shape != nil {
				t.Errorf("shape %v with an error", shape)
			}
		})
	}
}

// TestIndependentDelegates: two delegates written by EncodePTE, each with
// its own values; the plan's inputs and outputs are theirs in order.
func TestIndependentDelegates(t *testing.T) {
	requireOps(t, "aten.add.Tensor", "aten.relu.default")
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{
		{ID: serialization.VulkanBackendID, Blob: reluBlob(t, 3), Inputs: []serialization.EValueSpec{f32spec(3)}, Outputs: []serialization.EValueSpec{f32spec(3)}},
		{ID: serialization.VulkanBackendID, Blob: addBlob(t, 2), Inline: true,
			Inputs: []serialization.EValueSpec{f32spec(2), f32spec(2)}, Outputs: []serialization.EValueSpec{f32spec(2)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := loadPTE(t, pte)
	outs, err := m.Execute(ctx,
		wgdelegate.FromFloat32([]int64{3}, []float32{-1, 0, 1}),
		wgdelegate.FromFloat32([]int64{2}, []float32{1, 2}),
		wgdelegate.FromFloat32([]int64{2}, []float32{10, 20}))
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), []float32{0, 0, 1}, 0)
	closeTo(t, f32(t, outs[1]), []float32{11, 22}, 0)
}

func TestPlanErrors(t *testing.T) {
	vk := serialization.VulkanBackendID
	relu := reluBlob(t, 5)
	base := func() planSpec {
		return planSpec{
			delegates: []serialization.DelegateSpec{{ID: vk, Blob: relu}},
			values:    []serialization.EValueSpec{f32spec(5), f32spec(5), f32spec(5)},
			inputs:    []int32{0},
			outputs:   []int32{1},
			instrs:    []planInstr{{kind: delegateCall, delegate: 0, args: []int32{0, 1}}},
			operators: [][2]string{{"aten::sub", "out"}, {"aten::add", "out"}},
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*planSpec)
		wants []string
	}{
		{"kernel call", func(s *planSpec) {
			s.instrs = append(s.instrs, planInstr{kind: kernelCall, op: 1})
		}, []string{"instruction 1", "KernelCall", "aten::add.out"}},
		{"kernel call op 0", func(s *planSpec) {
			s.instrs = append([]planInstr{{kind: kernelCall}}, s.instrs...)
		}, []string{"instruction 0", "KernelCall aten::sub.out"}},
		{"move", func(s *planSpec) {
			s.instrs = append(s.instrs, planInstr{kind: moveCall})
		}, []string{"MoveCall"}},
		{"foreign delegate", func(s *planSpec) {
			s.delegates = append(s.delegates, serialization.DelegateSpec{ID: "XnnpackBackend", Blob: []byte("xnn")})
			s.instrs = append(s.instrs, planInstr{kind: delegateCall, delegate: 1, args: []int32{1, 2}})
		}, []string{"XnnpackBackend", "DelegateCall"}},
		{"arity", func(s *planSpec) {
			s.instrs[0].args = []int32{0, 1, 2}
		}, []string{"3 arguments", "1 inputs and 1 outputs"}},
		{"read before write", func(s *planSpec) {
			s.instrs[0].args = []int32{2, 1}
		}, []string{"reads value 2"}},
		{"output never written", func(s *planSpec) {
			s.outputs = []int32{2}
		}, []string{"value 2", "never written"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			_, err := wgdelegate.Load(context.Background(), encodePlan(t, s), wgdelegate.WithDevice(device(t)))
			var pe *wgdelegate.PlanError
			if !errors.As(err, &pe) || !errors.Is(err, wgdelegate.ErrUnsupportedPlan) {
				t.Fatalf("got %v, want a *PlanError", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestRealProgramsRejected: the real ExecuTorch programs in the shared test
// data use portable kernels or other backends; Open names what it cannot run.
func TestRealProgramsRejected(t *testing.T) {
	dir := "../shared/testdata/executorch"
	for _, tc := range []struct{ file, want string }{
		{"add_apple.pte", "no VulkanBackend delegate"},
		{"xor.pte", "no VulkanBackend delegate"},
		{"stories260k_qnn.pte", "QnnBackend"},
	} {
		path := filepath.Join(dir, tc.file)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("no shared test data: %v", err)
		}
		_, err := wgdelegate.Open(context.Background(), path, wgdelegate.WithDevice(device(t)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: got %v, want an error naming the file and %q", tc.file, err, tc.want)
		}
	}
}

// TestOpenOptions writes a .pte and a .ptd to disk and opens them with the
// default device, a logger, a progress callback and a cache directory.
func TestOpenOptions(t *testing.T) {
	requireOps(t, "aten.add.Tensor")
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(4), -1)
	c, _ := b.NamedConst(serialization.Float32, dims(4), f32bytes([]float32{1, 2, 3, 4}))
	y := b.Tensor(serialization.Float32, dims(4), -1)
	b.Op("aten.add.Tensor", x, c, b.Double(1), y)
	b.Inputs(x)
	b.Outputs(y)
	blob := mustBlob(t, b)
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob,
		Inputs: []serialization.EValueSpec{f32spec(4)}, Outputs: []serialization.EValueSpec{f32spec(4)}}}})
	if err != nil {
		t.Fatal(err)
	}
	ptd, err := serialization.EncodePTD(b.NamedBlobs())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ptePath, ptdPath := filepath.Join(dir, "m.pte"), filepath.Join(dir, "w.ptd")
	if err := os.WriteFile(ptePath, pte, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ptdPath, ptd, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	var logs bytes.Buffer
	var phases []wgdelegate.Phase
	var last wgdelegate.Progress
	m, err := wgdelegate.Open(ctx, ptePath,
		wgdelegate.WithDataFiles(ptdPath),
		wgdelegate.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		wgdelegate.WithProgress(func(p wgdelegate.Progress) { phases = append(phases, p.Phase); last = p }),
		wgdelegate.WithPackedCache(filepath.Join(dir, "cache")))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(phases, []wgdelegate.Phase{wgdelegate.PhaseParse, wgdelegate.PhaseBuild, wgdelegate.PhaseDone}) {
		t.Errorf("phases %v", phases)
	}
	if last.BytesTotal != 16 || last.BytesDone != 16 || last.Delegates != 1 {
		t.Errorf("last progress %+v", last)
	}
	if !strings.Contains(logs.String(), "graph: built") {
		t.Errorf("logger got no build record: %s", logs.String())
	}
	if m.PackedCache() != filepath.Join(dir, "cache") {
		t.Errorf("packed cache %q", m.PackedCache())
	}
	outs, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{4}, []float32{10, 20, 30, 40}))
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, f32(t, outs[0]), []float32{11, 22, 33, 44}, 0)

	// A second model shares the default device; closing both releases it
	// and the next Open opens a new one.
	m2, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDataFiles(ptdPath))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := m2.Execute(ctx, wgdelegate.FromFloat32([]int64{4}, make([]float32, 4))); err != nil {
		t.Fatalf("second model after the first closed: %v", err)
	}
	m2.Close()
	m3, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDataFiles(ptdPath))
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if _, err := m3.Execute(ctx, wgdelegate.FromFloat32([]int64{4}, make([]float32, 4))); err != nil {
		t.Fatal(err)
	}

	// Missing data file: the error names it and its position.
	if _, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDataFiles(filepath.Join(dir, "nope.ptd"))); err == nil || !strings.Contains(err.Error(), "nope.ptd") {
		t.Errorf("missing data file: %v", err)
	}
	// Without the .ptd the key is missing.
	if _, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDevice(device(t))); !errors.Is(err, graph.ErrConstant) {
		t.Errorf("without data: %v", err)
	}
	// A memory limit below the tensors' 32 bytes refuses the model; one
	// above loads it.
	if _, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDataFiles(ptdPath), wgdelegate.WithMemoryLimit(16)); !errors.Is(err, wgdelegate.ErrUnsupported) || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("16-byte memory limit: %v", err)
	}
	m4, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDataFiles(ptdPath), wgdelegate.WithMemoryLimit(1<<20))
	if err != nil {
		t.Fatalf("1 MiB memory limit: %v", err)
	}
	m4.Close()
}

func TestTensors(t *testing.T) {
	f := []float32{1.5, -2, float32(math.Inf(1))}
	ft := wgdelegate.FromFloat32([]int64{3}, f)
	if ft.DType != wgdelegate.Float32 || ft.Numel() != 3 || ft.String() != "float32 [3]" {
		t.Errorf("float32 tensor %v", ft)
	}
	back, err := ft.Float32s()
	if err != nil || !slices.Equal(back, f) {
		t.Fatalf("Float32s %v %v", back, err)
	}
	// Zero-copy on little-endian hosts: the three share memory.
	if littleEndianHost() {
		f[0] = 7
		if back[0] != 7 || unsafe.SliceData(ft.Data) != (*byte)(unsafe.Pointer(&f[0])) {
			t.Errorf("FromFloat32 copied")
		}
	}
	if _, err := ft.Int32s(); err == nil {
		t.Error("Int32s of a float32 tensor")
	}

	i64, err := wgdelegate.FromInt64([]int64{2}, []int64{math.MinInt64, 5}).Int64s()
	if err != nil || !slices.Equal(i64, []int64{math.MinInt64, 5}) {
		t.Errorf("Int64s %v %v", i64, err)
	}
	i32, err := wgdelegate.FromInt32([]int64{2, 1}, []int32{-1, 9}).Int32s()
	if err != nil || !slices.Equal(i32, []int32{-1, 9}) {
		t.Errorf("Int32s %v %v", i32, err)
	}
	f64, err := wgdelegate.FromFloat64(nil, []float64{math.Pi}).Float64s()
	if err != nil || !slices.Equal(f64, []float64{math.Pi}) {
		t.Errorf("Float64s %v %v", f64, err)
	}
	bt := wgdelegate.FromBool([]int64{3}, []bool{true, false, true})
	if !bytes.Equal(bt.Data, []byte{1, 0, 1}) {
		t.Errorf("FromBool data %v", bt.Data)
	}
	bt.Data[1] = 0x80 // any non-zero byte reads as true
	if bs, err := bt.Bools(); err != nil || !slices.Equal(bs, []bool{true, true, true}) {
		t.Errorf("Bools %v %v", bs, err)
	}
	u8, err := wgdelegate.FromUint8([]int64{2}, []uint8{3, 250}).Uint8s()
	if err != nil || !slices.Equal(u8, []uint8{3, 250}) {
		t.Errorf("Uint8s %v %v", u8, err)
	}

	// Misaligned data is decoded by copying.
	raw := make([]byte, 13)
	g := graph.Float32Tensor([]int64{3}, []float32{1, 2, 3})
	copy(raw[1:], g.Data)
	mis := wgdelegate.Tensor{DType: wgdelegate.Float32, Shape: []int64{3}, Data: raw[1:13]}
	if v, err := mis.Float32s(); err != nil || !slices.Equal(v, []float32{1, 2, 3}) {
		t.Errorf("misaligned Float32s %v %v", v, err)
	}
	if _, err := (wgdelegate.Tensor{DType: wgdelegate.Float32, Data: raw[:5]}).Float32s(); err == nil {
		t.Error("5 data bytes decoded as float32")
	}
	// Empty tensors.
	if v, err := wgdelegate.FromFloat32([]int64{0, 3}, nil).Float32s(); err != nil || len(v) != 0 {
		t.Errorf("empty %v %v", v, err)
	}
	// Tensor and graph.Tensor convert both ways.
	if gt := graph.Tensor(ft); gt.DType != ft.DType || &gt.Data[0] != &ft.Data[0] {
		t.Error("conversion to graph.Tensor copied")
	}
}

func littleEndianHost() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// TestPlanCorrupt flips every byte of a chained-plan .pte in turn: Load may
// fail but must not panic or hang (the plan reader checks every offset).
func TestPlanCorrupt(t *testing.T) {
	pte := encodePlan(t, chainSpec(t))
	ctx := context.Background()
	dev := device(t)
	for i := range pte {
		for _, v := range []byte{0xff, 0x00} {
			bad := bytes.Clone(pte)
			if bad[i] == v {
				continue
			}
			bad[i] = v
			m, err := wgdelegate.Load(ctx, bad, wgdelegate.WithDevice(dev))
			if err == nil {
				m.Close()
			}
		}
	}
}

// TestChainedProgress: the relu delegate is called twice but built once.
func TestChainedProgress(t *testing.T) {
	requireOps(t, "aten.add.Tensor", "aten.relu.default")
	var got []wgdelegate.Progress
	m, err := wgdelegate.Load(context.Background(), encodePlan(t, chainSpec(t)), wgdelegate.WithDevice(device(t)),
		wgdelegate.WithProgress(func(p wgdelegate.Progress) { got = append(got, p) }))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if len(got) != 4 || got[1].Phase != wgdelegate.PhaseBuild || got[1].Delegate != 0 || got[2].Delegate != 1 ||
		got[3].Phase != wgdelegate.PhaseDone || got[3].Delegates != 2 {
		t.Errorf("progress %+v", got)
	}
}

// TestProgressCountsDeferredWeights: a weight that reaches the device
// only through et_vk.prepack (deferred: no buffer of its own) still counts
// in the progress byte totals.
func TestProgressCountsDeferredWeights(t *testing.T) {
	requireOps(t, "et_vk.prepack.default", "aten.add.Tensor")
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, []uint32{6}, -1)
	w := b.InlineConst(f, []uint32{6}, make([]byte, 24))
	p := b.Tensor(f, []uint32{6}, -1)
	b.Op("et_vk.prepack.default", w, p)
	y := b.Tensor(f, []uint32{6}, -1)
	b.Op("aten.add.Tensor", x, p, b.Double(1), y)
	b.Inputs(x)
	b.Outputs(y)
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	var last wgdelegate.Progress
	m, err := wgdelegate.Load(context.Background(), blob, wgdelegate.WithDevice(device(t)),
		wgdelegate.WithProgress(func(p wgdelegate.Progress) { last = p }))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if s := m.MemoryStats(); s.NumDeferredConstants != 1 {
		t.Fatalf("%d deferred constants, want the prepacked weight", s.NumDeferredConstants)
	}
	if last.BytesTotal != 24 || last.BytesDone != 24 {
		t.Errorf("progress %d/%d weight bytes, want 24/24", last.BytesDone, last.BytesTotal)
	}
}

// TestKernelConfigsSideBySide loads one elementwise chain twice in one
// process, fused (the default) and with NoElementwiseFusion, and runs both
// concurrently: kernel choices belong to a load, not to the process.
func TestKernelConfigsSideBySide(t *testing.T) {
	t.Parallel()
	const n, elems = 6, 1000
	x := make([]float32, elems)
	for i := range x {
		x[i] = float32(i%23) / 7
	}
	var outs [2][]float32
	var wg sync.WaitGroup
	for i, cfg := range []wgdelegate.KernelConfig{{}, {NoElementwiseFusion: true}} {
		m, err := load(t, tinyChain(n, elems), wgdelegate.WithKernels(cfg))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		want := 1
		if cfg.NoElementwiseFusion {
			want = n
		}
		if got := m.MemoryStats().NumDispatches; got != want {
			t.Errorf("config %+v: %d dispatches, want %d", cfg, got, want)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				o, err := m.Execute(context.Background(), wgdelegate.Float32Tensor([]int64{elems}, x))
				if err != nil {
					t.Error(err)
					return
				}
				if outs[i], err = o[0].Float32s(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for k := range outs[0] {
		if d := math.Abs(float64(outs[0][k] - outs[1][k])); d > 1e-6*math.Max(1, math.Abs(float64(outs[1][k]))) {
			t.Fatalf("element %d: fused %v, unfused %v", k, outs[0][k], outs[1][k])
		}
	}
}

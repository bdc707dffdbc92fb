package serialization

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The fuzz targets check that no input panics, that every error is a
// *FormatError, that nothing was rescued by the decode boundary's recover
// (a recovered panic means the verifier missed something), and that what
// decodes is self-consistent.

// checkFuzzErr checks one call's result; before is recoveredPanics.Load()
// taken just before the call (fuzz inputs run one at a time per process).
func checkFuzzErr(t *testing.T, before int64, err error) {
	t.Helper()
	if n := recoveredPanics.Load() - before; n != 0 {
		t.Fatalf("decoder recovered a panic: %v", err)
	}
	var fe *FormatError
	if err != nil && !errors.As(err, &fe) {
		t.Fatalf("error %q (%T) is not a *FormatError", err, err)
	}
}

func addRealSeeds(f *testing.F, names ...string) {
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(realDir, n)); err == nil {
			f.Add(b)
		}
	}
}

// blobSeeds returns valid blobs, one per value kind, plus every rejection
// case's input, so the fuzzer starts next to each error path.
func blobSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	b, _ := validBlob(f)
	seeds = append(seeds, b)
	all, _ := buildAllKinds()
	if blob, err := all.Blob(); err == nil {
		seeds = append(seeds, blob)
	}
	for _, add := range []func(b *Builder){
		func(b *Builder) { b.Null() },
		func(b *Builder) { b.Int(1) },
		func(b *Builder) { b.Double(2) },
		func(b *Builder) { b.Bool(true) },
		func(b *Builder) { b.IntList(1, 2) },
		func(b *Builder) { b.DoubleList(1, 2) },
		func(b *Builder) { b.BoolList(true, false) },
		func(b *Builder) { b.ValueList(0) },
		func(b *Builder) { b.String("s") },
		func(b *Builder) { b.SymInt(3) },
		func(b *Builder) { b.NamedConst(Float32, []uint32{1}, f32bytes(1)) },
		func(b *Builder) { b.Op("op", b.Tensor(Int32, []uint32{2}, 0)) },
	} {
		b := NewBuilder()
		add(b)
		if blob, err := b.Blob(); err == nil {
			seeds = append(seeds, blob)
		}
	}
	for _, c := range blobRejectCases() {
		seeds = append(seeds, c.make(f))
	}
	return seeds
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range blobSeeds(f) {
		f.Add(s[:min(len(s), 64)])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		before := recoveredPanics.Load()
		h, err := ParseHeader(b)
		checkFuzzErr(t, before, err)
		if err != nil {
			return
		}
		n := uint64(len(b))
		if uint64(h.FlatbufferOffset)+uint64(h.FlatbufferSize) > n || uint64(h.BytesOffset) > n || h.BytesSize > n-uint64(h.BytesOffset) {
			t.Fatalf("accepted header %+v for %d bytes", h, n)
		}
	})
}

// reencode checks that decoding is a fixed point of encoding: encode the
// decoded graph, decode and encode again, and compare bytes (byte equality
// also copes with NaN doubles, which == would not).
func reencode(t *testing.T, g *Graph) {
	e1, err := EncodeGraph(g)
	if err != nil {
		t.Fatalf("re-encoding a decoded graph: %v", err)
	}
	g2, err := DecodeGraph(e1)
	if err != nil {
		t.Fatalf("decoding our own encoding: %v", err)
	}
	e2, err := EncodeGraph(g2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e1, e2) {
		t.Fatal("encode(decode(encode(g))) differs from encode(g)")
	}
}

func FuzzDecodeBlob(f *testing.F) {
	for _, s := range blobSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		before := recoveredPanics.Load()
		bl, err := DecodeBlob(b)
		checkFuzzErr(t, before, err)
		if err != nil {
			return
		}
		if len(bl.Constants) > 0 && !within(bl.Constants, b) {
			t.Fatal("constants are not a view of the input")
		}
		for _, v := range bl.Graph.Values {
			if v.Kind == KindTensor && v.Tensor.IsConstant() {
				if c, err := bl.ConstantBytes(v.Tensor); err == nil && len(c) > 0 && !within(c, bl.Constants) {
					t.Fatal("constant bytes outside the constant region")
				}
			}
		}
		reencode(t, bl.Graph)
	})
}

func FuzzDecodeGraph(f *testing.F) {
	for _, s := range blobSeeds(f) {
		f.Add(s[min(len(s), 32):])
	}
	f.Fuzz(func(t *testing.T, fb []byte) {
		before := recoveredPanics.Load()
		g, err := DecodeGraph(fb)
		checkFuzzErr(t, before, err)
		if err != nil {
			return
		}
		n := len(g.Values)
		for _, op := range g.Chain {
			for _, a := range op.Args {
				if a < 0 || int(a) >= n {
					t.Fatalf("accepted arg %d with %d values", a, n)
				}
			}
		}
		reencode(t, g)
	})
}

func FuzzParseProgram(f *testing.F) {
	f.Add(validPTE(f))
	if b, err := EncodePTE(PTEOptions{Delegates: []DelegateSpec{{ID: "VulkanBackend", Blob: []byte("x"), Inline: true}}}); err == nil {
		f.Add(b)
	}
	if b, err := EncodePTE(PTEOptions{ExtendedHeaderLen: 24, Delegates: []DelegateSpec{{ID: "VulkanBackend", Blob: []byte("x")}}}); err == nil {
		f.Add(b)
	}
	for _, c := range programRejectCases() {
		f.Add(c.make(f))
	}
	for _, c := range delegateCallRejectCases() {
		f.Add(c.make(f))
	}
	f.Add(planPTE(rejectPlan()))
	for _, c := range planRejectCases() {
		b, _ := c.make(f)
		f.Add(b)
	}
	addRealSeeds(f, "add_apple.pte", "module_linear_no_constant_segment.pte", "xor.pte")
	f.Fuzz(func(t *testing.T, data []byte) {
		before := recoveredPanics.Load()
		p, err := ParseProgram(data)
		checkFuzzErr(t, before, err)
		if err != nil {
			return
		}
		for _, d := range p.Delegates {
			blob, err := p.DelegateBlob(d.ID)
			if err != nil || (len(blob) > 0 && !within(blob, data)) {
				t.Fatalf("delegate %q: %v", d.ID, err)
			}
		}
		for _, k := range p.NamedData.Keys() {
			if b, _ := p.NamedData.Get(k); len(b) > 0 && !within(b, data) {
				t.Fatalf("named data %q is not a view of the input", k)
			}
		}
		delegates := map[[2]int]string{}
		for _, d := range p.Delegates {
			delegates[[2]int{d.Plan, d.Delegate}] = d.ID
		}
		for _, c := range p.DelegateCalls {
			id, ok := delegates[[2]int{c.Plan, c.Delegate}]
			if !ok {
				t.Fatalf("DelegateCall %+v names no delegate", c)
			}
			for _, a := range c.Args {
				if a.Index < 0 || a.Index >= MaxValues || len(a.Sizes) > MaxTensorDims || (a.Kind == "Tensor") != (a.Sizes != nil) {
					t.Fatalf("DelegateCall arg %+v", a)
				}
			}
			if io, err := p.DelegateIO(id); err != nil || io == nil {
				t.Fatalf("DelegateIO(%q) = %v, %v", id, io, err)
			}
		}
		checkPlans(t, p)
	})
}

// checkPlans checks that p.ExecutionPlans agree with the rest of p: one per
// plan name, each DelegateCall instruction is the next of p.DelegateCalls,
// and each KernelCall names the operator its op_index selects.
func checkPlans(t *testing.T, p *Program) {
	if len(p.ExecutionPlans) != len(p.Plans) {
		t.Fatalf("%d ExecutionPlans for %d plans", len(p.ExecutionPlans), len(p.Plans))
	}
	calls := p.DelegateCalls
	for pi := range p.ExecutionPlans {
		ep := &p.ExecutionPlans[pi]
		if ep.Name != p.Plans[pi] {
			t.Fatalf("plan %d named %q and %q", pi, ep.Name, p.Plans[pi])
		}
		for _, v := range append(append([]int32{}, ep.Inputs...), ep.Outputs...) {
			if v < 0 || v >= MaxValues {
				t.Fatalf("plan %q: input or output %d", ep.Name, v)
			}
		}
		for _, ch := range ep.Chains {
			for _, in := range ch.Instructions {
				switch in.Kind {
				case InstrDelegateCall:
					if len(calls) == 0 {
						t.Fatalf("plan %q: DelegateCall %+v missing from DelegateCalls", ep.Name, in)
					}
					c := calls[0]
					calls = calls[1:]
					if c.Plan != pi || c.Delegate != in.Delegate || len(c.Args) != len(in.Args) {
						t.Fatalf("plan %q: DelegateCall %+v, DelegateCalls has %+v", ep.Name, in, c)
					}
					for j, a := range in.Args {
						if c.Args[j].Index != int(a) {
							t.Fatalf("plan %q: DelegateCall arg %d is %d, DelegateCalls has %d", ep.Name, j, a, c.Args[j].Index)
						}
					}
				case InstrKernelCall:
					want := ""
					if in.OpIndex >= 0 && in.OpIndex < len(ep.Operators) {
						want = ep.Operators[in.OpIndex]
					}
					if in.Operator != want || in.Args != nil || in.Delegate != 0 {
						t.Fatalf("plan %q: KernelCall %+v with operators %q", ep.Name, in, ep.Operators)
					}
				default:
					if in.Delegate != 0 || in.Args != nil || in.OpIndex != 0 || in.Operator != "" {
						t.Fatalf("plan %q: %v instruction with operands %+v", ep.Name, in.Kind, in)
					}
				}
			}
		}
	}
	if len(calls) != 0 {
		t.Fatalf("%d DelegateCalls without their instruction", len(calls))
	}
}

func FuzzParseFlatTensor(f *testing.F) {
	f.Add(validPTD(f))
	for _, c := range flatTensorRejectCases() {
		f.Add(c.make(f))
	}
	addRealSeeds(f, "xor.ptd")
	f.Fuzz(func(t *testing.T, data []byte) {
		before := recoveredPanics.Load()
		m, err := ParseFlatTensor(data)
		checkFuzzErr(t, before, err)
		if err != nil {
			return
		}
		for _, k := range m.Keys() {
			if b, _ := m.Get(k); len(b) > 0 && !within(b, data) {
				t.Fatalf("named data %q is not a view of the input", k)
			}
		}
	})
}

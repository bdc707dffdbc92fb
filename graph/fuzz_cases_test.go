package graph

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops/opstest"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// caseSeed is one op-suite case as a fuzz seed: its blob and named data.
type caseSeed struct {
	name  string
	blob  []byte
	named *serialization.NamedDataMap
}

// caseSeedMaxBytes bounds a seed's blob and named data, so that a mutated
// graph stays quick to build and run.
const caseSeedMaxBytes = 256 << 10

// caseSeeds returns the first case of each op family of ops/opstest (the
// name up to its first '/'), built as the exporter writes them, that fits
// in caseSeedMaxBytes: the graphs FuzzCaseArgs mutates, with every op the
// suite covers among them.
var caseSeeds = sync.OnceValue(func() []caseSeed {
	var out []caseSeed
	seen := map[string]bool{}
	for _, c := range opstest.Cases {
		family, _, _ := strings.Cut(c.Name, "/")
		if seen[family] {
			continue
		}
		b := serialization.NewBuilder()
		c.Build(b, rand.New(rand.NewPCG(1, 2)))
		blob, err := b.Blob()
		if err != nil {
			continue
		}
		size := len(blob)
		for _, nb := range b.NamedBlobs() {
			size += len(nb.Data)
		}
		if size > caseSeedMaxBytes {
			continue
		}
		_, named, err := b.Decode()
		if err != nil {
			continue
		}
		seen[family] = true
		out = append(out, caseSeed{name: c.Name, blob: blob, named: named})
	}
	return out
})

// TestCaseSeedsLoad: every seed of FuzzCaseArgs builds as it is, so the
// fuzzer starts from graphs that reach the ops.
func TestCaseSeedsLoad(t *testing.T) {
	seeds := caseSeeds()
	t.Logf("%d case seeds", len(seeds))
	if len(seeds) < 100 {
		t.Fatalf("%d case seeds, want one per op family of the suite (over 100)", len(seeds))
	}
	dev := device(t)
	for _, s := range seeds {
		blob, err := serialization.DecodeBlob(s.blob)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		g, err := Build(context.Background(), dev, blob, Options{NamedData: s.named})
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		g.Close()
	}
}

// FuzzCaseArgs is FuzzOpArgs over the op suite's cases (caseSeeds): an op
// argument pointing at another value, a tensor's dims, dtype or mem_obj_id
// changed, in graphs of every op family, named data included. A graph
// that builds must execute; nothing may panic.
func FuzzCaseArgs(f *testing.F) {
	f.Add(uint16(0), uint8(0), uint8(0), int16(1), uint8(0), uint8(0), uint16(3), int8(5), int8(-1))
	f.Add(uint16(7), uint8(1), uint8(2), int16(3), uint8(4), uint8(1), uint16(0), int8(3), int8(0))
	f.Add(uint16(40), uint8(2), uint8(1), int16(-2), uint8(9), uint8(2), uint16(8), int8(-1), int8(2))
	seeds := caseSeeds()
	dev := device(f)
	f.Fuzz(func(t *testing.T, seed uint16, op, arg uint8, newID int16, val, dim uint8, dimVal uint16, dtype, memObj int8) {
		s := seeds[int(seed)%len(seeds)]
		mutated := mutateBlob(t, s.blob, op, arg, newID, val, dim, dimVal, dtype, memObj)
		if mutated == nil {
			return
		}
		mb, err := serialization.DecodeBlob(mutated)
		if err != nil {
			return
		}
		gr, err := Build(context.Background(), dev, mb, Options{NamedData: s.named, MemoryLimit: 64 << 20})
		if err != nil {
			if strings.Contains(err.Error(), "panicked") {
				t.Fatalf("%s: a panic instead of an error: %v", s.name, err)
			}
			return
		}
		defer gr.Close()
		if _, err := gr.Execute(context.Background(), zeroInputs(gr)); err != nil {
			t.Fatalf("%s: built graph failed to execute: %v", s.name, err)
		}
	})
}

// FuzzCaseShapes runs the op suite's cases (caseSeeds) as exported with
// one input smaller than its bound along one dim (a dynamic shape, down
// to 0), zero-filled: Execute re-records the ops for the live shapes, and
// must give a result or an error, never a panic; a second Execute at the
// declared shapes must succeed afterwards.
func FuzzCaseShapes(f *testing.F) {
	f.Add(uint16(0), uint8(0), uint8(0), uint16(1))
	f.Add(uint16(12), uint8(1), uint8(1), uint16(0))
	f.Add(uint16(77), uint8(0), uint8(2), uint16(3))
	seeds := caseSeeds()
	dev := device(f)
	f.Fuzz(func(t *testing.T, seed uint16, input, dim uint8, size uint16) {
		s := seeds[int(seed)%len(seeds)]
		blob, err := serialization.DecodeBlob(s.blob)
		if err != nil {
			t.Fatal(err)
		}
		g, err := Build(context.Background(), dev, blob, Options{NamedData: s.named})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		defer g.Close()
		in := zeroInputs(g)
		if len(in) == 0 {
			return
		}
		x := &in[int(input)%len(in)]
		if len(x.Shape) == 0 {
			return
		}
		d := int(dim) % len(x.Shape)
		x.Shape = slices.Clone(x.Shape)
		x.Shape[d] = int64(size) % (x.Shape[d] + 1)
		x.Data = x.Data[:Numel(x.Shape)*int64(x.DType.Size())]
		if _, err := g.Execute(context.Background(), in); err != nil && strings.Contains(err.Error(), "panicked") {
			t.Fatalf("%s, input %d %v: a panic instead of an error: %v", s.name, int(input)%len(in), x.Shape, err)
		}
		if _, err := g.Execute(context.Background(), zeroInputs(g)); err != nil {
			t.Fatalf("%s: at the declared shapes after input %d %v: %v", s.name, int(input)%len(in), x.Shape, err)
		}
	})
}

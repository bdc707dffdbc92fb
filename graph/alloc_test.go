package graph

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/memplan"
)

// ExecuteAllocBound is the written bound on heap allocations per steady-state
// Execute of a static-shape graph with one output, beyond the returned
// outputs themselves (the []Tensor, each output's shape and data: 3
// allocations per output).
const ExecuteAllocBound = 0

// loadFirstSeed loads the first of the seed graphs, closed when tb ends.
func loadFirstSeed(tb testing.TB) *WebGPUGraph {
	tb.Helper()
	g, err := Load(context.Background(), device(tb), seedGraphs(tb)[0], Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() })
	return g
}

// TestExecuteAllocs: once a graph is loaded and has run once, Execute makes
// no heap allocation beyond its outputs.
func TestExecuteAllocs(t *testing.T) {
	ctx := context.Background()
	g := loadFirstSeed(t)
	in := randomInputs(g, 1)
	if _, err := g.Execute(ctx, in); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := g.Execute(ctx, in); err != nil {
			t.Fatal(err)
		}
	})
	outputs := 1 + 2*g.NumOutputs()
	t.Logf("%.1f allocations per Execute (%d of them the outputs)", allocs, outputs)
	if allocs > float64(outputs+ExecuteAllocBound) {
		t.Errorf("%.1f allocations per Execute, bound %d + %d for the outputs", allocs, ExecuteAllocBound, outputs)
	}
}

func BenchmarkExecuteSmall(b *testing.B) {
	ctx := context.Background()
	g := loadFirstSeed(b)
	in := randomInputs(g, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Execute(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAllocSizeMatchesDevice: the plan's sizes (inspect, the memory limit)
// are what the device allocates.
func TestAllocSizeMatchesDevice(t *testing.T) {
	for n := int64(0); n < 200; n++ {
		if a, d := memplan.AllocSize(n), gpu.AlignedSize(uint64(n)); uint64(a) != d {
			t.Fatalf("memplan.AllocSize(%d) = %d, gpu.AlignedSize = %d", n, a, d)
		}
	}
}

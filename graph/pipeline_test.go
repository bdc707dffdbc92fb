package graph

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// TestReloadCreatesNoPipelines: a second load of the same graph in one
// process finds every pipeline in the device's cache.
func TestReloadCreatesNoPipelines(t *testing.T) {
	ctx := context.Background()
	dev := device(t)
	blob := seedGraphs(t)[1]
	g1, err := Load(ctx, dev, blob, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g1.Close()
	before := dev.PipelineStats()
	g2, err := Load(ctx, dev, blob, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	after := dev.PipelineStats()
	if after.Created != before.Created {
		t.Errorf("reload created %d pipelines", after.Created-before.Created)
	}
	if after.Hits-before.Hits < int64(g2.MemoryStats().NumDispatches) {
		t.Errorf("%d cache hits for %d dispatches", after.Hits-before.Hits, g2.MemoryStats().NumDispatches)
	}
}

// TestSameDispatchesEveryCall: a static-shape graph is recorded once; no
// Execute re-records it, and every call replays the same dispatches.
func TestSameDispatchesEveryCall(t *testing.T) {
	ctx := context.Background()
	g, err := Load(ctx, device(t), seedGraphs(t)[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	n := g.MemoryStats().NumDispatches
	for i := 0; i < 5; i++ {
		if _, err := g.Execute(ctx, randomInputs(g, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if g.Rerecords() != 0 || g.MemoryStats().NumDispatches != n {
		t.Errorf("re-recorded %d times; %d dispatches, was %d", g.Rerecords(), g.MemoryStats().NumDispatches, n)
	}
}

// TestWarmUpRunsEachPipelineOnce: the load-time warm-up dispatches every
// distinct pipeline of the graph exactly once, on one workgroup, and the
// first Execute after it still computes the whole graph.
func TestWarmUpRunsEachPipelineOnce(t *testing.T) {
	ctx := context.Background()
	for i, blob := range seedGraphs(t) {
		g, err := Load(ctx, device(t), blob, Options{})
		if err != nil {
			t.Fatal(err)
		}
		pipes := map[*gpu.Pipeline]int{}
		for _, r := range g.records {
			pipes[r.Pipeline]++
		}
		warm := g.warmUpDispatches()
		if len(warm) != len(pipes) {
			t.Errorf("graph %d: %d warm-up dispatches for %d pipelines", i, len(warm), len(pipes))
		}
		for _, d := range warm {
			if d.X != 1 || d.Y != 1 || d.Z != 1 {
				t.Errorf("graph %d: warm-up dispatch of %d×%d×%d workgroups", i, d.X, d.Y, d.Z)
			}
			pipes[d.Pipeline] = -1
		}
		for p, n := range pipes {
			if n != -1 {
				t.Errorf("graph %d: pipeline %p not warmed up", i, p)
			}
		}
		g.Close()
	}
}

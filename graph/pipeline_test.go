package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
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
	g := loadFirstSeed(t)
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
// distinct pipeline of the graph exactly once, on one workgroup, either
// early (as soon as it was compiled) or in the final warm-up, and the first
// Execute after it still computes the whole graph.
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
		for p := range g.warmed {
			if pipes[p] == 0 {
				t.Errorf("graph %d: warmed-up pipeline %p is not the graph's", i, p)
			}
			pipes[p] = -1
		}
		for _, d := range g.warmUpDispatches() {
			if d.X != 1 || d.Y != 1 || d.Z != 1 {
				t.Errorf("graph %d: warm-up dispatch of %d×%d×%d workgroups", i, d.X, d.Y, d.Z)
			}
			if pipes[d.Pipeline] == -1 {
				t.Errorf("graph %d: pipeline %p warmed up twice", i, d.Pipeline)
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

// test.accumulate [state, out]: state += 1 in place, out = state. With
// state an et_vk.prepack output this is state kept across Executes, like a
// KV cache.
var testAccumulateKernel = &shaders.Kernel{Name: "test accumulate", Entry: "main", WorkgroupSize: 64,
	Layout: shaders.Layout(0, 2, true), Source: `
@group(0) @binding(0) var<storage, read_write> s: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct P { n: u32, a: u32, b: u32, c: u32 }
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < p.n) { s[g.x] = s[g.x] + 1.0; y[g.x] = s[g.x]; }
}`}

func init() {
	ops.Register("test.accumulate", func(b ops.Builder, args []int32) error {
		st, err := b.Tensor(args[0])
		if err != nil {
			return err
		}
		out, err := ops.Output(b, 1, args[1], st.DType, st.Dims)
		if err != nil {
			return err
		}
		return testDispatch(b, testAccumulateKernel, nil, []int32{st.ID, out.ID}, out.Numel)
	})
}

// TestEarlyWarmUp: with every background compile waited for (prefetchSync),
// each pipeline is warmed up at its first dispatch, the final warm-up has
// nothing left, and the first Execute computes the whole graph. Early
// warm-ups bind scratch buffers: a dispatch that writes state kept across
// Executes is warmed up too, and the state still starts from the constant
// at the first Execute.
func TestEarlyWarmUp(t *testing.T) {
	prefetchSync = true
	defer func() { prefetchSync = false }()
	ctx := context.Background()
	for i, blob := range seedGraphs(t) {
		g, err := Load(ctx, device(t), blob, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cold, err := Load(ctx, device(t), blob, Options{SkipWarmup: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(g.warmed) == 0 || len(g.warmUpDispatches()) != 0 {
			t.Errorf("graph %d: %d pipelines warmed early, %d left for the final warm-up", i, len(g.warmed), len(g.warmUpDispatches()))
		}
		if len(cold.warmed) != 0 {
			t.Errorf("graph %d: SkipWarmup load warmed %d pipelines", i, len(cold.warmed))
		}
		in := randomInputs(g, uint64(i))
		a, err := g.Execute(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cold.Execute(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for k := range a {
			if !bytes.Equal(a[k].Data, b[k].Data) {
				t.Errorf("graph %d: output %d differs from a load without warm-up", i, k)
			}
		}
		g.Close()
		cold.Close()
	}

	b := serialization.NewBuilder()
	f := serialization.Float32
	state := make([]byte, 4*100)
	for i := 0; i < 100; i++ {
		binary.LittleEndian.PutUint32(state[4*i:], math.Float32bits(float32(i)))
	}
	x := b.Tensor(f, []uint32{100}, -1)
	c, _ := b.NamedConst(f, []uint32{100}, state)
	s := b.Tensor(f, []uint32{100}, -1)
	b.Op("et_vk.prepack.default", c, s)
	y := b.Tensor(f, []uint32{100}, -1)
	b.Op("test.accumulate", s, y)
	z := b.Tensor(f, []uint32{100}, -1)
	b.Op("aten.add.Tensor", y, x, b.Double(1), z)
	b.Inputs(x)
	b.Outputs(z)
	g := loadBuilt(t, b, Options{})
	defer g.Close()
	if len(g.warmed) != 2 || len(g.warmUpDispatches()) != 0 {
		t.Errorf("%d pipelines warmed early (%d left), want both", len(g.warmed), len(g.warmUpDispatches()))
	}
	xin := Tensor{DType: f, Shape: []int64{100}, Data: make([]byte, 400)}
	for call := 1; call <= 3; call++ {
		res, err := g.Execute(ctx, []Tensor{xin})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := res[0].Float32s()
		for i, v := range got {
			if want := float32(i + call); v != want {
				t.Fatalf("call %d: z[%d] = %v, want %v", call, i, v, want)
			}
		}
	}
}

package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/numguard"
	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// guardConfigs are the kernel choices TestNumericsGuard builds every case
// under, so that the variants only a choice reaches (the tiled and GEMV
// matmuls at any M, unfused chains, unpacked convolutions, the tiled
// quantized linear, packed weights, half KV caches, the gpu family's
// kernels) are checked too.
var guardConfigs = []ops.Config{
	{Family: ops.FamilyCPU},
	{Matmul: ops.MatmulScalar, NoElementwiseFusion: true, NoConvPacking: true, NoQGEMV: true,
		PackLinear: true, NoHalfWeights: true, HalfKVCache: true},
	{Matmul: ops.MatmulGEMV},
	{Matmul: ops.MatmulNoGEMV, GEMVCols: 2},
	// The gpu family's kernels (gemv_gpu.wgsl, matmul_gpu.wgsl), the
	// GEMV at every M, and on float32 weights.
	{Family: ops.FamilyGPU},
	{Family: ops.FamilyGPU, Matmul: ops.MatmulGEMV, NoHalfWeights: true},
}

// newGuard returns the numerics guard over the shared helpers as
// shaders renders them, with numguard's allow-list.
func newGuard() (*numguard.Guard, error) {
	srcs, err := shaders.NumericHelperSources()
	if err != nil {
		return nil, err
	}
	helpers, err := numguard.HelperFuncs(srcs)
	if err != nil {
		return nil, err
	}
	return numguard.New(helpers, numguard.Allowed), nil
}

// checkRendered runs g over every kernel rendered so far in this process
// and describes the findings (and sources it cannot parse), one a line.
func checkRendered(g *numguard.Guard) []string {
	var bad []string
	for _, k := range shaders.Rendered() {
		fs, err := g.Check(k.Name, k.Source)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		for _, f := range fs {
			bad = append(bad, f.String())
		}
	}
	return bad
}

// TestNumericsGuard builds the graph of every conformance case (no
// execution) under each of guardConfigs and runs the numerics guard
// (internal/numguard) over every kernel those builds rendered: no bare
// float min/max/clamp, division or sin/cos/tan outside common.tmpl's
// helpers and numguard.Allowed, and no allow-list entry left unused.
//
// Mutation-checked: a bare max back in fused.wgsl's chain, a bare float
// division back in binary.wgsl's div, and a bare sin back in unary.wgsl
// each fail it (see the commit message).
func TestNumericsGuard(t *testing.T) {
	if testing.Short() {
		// CI's -short run is the race detector's: the guard is sequential
		// parsing, and the full run (the README's command) checks it.
		t.Skip("the numerics guard runs without -short")
	}
	t.Parallel()
	dev := testDevice(t)
	// kernels[family][case]: the kernels a case records under the plain
	// cpu and gpu configs, to check that the family changes only the
	// family cases' kernels (which is why the gpu family repeats only
	// those: runFamilies).
	kernels := map[ops.Family]map[string]string{ops.FamilyCPU: {}, ops.FamilyGPU: {}}
	// fam: the cases the gpu family repeats (FamilyCases: a family op in
	// the graph), with the Heavy ones it leaves to the long sweeps.
	fam := map[string]bool{}
	// Each case is built (its graph and random inputs) and encoded once,
	// then loaded under every config.
	start := time.Now()
	for _, c := range Cases {
		b := serialization.NewBuilder()
		c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
		fam[c.Name] = holdsFamilyOp(b.Graph()) || c.Heavy
		memplan.PlanDedicated(b.Graph())
		raw, named := mustBlob(b), b.NamedBlobs()
		for _, cfg := range guardConfigs {
			blob, nd, err := decode(raw, named)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			g, err := graph.Build(context.Background(), dev, blob, graph.Options{NamedData: nd, Kernels: cfg, SkipWarmup: true})
			if err != nil {
				// The cases' builds are checked by TestConformance; a
				// choice a case rejects renders nothing to check.
				continue
			}
			if cfg == (ops.Config{Family: cfg.Family}) {
				var ks []string
				for _, d := range g.Dispatches() {
					ks = append(ks, d.Kernel)
				}
				kernels[cfg.Family][c.Name] = strings.Join(ks, "\n")
			}
			g.Close()
		}
	}
	t.Logf("%d cases under %d configs: %v, %d kernels", len(Cases), len(guardConfigs), time.Since(start), len(shaders.Rendered()))
	same := 0
	for name, k := range kernels[ops.FamilyCPU] {
		if fam[name] {
			continue
		}
		if k2, ok := kernels[ops.FamilyGPU][name]; !ok || k2 != k {
			t.Errorf("%s is no family case, but its kernels differ under the gpu family:\n%s\nversus\n%s", name, k, k2)
		}
		same++
	}
	if same < 500 {
		t.Errorf("only %d cases compared across families", same)
	}
	// A decoder's device head (graph.Head: argmax.wgsl, topk.wgsl) is no
	// op; any graph with float32 logits renders its kernels.
	hb := serialization.NewBuilder()
	x := hb.Tensor(serialization.Float32, []uint32{1, 8}, -1)
	y := hb.Tensor(serialization.Float32, []uint32{1, 8}, -1)
	hb.Op("aten.clone.default", x, hb.Null(), y)
	hb.Inputs(x)
	hb.Outputs(y)
	hg, _, err := Load(dev, hb, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hg.NewHead(graph.HeadOptions{Logits: 0, Token: -1}); err != nil {
		t.Fatal(err)
	}
	hg.Close()
	g, err := newGuard()
	if err != nil {
		t.Fatal(err)
	}
	bad := checkRendered(g)
	for _, b := range bad {
		t.Error(b)
	}
	for _, a := range g.Unused() {
		t.Errorf("allow-list entry no kernel needs (remove it): %+v", a)
	}
	if len(shaders.Rendered()) < 500 {
		t.Errorf("only %d kernels rendered: the builds did not reach the kernel variants", len(shaders.Rendered()))
	}
}

// TestMain runs the suite, then the numerics guard over every kernel the
// tests that ran rendered (a -run subset checks its subset): a kernel
// variant only some test reaches is checked too. It closes the device the
// tests shared (testDevice).
func TestMain(m *testing.M) {
	code := m.Run()
	if err := closeTestDevice(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the test device:", err)
		code = 1
	}
	if code == 0 {
		g, err := newGuard()
		if err != nil {
			fmt.Fprintln(os.Stderr, "numerics guard:", err)
			os.Exit(1)
		}
		if bad := checkRendered(g); len(bad) > 0 {
			fmt.Fprintf(os.Stderr, "numerics guard: %d bare float operations in the rendered kernels:\n%s\n",
				len(bad), strings.Join(bad, "\n"))
			code = 1
		}
	}
	os.Exit(code)
}

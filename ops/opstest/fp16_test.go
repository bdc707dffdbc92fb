package opstest

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestConformanceFP16 runs the force_fp16 cases (FP16Cases) on the device
// against the reference, under both memory plans like every case, once per
// kernel family as TestConformance does (the gpu family the cases of the
// linear family's ops, every case in the long sweeps).
func TestConformanceFP16(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	cases := FP16Cases()
	if len(cases) < 80 {
		t.Fatalf("only %d fp16 cases: a family pattern no longer matches", len(cases))
	}
	runFamilies(t, dev, ops.Config{}, cases)
}

// runFamilies runs cases with kernel choices cfg under the cpu family
// (subtests cpu/...) and under the gpu family (gpu/...), the latter only
// the cases of the linear family's ops (FamilyCases): the family decides
// no other op's kernels, so the others would run the same kernels twice
// (TestNumericsGuard checks that every other case records the same
// kernels under both families). On a CPU adapter outside the long sweeps
// a family case runs one plan in each family (coverFamilies).
func runFamilies(t *testing.T, dev *gpu.Device, cfg ops.Config, cases []Case) {
	cpuCases, gpuCases := coverFamilies(GPU{Dev: dev}, cases)
	t.Run("cpu", func(t *testing.T) {
		c := cfg
		c.Family = ops.FamilyCPU
		Run(t, GPU{Dev: dev, Kernels: c}, cpuCases)
	})
	t.Run("gpu", func(t *testing.T) {
		c := cfg
		c.Family = ops.FamilyGPU
		Run(t, GPU{Dev: dev, Kernels: c}, gpuCases)
	})
}

// TestConformanceFP16NoHalfWeights runs the force_fp16 cases with linears
// and matmuls under ops.Config.NoHalfWeights: FLOAT16 linear weights read
// as their float32 copy by the float32 kernels.
func TestConformanceFP16NoHalfWeights(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	var cases []Case
	for _, c := range FP16Cases() {
		if strings.Contains(c.Name, "linear") || strings.Contains(c.Name, "/mm/") || strings.Contains(c.Name, "addmm") {
			cases = append(cases, c)
		}
	}
	if len(cases) < 20 {
		t.Fatalf("only %d cases", len(cases))
	}
	runFamilies(t, dev, ops.Config{NoHalfWeights: true}, cases)
}

// TestHalfWeightPath: a linear on a FLOAT16 weight with K%8 == 0, at any
// M, reads it packed as halves (2 bytes a weight, in PackedWeightBytes)
// and its float32 copy gets no buffer (DeferredConstantBytes); with
// Config.NoHalfWeights, or K%8 != 0, nothing is packed or deferred. The
// results are checked by TestConformanceFP16 and
// TestConformanceFP16NoHalfWeights.
func TestHalfWeightPath(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	for _, c := range []struct {
		in       []int64
		n        int64
		cfg      ops.Config
		packed   int64
		deferred int64 // the float32 copy's bytes, when it has no buffer
	}{
		{[]int64{1, 64}, 33, ops.Config{}, 33 * 64 * 2, 33 * 64 * 4},
		{[]int64{64, 64}, 32, ops.Config{}, 32 * 64 * 2, 32 * 64 * 4},
		{[]int64{2, 3, 8}, 5, ops.Config{}, 5 * 8 * 2, 5 * 8 * 4},
		{[]int64{1, 64}, 33, ops.Config{NoHalfWeights: true}, 0, 0},
		{[]int64{1, 60}, 33, ops.Config{}, 0, 0},
	} {
		src := linearCase(c.in, c.n, false, weightNamed)
		b := serialization.NewBuilder()
		ForceFP16(src, serialization.Float32).Build(b, rand.New(rand.NewPCG(1, 2)))
		g, _, err := Load(dev, b, graph.Options{Kernels: c.cfg})
		if err != nil {
			t.Fatal(err)
		}
		st := g.MemoryStats()
		if st.PackedWeightBytes != c.packed {
			t.Errorf("%v·[%d, %d] %+v: %d packed weight bytes, want %d", c.in, c.n, c.in[len(c.in)-1], c.cfg, st.PackedWeightBytes, c.packed)
		}
		if st.DeferredConstantBytes != c.deferred {
			t.Errorf("%v·[%d, %d] %+v: %d deferred constant bytes, want %d", c.in, c.n, c.in[len(c.in)-1], c.cfg, st.DeferredConstantBytes, c.deferred)
		}
		g.Close()
	}
}

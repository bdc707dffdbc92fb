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

// buildMatmulCase loads case c (seed 1) as a GPU graph whose load and
// dispatches a test inspects: without the warm-up run, which dispatches
// each kernel once (and so has lavapipe compile it) for an Execute that
// does not follow.
func buildMatmulCase(t *testing.T, dev *gpu.Device, c Case, cfg ops.Config) *graph.WebGPUGraph {
	t.Helper()
	b := serialization.NewBuilder()
	c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
	g, _, err := Load(dev, b, graph.Options{Kernels: cfg, SkipWarmup: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestMatmulEpilogueFusion checks that the epilogue cases fuse exactly when
// they should, in both kernel families: in the fused form no dispatch
// belongs to the activation, in the unfused forms one does. (The
// conformance suite checks the values.)
func TestMatmulEpilogueFusion(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	n := 0
	for _, c := range Cases {
		if !strings.Contains(c.Name, "/epilogue/") {
			continue
		}
		n++
		for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
			t.Run(fam.String()+"/"+c.Name, func(t *testing.T) { testEpilogueFusion(t, dev, c, fam) })
		}
	}
	if n == 0 {
		t.Fatal("no epilogue cases")
	}
}

func testEpilogueFusion(t *testing.T, dev *gpu.Device, c Case, fam ops.Family) {
	g := buildMatmulCase(t, dev, c, ops.Config{Family: fam})
	defer g.Close()
	var matmuls, acts int
	for _, d := range g.Dispatches() {
		switch d.OpName {
		case "aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.matmul.default", "aten.linear.default", "et_vk.linear_q4gsw.default", "et_vk.linear_dq8ca_q4gsw.default":
			matmuls++
		case "aten.neg.default", "aten.permute_copy.default", "torchao.choose_qparams_affine.default":
		default:
			acts++
		}
	}
	if matmuls == 0 {
		t.Fatal("no matmul dispatch")
	}
	fused := strings.Contains(c.Name, "/fused/") || strings.Contains(c.Name, "/mlp/")
	if fused && acts != 0 {
		t.Errorf("fused form records %d activation dispatches", acts)
	}
	if !fused && acts == 0 {
		t.Error("unfused form records no activation dispatch")
	}
}

// TestLinearGEMVRowBlocks runs the linear cases of more than 16 rows with
// the GEMV kernels forced (ops.MatmulGEMV), in both families: several row
// blocks along the grid (the cpu kernel's y, the gpu kernel's z), which
// the default choice never records.
func TestLinearGEMVRowBlocks(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	var cases []Case
	for _, c := range Cases {
		tiled := strings.HasSuffix(c.Name, "/vec4") || strings.HasSuffix(c.Name, "/scalar")
		if strings.HasPrefix(c.Name, "linear/") && tiled && !strings.HasPrefix(c.Name, "linear/edge/") {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no linear case of more than 16 rows")
	}
	for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
		t.Run(fam.String(), func(t *testing.T) {
			Run(t, GPU{Dev: dev, Kernels: ops.Config{Family: fam, Matmul: ops.MatmulGEMV}}, cases)
		})
	}
}

// TestLinearPacked runs the linear cases with linear weight packing on
// (ops.Config.PackLinear, a choice of the cpu family's tiled kernel): a
// constant weight is transposed on the device into the [K, N] layout of
// the mm kernel, and the results must still match the reference. Cases
// whose weight is a constant must have packed it.
func TestLinearPacked(t *testing.T) {
	t.Parallel()
	cfg := ops.Config{Family: ops.FamilyCPU, PackLinear: true}
	dev := testDevice(t)
	var cases []Case
	for _, c := range Cases {
		if strings.HasPrefix(c.Name, "linear/") && !strings.Contains(c.Name, "/gemv") {
			cases = append(cases, c)
		}
	}
	Run(t, GPU{Dev: dev, Kernels: cfg}, cases)
	for _, c := range cases {
		constant := strings.Contains(c.Name, "/named/") || strings.Contains(c.Name, "/inline/") || strings.Contains(c.Name, "/prepack/")
		if !constant {
			continue
		}
		g := buildMatmulCase(t, dev, c, cfg)
		if st := g.PackedCacheStats(); st.Misses+st.Hits == 0 {
			t.Errorf("%s: weight not packed", c.Name)
		}
		g.Close()
	}
}

package opstest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
)

// TestQuantLinearKernelChoice checks that the quantized epilogue cases run
// the kernel their name says in the cpu family (qgemv: the one-row kernel,
// qlinear: the tiled one), so the conformance suite covers both, and that
// ops.Config.NoQGEMV moves every one-row case to the tiled kernel; in the
// gpu family those of at most 16 rows with K a multiple of 32 (the groups
// are 32 or 64) run gemv_gpu.wgsl, the others (and all under NoQGEMV)
// matmul_gpu.wgsl's tiled "q" form; those of at most 8 rows with K a
// multiple of 8 run gemv_quant.wgsl (TestGPUKernelChoice has the rest).
func TestQuantLinearKernelChoice(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	n := 0
	for _, c := range Cases {
		quant := strings.HasPrefix(c.Name, "linear_q4gsw/epilogue/") || strings.HasPrefix(c.Name, "linear_dq8ca_q4gsw/epilogue/")
		if !quant {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			for _, cfg := range []ops.Config{{Family: ops.FamilyCPU}, {Family: ops.FamilyCPU, NoQGEMV: true},
				{Family: ops.FamilyGPU}, {Family: ops.FamilyGPU, NoQGEMV: true}} {
				want := "qlinear.wgsl"
				switch {
				case cfg.Family == ops.FamilyGPU && cfg.NoQGEMV:
					want = "matmul_gpu.wgsl"
				case cfg.NoQGEMV:
				case cfg.Family == ops.FamilyGPU:
					want = "matmul_gpu.wgsl"
					var m, k int
					if _, err := fmt.Sscanf(c.Name[strings.LastIndex(c.Name, "/M"):], "/M%d_K%d", &m, &k); err != nil {
						t.Fatalf("no M and K in the name: %v", err)
					}
					switch {
					case m <= 8 && k%8 == 0: // the weight-word GEMV (linear_gpu_quant.go)
						want = "gemv_quant.wgsl"
					case m <= 16 && k%32 == 0:
						want = "gemv_gpu.wgsl"
					}
				case strings.HasSuffix(c.Name, "/qgemv"):
					want = "qgemv.wgsl"
				}
				g := buildMatmulCase(t, dev, c, cfg)
				found := false
				for _, d := range g.Dispatches() {
					if strings.Contains(d.OpName, "linear") {
						found = true
						if !strings.HasPrefix(d.Kernel, want) {
							t.Errorf("%v, NoQGEMV %v: %s runs %.40s..., want %s", cfg.Family, cfg.NoQGEMV, d.OpName, d.Kernel, want)
						}
					}
				}
				g.Close()
				if !found {
					t.Error("no quantized linear dispatch")
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no quantized epilogue cases")
	}
}

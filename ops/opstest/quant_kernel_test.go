package opstest

import (
	"context"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
)

// TestQuantLinearKernelChoice checks that the quantized epilogue cases run
// the kernel their name says (qgemv: the one-row kernel, qlinear: the tiled
// one), so the conformance suite covers both, and that ops.Config.NoQGEMV
// moves every one-row case to the tiled kernel.
func TestQuantLinearKernelChoice(t *testing.T) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	n := 0
	for _, c := range Cases {
		quant := strings.HasPrefix(c.Name, "linear_q4gsw/epilogue/") || strings.HasPrefix(c.Name, "linear_dq8ca_q4gsw/epilogue/")
		if !quant {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			for _, cfg := range []ops.Config{{}, {NoQGEMV: true}} {
				want := "qlinear.wgsl"
				if strings.HasSuffix(c.Name, "/qgemv") && !cfg.NoQGEMV {
					want = "qgemv.wgsl"
				}
				g := buildMatmulCase(t, dev, c, cfg)
				found := false
				for _, d := range g.Dispatches() {
					if strings.Contains(d.OpName, "linear") {
						found = true
						if !strings.HasPrefix(d.Kernel, want) {
							t.Errorf("NoQGEMV %v: %s runs %.40s..., want %s", cfg.NoQGEMV, d.OpName, d.Kernel, want)
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

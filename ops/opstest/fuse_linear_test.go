package opstest

import (
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
)

// TestLinearGroupFusion checks, in both kernel families, which
// fuse_linear/ cases record the fused GEMVs (the dispatch counts of
// fuseLinearDispatches; 0: left unfused, one dispatch per op), that with
// NoElementwiseFusion every op records one, and that both forms match the
// reference under both memory plans.
func TestLinearGroupFusion(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	n := 0
	for _, c := range Cases {
		if !strings.HasPrefix(c.Name, "fuse_linear/") {
			continue
		}
		n++
		want, ok := fuseLinearDispatches[c.Name]
		if !ok {
			t.Errorf("%s: no expected dispatch count", c.Name)
			continue
		}
		for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
			t.Run(fam.String()+"/"+c.Name, func(t *testing.T) {
				fused := ops.Config{Family: fam, NoViewAliasing: true}
				unfused := ops.Config{Family: fam, NoViewAliasing: true, NoElementwiseFusion: true}
				for _, exporter := range []bool{false, true} {
					g, _, nops := buildCase(t, dev, c, fused, exporter)
					got := len(g.Dispatches())
					g.Close()
					w := want
					if w8, ok := fuseLinearAt8[c.Name]; ok && dev.Limits().MaxStorageBuffersPerShaderStage < 11 {
						w = w8
					}
					if w == 0 {
						w = nops
					}
					if got != w {
						t.Errorf("fused (exporter plan %v): %d dispatches, want %d", exporter, got, w)
					}
					g, _, _ = buildCase(t, dev, c, unfused, exporter)
					got = len(g.Dispatches())
					g.Close()
					if got != nops {
						t.Errorf("unfused (exporter plan %v): %d dispatches, want one per op (%d)", exporter, got, nops)
					}
				}
				for _, cfg := range []ops.Config{fused, unfused} {
					for seed := uint64(1); seed <= 2; seed++ {
						if err := RunCase(GPU{Dev: dev, Kernels: cfg}, c, seed); err != nil {
							t.Errorf("fusion off %v, seed %d: %v", cfg.NoElementwiseFusion, seed, err)
						}
					}
				}
			})
		}
	}
	if n != len(fuseLinearDispatches) {
		t.Errorf("%d fuse_linear cases, %d expected counts", n, len(fuseLinearDispatches))
	}
}

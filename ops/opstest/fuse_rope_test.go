package opstest

import (
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
)

// TestRopeCacheFusion checks that each fuse_rope/ case saves the dispatches
// fuseRopeSaved says (the cache update joins the rope's dispatch, or
// nothing changes), under both memory plans, and that fused and unfused
// (NoElementwiseFusion) both match the reference, the caches included.
func TestRopeCacheFusion(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	n := 0
	for _, c := range Cases {
		if !strings.HasPrefix(c.Name, "fuse_rope/") {
			continue
		}
		n++
		saved, ok := fuseRopeSaved[c.Name]
		if !ok {
			t.Errorf("%s: no expected saving", c.Name)
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			fused := ops.Config{NoViewAliasing: true}
			unfused := ops.Config{NoViewAliasing: true, NoElementwiseFusion: true}
			for _, exporter := range []bool{false, true} {
				g, _, _ := buildCase(t, dev, c, fused, exporter)
				nf := len(g.Dispatches())
				g.Close()
				g, _, _ = buildCase(t, dev, c, unfused, exporter)
				nu := len(g.Dispatches())
				g.Close()
				if nu-nf != saved {
					t.Errorf("exporter plan %v: %d dispatches fused, %d unfused: saved %d, want %d", exporter, nf, nu, nu-nf, saved)
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
	if n != len(fuseRopeSaved) {
		t.Errorf("%d fuse_rope cases, %d expected savings", n, len(fuseRopeSaved))
	}
}

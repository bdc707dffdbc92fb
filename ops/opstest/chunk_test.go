package opstest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/ops"
)

// TestConformanceChunked runs ChunkCases under their lowered binding
// limits, in both kernel families, against the reference, and checks that
// the load held the weights in as many chunks as the case says (so that a
// case cannot pass on the unchunked path). On a CPU adapter outside the
// long sweeps a case runs one memory plan in each family, the other plan
// in the other (cases alternate which), as coverFamilies does for the
// family cases.
func TestConformanceChunked(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	onePlan := GPU{Dev: dev}.CPUAdapter() && !sweeping()
	for f, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
		for i, c := range ChunkCases {
			if onePlan {
				c.only = []Plan{PlanDedicated, PlanExporter}[(i+f)%2]
			}
			t.Run(fmt.Sprintf("%v/%s", fam, c.Name), func(t *testing.T) {
				be := GPU{Dev: dev, Kernels: ops.Config{Family: fam}, MaxBindingSize: c.Limit,
					Inspect: func(g *graph.WebGPUGraph) error {
						s := g.MemoryStats()
						if s.NumChunkedWeights == 0 || s.NumWeightChunks != c.Chunks {
							return fmt.Errorf("%d chunked weights in %d chunks, want %d chunks", s.NumChunkedWeights, s.NumWeightChunks, c.Chunks)
						}
						return nil
					}}
				if err := RunCase(be, c.Case, 1); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestChunkedUnderLimit: the chunk cases under the device's own limits
// hold nothing in chunks (the unchunked path, as before).
func TestChunkedUnderLimit(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	for _, c := range ChunkCases[:3] {
		be := GPU{Dev: dev, Inspect: func(g *graph.WebGPUGraph) error {
			if s := g.MemoryStats(); s.NumChunkedWeights != 0 || s.NumWeightChunks != 0 || s.ChunkBytes != 0 {
				return fmt.Errorf("chunks under the device's limits: %+v", s)
			}
			return nil
		}}
		if err := RunCase(be, c.Case, 1); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
}

var _ = errors.Is

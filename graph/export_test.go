package graph

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// Hooks for the external tests (package graph_test), which may import
// packages that import graph (internal/models).

// OpenTestDevice returns the process-wide test device.
func OpenTestDevice(t testing.TB) *gpu.Device { return device(t) }

// ForceRerecord makes g's next Execute re-record every op, as new input
// shapes would, instead of refreshing.
func ForceRerecord(g *WebGPUGraph) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stale = true
}

// Prepare brings g's recording up to date for inputs as Execute does (a
// full re-record when force), without running anything on the device.
func Prepare(ctx context.Context, g *WebGPUGraph, inputs []Tensor, force bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stale = g.stale || force
	return g.prepare(ctx, inputs)
}

package graph

import (
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

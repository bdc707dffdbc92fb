package graph

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Hooks for the external tests (package graph_test), which may import
// packages that import graph (internal/models).

// OpenTestDevice returns the process-wide test device.
func OpenTestDevice(t testing.TB) *gpu.Device { return device(t) }

// BuiltBlob returns what b describes: the blob and its named data.
func BuiltBlob(t testing.TB, b *serialization.Builder) ([]byte, *serialization.NamedDataMap) {
	t.Helper()
	blob, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	named := serialization.NewNamedDataMap()
	for _, nb := range b.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			t.Fatal(err)
		}
	}
	return blob, named
}

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

// HostStep does the host's part of a fed Head step (its token input 0
// taken from the device) before the step is encoded: the inputs checked
// and uploaded, the recording brought up to date (a refresh, a position
// followed or a re-record), the position written if the device will hold
// another; then it counts the position as advanced by the step's tokens,
// as the head's argmax would. Nothing runs on the device: it times what
// the host does per step.
func HostStep(ctx context.Context, g *WebGPUGraph, inputs []Tensor) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.upload(ctx, inputs, 0); err != nil {
		return err
	}
	if err := g.syncPosition(); err != nil {
		return err
	}
	if g.devPos != nil {
		g.positionAdvanced(g.tensors[g.inputs[0]].liveNumel, true)
	}
	return nil
}

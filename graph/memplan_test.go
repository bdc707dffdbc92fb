package graph_test

import (
	"maps"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestMemoryPlanIsAnalyzes: the device-free MemoryPlan (what inspect
// shows) is the plan Analyze makes for a load, with the same deferred
// values, with and without limits that hold weights in chunks.
func TestMemoryPlanIsAnalyzes(t *testing.T) {
	l, err := models.NewLlama(models.Stories260K, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob, named, err := l.B.Decode()
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range []graph.Limits{{}, {MaxBufferSize: 64 << 10, MaxStorageBufferBindingSize: 64 << 10}} {
		a, err := graph.Analyze(blob, named, lim)
		if err != nil {
			t.Fatal(err)
		}
		p, deferred, err := graph.MemoryPlan(blob.Graph, lim)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(p.Placements, a.Plan.Placements) || !maps.Equal(p.SharedSizes, a.Plan.SharedSizes) {
			t.Errorf("limits %+v: MemoryPlan's placements differ from Analyze's", lim)
		}
		if !maps.Equal(deferred, a.Deferred) {
			t.Errorf("limits %+v: deferred %d values, Analyze %d", lim, len(deferred), len(a.Deferred))
		}
		if lim.MaxBufferSize > 0 && len(a.Chunked) == 0 {
			t.Errorf("limits %+v: no weight held in chunks", lim)
		}
	}
}

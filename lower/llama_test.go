package lower_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/lower"
)

// TestLlamaPlan pins what the passes make of a llama decoder as the
// exporter writes it (stories260K, 5 layers, the exporter's memory plan):
// per layer the q/k/v projections in the norm's group, the rope with the
// KV-cache attention, the output projection with the residual add, SwiGLU
// in the second norm's group, the down projection with its residual add;
// the rope tables read whole, the views of the projections and the last
// token's select sharing buffers, the classifier in the final norm's
// group.
func TestLlamaPlan(t *testing.T) {
	a := analyzeLlama(t, graph.Limits{})
	count := map[string]int{}
	for _, n := range a.Lowered.Nodes {
		switch n.Kind {
		case lower.KindFused:
			count[strings.TrimPrefix(n.Group.Kind, "wgd.fused.")]++
		case lower.KindView:
			count["view"]++
		default:
			count["op"]++
		}
	}
	layers := int(models.Stories260K.Layers)
	want := map[string]int{
		"norm_linears":    2*layers + 1,
		"rope_cache":      layers,
		"linear_epilogue": 2 * layers,
		"table_slice":     2,
		"view":            4*layers + 1,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%d %s nodes, want %d (plan %s)", count[k], k, n, a.Lowered)
		}
	}
	if n := count["rope_tables"] + count["elementwise"]; n != 0 {
		t.Errorf("%d rope_tables and elementwise nodes, want none", n)
	}
}

// analyzeLlama analyses stories260K as the exporter writes it under lim.
func analyzeLlama(t *testing.T, lim graph.Limits) *graph.Analysis {
	t.Helper()
	l, err := models.NewLlama(models.Stories260K, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob, named, err := l.B.Decode()
	if err != nil {
		t.Fatal(err)
	}
	a, err := graph.Analyze(blob, named, lim)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestMemoryPlanIsAnalyzes: the device-free graph.MemoryPlan (what
// inspect shows) is the plan Analyze makes for a load, with the same
// deferred values, with and without limits that hold weights in chunks.
func TestMemoryPlanIsAnalyzes(t *testing.T) {
	for _, lim := range []graph.Limits{{}, {MaxBufferSize: 64 << 10, MaxStorageBufferBindingSize: 64 << 10}} {
		a := analyzeLlama(t, lim)
		p, deferred, err := graph.MemoryPlan(a.Graph, lim)
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

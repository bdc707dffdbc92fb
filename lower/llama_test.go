package lower_test

import (
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
	l, err := models.NewLlama(models.Stories260K, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob, named, err := l.B.Decode()
	if err != nil {
		t.Fatal(err)
	}
	a, err := graph.Analyze(blob, named, graph.Limits{})
	if err != nil {
		t.Fatal(err)
	}
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

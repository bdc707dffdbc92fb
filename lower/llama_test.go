package lower_test

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestLlamaPlan(t *testing.T) {
	l, err := models.NewLlama(models.Stories260K, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := l.B.Blob()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		t.Fatal(err)
	}
	nd := serialization.NewNamedDataMap()
	for _, nb := range l.B.NamedBlobs() {
		nd.Add(nb.Key, nb.Data)
	}
	a, err := graph.Analyze(blob, nd, graph.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range blob.Graph.Chain {
		t.Logf("%d %s %v", i, op.Name, op.Args)
	}
	t.Log(a.Lowered.String())
}

package opstest

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
)

// TestConformance runs every case on the real device against the reference.
func TestConformance(t *testing.T) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	Run(t, dev, Cases)
}

// TestEveryOpHasReference fails when a GPU op has no plain-Go reference.
func TestEveryOpHasReference(t *testing.T) {
	have := map[string]bool{}
	for _, n := range reference.Names() {
		have[n] = true
	}
	for _, n := range ops.Names() {
		if !have[n] {
			t.Errorf("op %s has no reference implementation", n)
		}
	}
}

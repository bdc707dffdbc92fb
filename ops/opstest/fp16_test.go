package opstest

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// TestConformanceFP16 runs the force_fp16 cases (FP16Cases) on the device
// against the reference, under both memory plans like every case.
func TestConformanceFP16(t *testing.T) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	cases := FP16Cases()
	if len(cases) < 80 {
		t.Fatalf("only %d fp16 cases: a family pattern no longer matches", len(cases))
	}
	Run(t, GPU{Dev: dev}, cases)
}

package opstest

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func TestTmpWho(t *testing.T) {
	dev, _ := gpu.Open(context.Background(), gpu.Options{})
	defer dev.Close()
	for _, c := range FamilyCases(Cases) {
		b := serialization.NewBuilder()
		c.Build(b, rand.New(rand.NewPCG(1, 0x5eed)))
		g, _, err := Load(dev, b, graph.Options{Kernels: ops.Config{Family: ops.FamilyGPU}, SkipWarmup: true})
		if err != nil {
			continue
		}
		for _, d := range g.Dispatches() {
			if strings.HasPrefix(d.Kernel, "matmul_tiled128") {
				i := strings.Index(d.Kernel, "VecA")
				t.Logf("%s: %s", c.Name, d.Kernel[:i+24])
				break
			}
		}
		g.Close()
	}
}

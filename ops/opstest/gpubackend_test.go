package opstest

import (
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops/opstest/gpubackend"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// GPU is the suite's GPU backend (gpubackend.GPU): the package's tests and
// benchmarks run the cases on the device through it. It lives in its own
// package so that ops/opstest does not link graph (TestPurePackages).
type GPU = gpubackend.GPU

// Load is gpubackend.Load: b's graph built on dev with opts.
func Load(dev *gpu.Device, b *serialization.Builder, opts graph.Options) (*graph.WebGPUGraph, *serialization.Blob, error) {
	return gpubackend.Load(dev, b, opts)
}

// Package gpubackend is the conformance suite's GPU backend: it runs an
// ops/opstest case's graph through graph.Build on a device. It lives
// apart from ops/opstest so that the suite (its case types, runner and
// reference comparison) does not link graph or the GPU binding (`go list
// -deps ./ops/opstest`); ops/opstest's tests import it, so their one test
// binary runs every case on the device as before.
//
// GPU satisfies opstest.Backend and the optional interfaces the runner
// asks of a backend (CPUAdapter, FlushesSubnormals); this package does not
// import ops/opstest, whose in-package tests import it.
package gpubackend

import (
	"context"
	"fmt"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// GPU is the backend of graph.Build on Dev, loaded with kernel choices
// Kernels.
type GPU struct {
	Dev     *gpu.Device
	Kernels ops.Config
	// MaxBindingSize lowers the device's binding and buffer size limits
	// for the load (graph.Options.MaxBindingSize; 0: the device's), so
	// that small weights are held in chunks.
	MaxBindingSize uint64
	// Inspect, when set, is called with each loaded graph before it runs
	// (a test checks what the load made: chunks, memory); its error fails
	// the run.
	Inspect func(*graph.WebGPUGraph) error
}

// Run builds blob (a VH00 delegate blob whose named constants are in
// named) on b.Dev and runs it once on inputs, in the graph's input order;
// dispatches is how many kernels it recorded (opstest.Backend).
func (b GPU) Run(ctx context.Context, raw []byte, named []serialization.NamedBlob, inputs []*reference.Tensor) (outs []*reference.Tensor, dispatches int, err error) {
	blob, nd, err := decode(raw, named)
	if err != nil {
		return nil, 0, err
	}
	g, err := graph.Build(ctx, b.Dev, blob, graph.Options{NamedData: nd, Kernels: b.Kernels, MaxBindingSize: b.MaxBindingSize})
	if err != nil {
		return nil, 0, fmt.Errorf("gpu build: %w", err)
	}
	defer g.Close()
	if b.Inspect != nil {
		if err := b.Inspect(g); err != nil {
			return nil, 0, err
		}
	}
	hostIn := make([]graph.Tensor, len(inputs))
	for i, in := range inputs {
		hostIn[i] = graph.Tensor{DType: in.DType, Shape: in.Shape, Data: in.Encode()}
	}
	got, err := g.Execute(ctx, hostIn)
	if err != nil {
		return nil, 0, fmt.Errorf("gpu execute: %w", err)
	}
	outs = make([]*reference.Tensor, len(got))
	for i, o := range got {
		if outs[i], err = reference.Decode(o.DType, o.Shape, o.Data); err != nil {
			return nil, 0, err
		}
	}
	return outs, len(g.Dispatches()), nil
}

// CPUAdapter reports whether b's device is a CPU adapter (lavapipe), where
// the suite runs a large case, and a family case in each family, under one
// memory plan outside the long sweeps (opstest.LargeBytes).
func (b GPU) CPUAdapter() bool { return graph.DeviceProfile(b.Dev).Class == ops.ClassCPU }

// FlushesSubnormals reports whether b's adapter flushes float32
// subnormals, so that the suite's comparison applies the subnormal policy's
// allowance (ops/opstest's subnormal.go).
func (b GPU) FlushesSubnormals() bool { return b.Dev.Info().Subnormals.Flushes() }

// Load encodes b's graph, decodes it as a delegate blob and builds it on
// dev with opts (its named data from b unless opts gives some): the way
// the suite's tests and benchmarks get a GPU graph from a builder. The
// caller closes the graph.
func Load(dev *gpu.Device, b *serialization.Builder, opts graph.Options) (*graph.WebGPUGraph, *serialization.Blob, error) {
	raw, err := b.Blob()
	if err != nil {
		return nil, nil, fmt.Errorf("gpubackend: encode: %w", err)
	}
	blob, nd, err := decode(raw, b.NamedBlobs())
	if err != nil {
		return nil, nil, err
	}
	if opts.NamedData == nil {
		opts.NamedData = nd
	}
	g, err := graph.Build(context.Background(), dev, blob, opts)
	return g, blob, err
}

// decode decodes a blob and gathers its named data.
func decode(raw []byte, named []serialization.NamedBlob) (*serialization.Blob, *serialization.NamedDataMap, error) {
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("gpubackend: decode: %w", err)
	}
	nd := serialization.NewNamedDataMap()
	for _, nb := range named {
		if err := nd.Add(nb.Key, nb.Data); err != nil {
			return nil, nil, fmt.Errorf("gpubackend: named data: %w", err)
		}
	}
	return blob, nd, nil
}

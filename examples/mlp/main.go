// Command mlp builds a small two-layer perceptron as an ExecuTorch
// Vulkan-delegate program, runs it on WebGPU with wgdelegate, and checks the
// result against the same network computed in plain Go.
//
//	go run ./examples/mlp             # files in a temporary directory
//	go run ./examples/mlp -out model  # keep model.pte and weights.ptd
//
// The files it writes can be fed to the command-line tool too:
//
//	wgdelegate inspect model/model.pte
//	wgdelegate run --data model/weights.ptd --input x.npy --output-dir out model/model.pte
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/exampleutil"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The network: y = linear2(relu(linear1(x))), for a batch of 2 rows of 4
// features, 8 hidden units and 3 outputs.
const (
	batch  = 2
	inDim  = 4
	hidden = 8
	outDim = 3
)

// tolerance is the largest difference from the plain-Go result accepted.
// Both sides sum in float32; the GPU may sum in another order.
const tolerance = 1e-4

func main() {
	out := flag.String("out", "", "directory to write model.pte and weights.ptd to (default: a temporary directory, removed on exit)")
	flag.Parse()
	exampleutil.Exit("mlp", run(*out))
}

func run(outDir string) error {
	// Step 1: weights. A real model's weights come from training; here they
	// are drawn from a seeded generator, so every run computes the same
	// numbers. PyTorch's nn.Linear stores its weight as [out_features,
	// in_features] and computes x·Wᵀ + b; the delegate graph keeps that
	// layout, so these slices are laid out exactly as torch would save them.
	rng := rand.New(rand.NewPCG(1, 2))
	randn := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	w1, b1 := randn(hidden*inDim, 0.5), randn(hidden, 0.1)
	w2, b2 := randn(outDim*hidden, 0.5), randn(outDim, 0.1)
	x := randn(batch*inDim, 1)

	// Step 2: the graph. A VkGraph is a list of values (tensors, ints,
	// lists, nulls) and a chain of operator calls that refer to values by
	// id, each call's output last. The weights become named constants: the
	// graph stores only the SHA-256 of their bytes as a key, and the bytes
	// live in named data, as the exporter has written them since 2025.
	// linear takes its weight and bias constants directly (it "handles its
	// own prepacking"), so there are no et_vk.prepack calls in this graph.
	//
	// mem_obj_id is the exporter's memory plan: tensors with the same id
	// share one buffer (-1 would mean a buffer of its own). The exporter
	// plans greedily and reuses a buffer as soon as its tensor is dead: x
	// is dead once the first linear has read it, so relu's output r takes
	// its buffer (id 0), and h is dead once relu has read it, so y takes
	// its buffer (id 1). The runtime fuses relu into the first linear; that
	// kernel would read x and write r in one buffer, so the runtime binds
	// r to another buffer of the plan that is free by then (h's, unused
	// once relu is fused), without allocating more than the plan.
	b := serialization.NewBuilder()
	xID := b.Tensor(serialization.Float32, []uint32{batch, inDim}, 0)
	w1ID, _ := b.NamedConst(serialization.Float32, []uint32{hidden, inDim}, f32bytes(w1))
	b1ID, _ := b.NamedConst(serialization.Float32, []uint32{hidden}, f32bytes(b1))
	hID := b.Tensor(serialization.Float32, []uint32{batch, hidden}, 1)
	rID := b.Tensor(serialization.Float32, []uint32{batch, hidden}, 0)
	w2ID, _ := b.NamedConst(serialization.Float32, []uint32{outDim, hidden}, f32bytes(w2))
	b2ID, _ := b.NamedConst(serialization.Float32, []uint32{outDim}, f32bytes(b2))
	yID := b.Tensor(serialization.Float32, []uint32{batch, outDim}, 1)
	b.Op("aten.linear.default", xID, w1ID, b1ID, hID) // [input, weight, bias, out]
	b.Op("aten.relu.default", hID, rID)               // [self, out]
	b.Op("aten.linear.default", rID, w2ID, b2ID, yID)
	b.Inputs(xID)
	b.Outputs(yID)

	// Step 3: the files. The graph is serialized as a VH00 delegate blob
	// (a small header, the VkGraph flatbuffer, inline constant bytes). A
	// .pte program wraps it as the payload of a "VulkanBackend" delegate,
	// stored in a segment after the program flatbuffer. The weights go in a
	// separate .ptd file, which is how large models ship their weights.
	blob, err := b.Blob()
	if err != nil {
		return fmt.Errorf("encoding the delegate blob: %w", err)
	}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{
		Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}},
	})
	if err != nil {
		return fmt.Errorf("encoding the .pte: %w", err)
	}
	ptd, err := serialization.EncodePTD(b.NamedBlobs())
	if err != nil {
		return fmt.Errorf("encoding the .ptd: %w", err)
	}
	outDir, cleanup, err := exampleutil.OutDir(outDir, "mlp")
	if err != nil {
		return err
	}
	defer cleanup()
	paths, err := exampleutil.WriteFiles(outDir,
		exampleutil.File{Name: "model.pte", Data: pte}, exampleutil.File{Name: "weights.ptd", Data: ptd})
	if err != nil {
		return err
	}
	ptePath, ptdPath := paths[0], paths[1]

	// Step 4: the device. OpenDevice asks WebGPU for the default adapter,
	// preferring Vulkan: a real GPU, or lavapipe (Mesa's Vulkan driver on
	// the CPU) on a machine without one. Pipelines compiled for one model
	// are cached on the Device and shared with every model loaded on it.
	// Objects are closed in the reverse order of creation: the model before
	// the device.
	ctx := context.Background()
	dev, err := exampleutil.OpenDevice(ctx) // wgdelegate.OpenDevice with default options
	if err != nil {
		return err
	}
	defer dev.Close()

	// Step 5: loading. LoadFile memory-maps the .pte and the .ptd, finds
	// the VulkanBackend delegate, resolves each named constant against the
	// .ptd and writes it straight into its GPU buffer, plans memory from
	// the mem_obj_ids, and records every op as a WGSL compute dispatch.
	// Afterwards the files are unmapped: nothing on the host refers to
	// them any more.
	m, err := dev.LoadFile(ctx, ptePath, ptdPath)
	if err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	defer m.Close()
	dt, shape, err := m.InputInfo(0)
	if err != nil {
		return err
	}
	fmt.Printf("model: %d input (%v %v), %d output\n", m.NumInputs(), dt, shape, m.NumOutputs())

	// Step 6: running. Execute uploads the inputs, replays all dispatches
	// in one compute pass and one queue submit, and copies the outputs back
	// through staging buffers that were created once, at load.
	outs, err := m.Execute(ctx, wgdelegate.FromFloat32([]int64{batch, inDim}, x))
	if err != nil {
		return fmt.Errorf("executing: %w", err)
	}
	y, err := outs[0].Float32s()
	if err != nil {
		return err
	}
	fmt.Printf("output %v:\n", outs[0].Shape)
	for r := range batch {
		fmt.Printf("  %9.5f\n", y[r*outDim:(r+1)*outDim])
	}

	// Step 7: checking. The same network in plain Go, in float32 like the
	// GPU. The sums may run in a different order, so the results agree to
	// rounding, not bit for bit.
	want := linear(relu(linear(x, w1, b1, batch, inDim, hidden)), w2, b2, batch, hidden, outDim)
	var maxDiff float64
	for i := range want {
		maxDiff = max(maxDiff, math.Abs(float64(y[i]-want[i])))
	}
	fmt.Printf("max |gpu - go| = %.3g\n", maxDiff)

	// Step 8: memory. MemoryStats reports what the load allocated: tensor
	// buffers, shared by mem_obj_id (h and y share one), the staging
	// buffer for the output, the uniform parameters of each dispatch.
	s := m.MemoryStats()
	fmt.Printf("memory: %d tensors, %d shared buffers (%d bytes), %d unshared tensor bytes, %d staging bytes, %d uniform bytes, %d total bytes; %d dispatches, %d cached pipelines\n",
		s.NumTensors, s.NumSharedObjects, s.SharedBufferBytes, s.UnsharedTensorBufferBytes,
		s.StagingBufferBytes, s.UniformBufferBytes, s.TotalBytes(), s.NumDispatches, s.NumCachedPipelines)

	if maxDiff > tolerance || math.IsNaN(maxDiff) {
		return fmt.Errorf("output differs from the plain-Go result by %g (tolerance %g)", maxDiff, tolerance)
	}
	return nil
}

// linear computes x·wᵀ + b for x [rows×k] and w [n×k], as torch's
// nn.functional.linear does.
func linear(x, w, b []float32, rows, k, n int) []float32 {
	y := make([]float32, rows*n)
	for r := range rows {
		for j := range n {
			sum := b[j]
			for i := range k {
				sum += x[r*k+i] * w[j*k+i]
			}
			y[r*n+j] = sum
		}
	}
	return y
}

func relu(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = max(v, 0)
	}
	return y
}

// f32bytes returns v's little-endian bytes, the layout of tensor data.
func f32bytes(v []float32) []byte {
	return wgdelegate.Float32Tensor([]int64{int64(len(v))}, v).Data
}

// Command cnn builds a small convolutional image classifier as an
// ExecuTorch Vulkan-delegate program, runs it on WebGPU with wgdelegate,
// and checks the result against the plain-Go reference interpreter.
//
//	go run ./examples/cnn             # the file goes to a temporary directory
//	go run ./examples/cnn -out model  # keep model/cnn.pte
//
// The network (internal/models/cnn.go has it op by op):
//
//	conv 3×3 → batch norm → relu → max pool 2×2
//	→ depthwise conv 3×3 stride 2 → conv 1×1 → relu → avg pool 2×2
//	→ view [1, 512] → linear → softmax
//
// Unlike the mlp example, the weights are stored inside the .pte (its
// named data), so the model is a single file:
//
//	wgdelegate inspect model/cnn.pte
//	wgdelegate graph -o cnn.svg model/cnn.pte
package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/exampleutil"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

func main() {
	out := flag.String("out", "", "directory to write cnn.pte to (default: a temporary directory, removed on exit)")
	runs := flag.Int("runs", 5, "how many timed executions after the first")
	flag.Parse()
	exampleutil.Exit("cnn", run(*out, *runs))
}

func run(outDir string, runs int) error {
	// Step 1: the graph. models.NewCNN writes the network with
	// serialization.Builder the way the Vulkan exporter lays out torch's
	// ops: aten.convolution.default with stride, padding, dilation and
	// groups as value lists (groups = channels makes a depthwise
	// convolution), batch norm as _native_batch_norm_legit_no_training with
	// its running statistics, a ValueList for multi-output ops. Its
	// weights are drawn from a seeded generator (He initialisation), so
	// every run computes the same numbers, and stored as named constants:
	// the graph holds only the SHA-256 of each weight's bytes.
	m := models.NewCNN(models.DefaultCNN)
	fmt.Println("graph:")
	for _, op := range models.OpCounts(m.B) {
		fmt.Printf("  %2d× %s\n", op.Count, op.Name)
	}
	var weightBytes int
	for _, nb := range m.B.NamedBlobs() {
		weightBytes += len(nb.Data)
	}
	fmt.Printf("  %d weight tensors, %d bytes\n", len(m.B.NamedBlobs()), weightBytes)

	// Step 2: the file. Encode wraps the graph as a VH00 delegate blob in
	// a .pte; with separateWeights=false the weights go in the program's
	// own named data, one segment per weight, after the delegate.
	// The memory plan is the exporter's: greedy, a shared buffer reused
	// as soon as its tensor's last reader has run.
	models.ApplyPlan(m.B, models.PlanExporter)
	files, err := models.Encode(m.B, false)
	if err != nil {
		return err
	}
	outDir, cleanup, err := exampleutil.OutDir(outDir, "cnn")
	if err != nil {
		return err
	}
	defer cleanup()
	paths, err := exampleutil.WriteFiles(outDir, exampleutil.File{Name: "cnn.pte", Data: files.PTE})
	if err != nil {
		return err
	}
	path := paths[0]

	// Step 3: loading. Open maps the file, finds the VulkanBackend
	// delegate, copies each weight from the mapping straight into its GPU
	// buffer, plans memory from the mem_obj_ids (the activations take
	// turns in two shared buffers) and records every op as WGSL compute
	// dispatches. Pipelines are compiled here, once per device.
	ctx := context.Background()
	dev, err := exampleutil.OpenDevice(ctx)
	if err != nil {
		return err
	}
	defer dev.Close()
	start := time.Now()
	model, err := wgdelegate.Open(ctx, path, wgdelegate.WithDevice(dev))
	if err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	defer model.Close()
	dt, shape, err := model.InputInfo(0)
	if err != nil {
		return err
	}
	fmt.Printf("loaded in %v: input %v %v, %d outputs\n", time.Since(start).Round(time.Microsecond), dt, shape, model.NumOutputs())

	// Step 4: running. The input is a random "image" in [-1, 1). The first
	// Execute is timed on its own: it is the one that may still pay for
	// first use of buffers and pipelines on the driver.
	x := m.Input(42)
	input := wgdelegate.FromFloat32(m.InputShape(), x)
	start = time.Now()
	outs, err := model.Execute(ctx, input)
	if err != nil {
		return fmt.Errorf("executing: %w", err)
	}
	first := time.Since(start)
	var total time.Duration
	for range runs {
		start = time.Now()
		if _, err := model.Execute(ctx, input); err != nil {
			return fmt.Errorf("executing: %w", err)
		}
		total += time.Since(start)
	}
	fmt.Printf("execute: first %v", first.Round(time.Microsecond))
	if runs > 0 {
		fmt.Printf(", then %v on average over %d runs", (total / time.Duration(runs)).Round(time.Microsecond), runs)
	}
	fmt.Println()

	probs, err := outs[1].Float32s()
	if err != nil {
		return err
	}
	classes := make([]int, len(probs))
	for i := range classes {
		classes[i] = i
	}
	sort.SliceStable(classes, func(a, b int) bool { return probs[classes[a]] > probs[classes[b]] })
	fmt.Print("top classes:")
	for _, c := range classes[:3] {
		fmt.Printf("  #%d %.1f%%", c, 100*probs[c])
	}
	fmt.Println()

	// Step 5: checking. The reference interpreter (ops/reference) runs the
	// same graph, op by op, in float64 with straightforward loops; it
	// shares no code with the GPU kernels. The GPU sums in float32 in its
	// own order, so the results agree to rounding: within 1e-3 relative
	// (with a 1e-5 absolute floor near zero).
	want, err := m.Reference(x)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	for i, name := range []string{"logits", "probs"} {
		d, err := models.Compare(outs[i], want[i], models.Tol)
		if err != nil {
			return fmt.Errorf("%s differ from the reference: %w", name, err)
		}
		fmt.Printf("%-6s %v vs reference: %v\n", name, outs[i].Shape, d)
	}

	// Step 6: memory. Tensors with the same mem_obj_id share one buffer
	// sized for the largest of them; weights and the two outputs have
	// their own; outputs are read back through staging buffers made once
	// at load; each dispatch has a small uniform block of parameters.
	s := model.MemoryStats()
	fmt.Printf("memory: %d tensors, %d shared buffers (%d bytes), %d unshared tensor bytes, %d staging bytes, %d uniform bytes, %d total bytes\n",
		s.NumTensors, s.NumSharedObjects, s.SharedBufferBytes, s.UnsharedTensorBufferBytes,
		s.StagingBufferBytes, s.UniformBufferBytes, s.TotalBytes())
	fmt.Printf("work: %d dispatches per Execute, %d cached pipelines on the device\n", s.NumDispatches, s.NumCachedPipelines)
	return nil
}

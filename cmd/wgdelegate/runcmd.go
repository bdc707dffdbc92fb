package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/npy"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// runOptions are the parsed arguments of "wgdelegate run".
type runOptions struct {
	model   string
	data    []string
	inputs  []string
	outDir  string
	quiet   bool
	verbose bool
	// cpuThreads is DeviceOptions.CPUThreads (--cpu-threads).
	cpuThreads int
	// kernels is KernelConfig.Family (--kernels).
	kernels wgdelegate.KernelFamily
	// verify checks the weights against their keys (--verify).
	verify bool
}

func parseRunArgs(args []string) (runOptions, error) {
	var o runOptions
	appendTo := func(dst *[]string) func(string) error {
		return func(v string) error { *dst = append(*dst, v); return nil }
	}
	specs := []flagSpec{
		{names: []string{"data"}, value: true, set: appendTo(&o.data)},
		{names: []string{"input"}, value: true, set: appendTo(&o.inputs)},
		{names: []string{"output-dir"}, value: true, set: func(v string) error {
			if o.outDir != "" {
				return errors.New("given twice")
			}
			o.outDir = v
			return nil
		}},
		{names: []string{"cpu-threads"}, value: true, set: cpuThreadsFlag(&o.cpuThreads)},
		{names: []string{"kernels"}, value: true, set: kernelsFlag(&o.kernels)},
		{names: []string{"verify"}, set: func(string) error { o.verify = true; return nil }},
		{names: []string{"quiet", "q"}, set: func(string) error { o.quiet = true; return nil }},
		{names: []string{"verbose", "v"}, set: func(string) error { o.verbose = true; return nil }},
	}
	pos, err := parseArgs("run", args, specs)
	if err != nil {
		return o, err
	}
	if o.model, err = oneModel("run", pos); err != nil {
		return o, err
	}
	if o.outDir == "" {
		return o, errors.New("run: --output-dir is required")
	}
	return o, nil
}

func runCommand(args []string, stdout, stderr io.Writer) error {
	return parseAndRun(args, stdout, stderr, parseRunArgs, runModel)
}

// runModel does the work of "wgdelegate run": everything that can be checked
// without a GPU is checked first, so a typo costs no device start-up.
func runModel(ctx context.Context, o runOptions, stdout, stderr io.Writer) error {
	if o.quiet {
		stdout = io.Discard
	}
	if err := checkModelFile(o.model); err != nil {
		return err
	}
	inputs := make([]wgdelegate.Tensor, len(o.inputs))
	for i, p := range o.inputs {
		t, err := npy.ReadFile(p)
		if err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
		inputs[i] = t
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}

	start := time.Now()
	log := newLogger(stderr, o.verbose)
	dev, release, err := openDevice(ctx, wgdelegate.DeviceOptions{Logger: log, CPUThreads: o.cpuThreads})
	if err != nil {
		return err
	}
	defer release()
	if o.verbose {
		fmt.Fprintf(stdout, "adapter: %s%s%s (opened in %v)\n", dev.AdapterName(), cpuThreadsNote(dev), kernelsNote(dev, o.kernels), time.Since(start).Round(time.Millisecond))
		fmt.Fprintf(stdout, "subnormals: %s\n", dev.Subnormals())
	}

	start = time.Now()
	pr := newProgress(newProgressOut(stderr, o.verbose), filepath.Base(o.model))
	m, err := wgdelegate.Open(ctx, o.model, append([]wgdelegate.Option{wgdelegate.WithDevice(dev), wgdelegate.WithDataFiles(o.data...),
		wgdelegate.WithLogger(log), wgdelegate.WithProgress(pr.update), wgdelegate.WithKernels(wgdelegate.KernelConfig{Family: o.kernels})},
		verifyOption(o.verify)...)...)
	pr.finish(err == nil)
	if err != nil {
		return withDataHint(err, o.model, o.data)
	}
	defer m.Close()
	verifyNote(stderr, m, o.verify, o.verbose)
	if o.verbose {
		fmt.Fprintf(stdout, "loaded %s in %v: %d delegate(s), %d inputs, %d outputs\n", o.model, time.Since(start).Round(time.Millisecond), m.NumDelegates(), m.NumInputs(), m.NumOutputs())
	}
	generated := ""
	if len(o.inputs) == 0 && m.NumInputs() > 0 {
		// As bench and profile do: small random values of each input's
		// dtype and shape, the same every run.
		inputs = generateInputs(m)
		generated = describeInputs(inputs)
	} else if err := checkInputs(m, inputs, o.inputs); err != nil {
		return err
	}

	start = time.Now()
	outs, err := m.Execute(ctx, inputs...)
	if err != nil {
		if generated != "" {
			return fmt.Errorf("%w (no --input: on generated inputs %s)", err, generated)
		}
		return err
	}
	if o.verbose {
		fmt.Fprintf(stdout, "executed in %v\n", time.Since(start).Round(time.Microsecond))
	}
	tab := newTable(stdout)
	for i, t := range outs {
		if t.DType == serialization.Float16 {
			// Float outputs go out as float32 .npy (what tools compare
			// against); widening a half is exact.
			if t, err = widenHalf(t); err != nil {
				return fmt.Errorf("output %d: %w", i, err)
			}
		}
		p := filepath.Join(o.outDir, fmt.Sprintf("output_%d.npy", i))
		if err := npy.WriteFile(p, t); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
		tab.row(p, t.DType, list(t.Shape))
	}
	tab.flush()
	if o.verbose {
		printMemoryStats(stdout, m.MemoryStats())
	}
	if generated != "" && !o.quiet {
		// Said at the end, on success only: a failure is one stderr line.
		fmt.Fprintf(stderr, "wgdelegate: no --input: used generated inputs (seed 1): %s\n", generated)
	}
	return nil
}

// describeInputs lists inputs' dtypes and shapes: "input 0 float32 [2 4],
// input 1 int64 [1]".
func describeInputs(inputs []wgdelegate.Tensor) string {
	parts := make([]string, len(inputs))
	for i, t := range inputs {
		parts[i] = fmt.Sprintf("input %d %v %v", i, t.DType, t.Shape)
	}
	return strings.Join(parts, ", ")
}

// openDevice opens the device a run uses and returns the function that
// releases it. Tests replace it to share one device (and its pipeline
// cache) across runs in one process.
var openDevice = func(ctx context.Context, opts wgdelegate.DeviceOptions) (*wgdelegate.Device, func(), error) {
	dev, err := wgdelegate.OpenDevice(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return dev, func() { dev.Close() }, nil
}

// verifyOption is WithVerifyData when --verify was given.
func verifyOption(verify bool) []wgdelegate.Option {
	if !verify {
		return nil
	}
	return []wgdelegate.Option{wgdelegate.WithVerifyData()}
}

// verifyNote reports on stderr what --verify could not check: named
// tensors whose keys are not SHA-256 digests, loaded unchecked (one
// warning line); with verbose also what it checked.
func verifyNote(stderr io.Writer, m *wgdelegate.Model, verify, verbose bool) {
	if !verify {
		return
	}
	st := m.VerifyStats()
	if verbose {
		fmt.Fprintf(stderr, "verified %d named tensors (%s) against their SHA-256 keys in %v\n", st.Tensors, mib(st.Bytes), st.Elapsed.Round(time.Millisecond))
	}
	if st.Unverifiable > 0 {
		keys := make([]string, len(st.Keys))
		for i, k := range st.Keys {
			keys[i] = strconv.Quote(k)
		}
		if st.Unverifiable > len(keys) {
			keys = append(keys, "...")
		}
		fmt.Fprintf(stderr, "wgdelegate: warning: --verify: %d named tensor(s) have keys that are not SHA-256 digests and were loaded unchecked: %s\n",
			st.Unverifiable, strings.Join(keys, ", "))
	}
}

// withDataHint adds to a load error what to do when a named constant is
// missing and no --data was given: the model keeps its weights in a .ptd
// file, which --data names. The .ptd files beside the model are listed, as
// the likeliest candidates.
func withDataHint(err error, model string, data []string) error {
	var ce *graph.ConstantError
	if len(data) > 0 || !errors.As(err, &ce) || ce.Key == "" {
		return err
	}
	hint := "add --data FILE.ptd"
	switch ptds, _ := filepath.Glob(filepath.Join(filepath.Dir(model), "*.ptd")); {
	case len(ptds) == 1:
		hint = "try --data " + ptds[0]
	case len(ptds) > 5:
		ptds = append(ptds[:5], "...")
		fallthrough
	case len(ptds) > 1:
		hint += " (next to the model: " + strings.Join(ptds, ", ") + ")"
	}
	return fmt.Errorf("%w (no --data given: the model's weights are in a .ptd file; %s)", err, hint)
}

// checkModelFile opens the model and looks at its identifier, so a missing
// or foreign file is reported before a device is opened, in the same words
// by every command.
func checkModelFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return fmt.Errorf("model: %s is a directory, not a .pte program or a VH00 delegate blob", path)
	}
	var id [8]byte
	n, err := io.ReadFull(f, id[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("model: %w", err)
	}
	if wgdelegate.Detect(id[:n]) == wgdelegate.FormatUnknown {
		return fmt.Errorf("%s: %s", path, describeUnknown(id[:n]))
	}
	return nil
}

// mapModel checks the model (checkModelFile) and maps it into memory.
func mapModel(path string) (*serialization.MappedFile, error) {
	if err := checkModelFile(path); err != nil {
		return nil, err
	}
	mf, err := serialization.MapFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return mf, nil
}

// describeUnknown explains why a file is not a model, naming what it looks
// like when it is a file that often gets passed by mistake.
func describeUnknown(b []byte) string {
	msg := "not a .pte program or a VH00 delegate blob"
	switch {
	case len(b) == 0:
		return msg + " (empty file)"
	case len(b) < 8:
		return fmt.Sprintf("%s (only %d bytes)", msg, len(b))
	case string(b[4:8]) == "FT01":
		return msg + " (it is a .ptd data file: pass it with --data)"
	case string(b[:6]) == npy.Magic:
		return msg + " (it is a .npy array: pass it with --input)"
	}
	return fmt.Sprintf("%s (identifier %q at offset 4)", msg, b[4:8])
}

// checkInputs compares the .npy inputs with what the graph expects, naming
// the file in any error. Execute checks the same things; doing it here gives
// a message a user can act on.
func checkInputs(m *wgdelegate.Model, inputs []wgdelegate.Tensor, paths []string) error {
	if len(inputs) != m.NumInputs() {
		want := make([]string, m.NumInputs())
		for i := range want {
			dt, shape, _ := m.InputInfo(i) // i < NumInputs()
			want[i] = fmt.Sprintf("%v %v", dt, shape)
		}
		return fmt.Errorf("model takes %d input(s) (%s), got %d --input file(s)", m.NumInputs(), strings.Join(want, ", "), len(inputs))
	}
	for i, in := range inputs {
		dt, shape, _ := m.InputInfo(i) // i < NumInputs(), checked above
		// Serialized dims are upper bounds (dynamic shapes): an input may
		// be smaller in any dim, not larger, and has the same rank.
		fits := len(in.Shape) == len(shape)
		if len(shape) == 0 && graph.Numel(in.Shape) == 1 {
			fits = true // a SymInt (or scalar) input given as a one-element array
		}
		for j := 0; fits && j < len(shape); j++ {
			fits = in.Shape[j] >= 0 && in.Shape[j] <= shape[j]
		}
		if !fits {
			return fmt.Errorf("input %d (%s): shape %v, model expects %v (or smaller in any dim)", i, paths[i], in.Shape, shape)
		}
		narrowable := in.DType == serialization.Int64 && dt == serialization.Int32 ||
			in.DType == serialization.Float64 && dt == serialization.Float32 ||
			in.DType == serialization.Int32 && dt == serialization.Int64 && len(shape) == 0 || // a SymInt
			// a FLOAT16 input takes float32 and float64 data too (rounded to half)
			dt == serialization.Float16 && (in.DType == serialization.Float32 || in.DType == serialization.Float64)
		if in.DType != dt && !narrowable {
			return fmt.Errorf("input %d (%s): dtype %v, model expects %v", i, paths[i], in.DType, dt)
		}
	}
	return nil
}

func printMemoryStats(w io.Writer, s wgdelegate.MemoryStats) {
	tw := newTable(w)
	tw.row("memory")
	tw.row("  tensors", s.NumTensors)
	tw.row("  shared buffers", fmt.Sprintf("%d (%d bytes)", s.NumSharedObjects, s.SharedBufferBytes))
	if s.MovedTensors > 0 {
		// Fusion made tensors the exporter let share a buffer live in one
		// dispatch; they were bound to other shared buffers of the plan.
		tw.row("  re-bound tensors", s.MovedTensors)
	}
	if s.AddedSharedBytes > 0 {
		tw.row("  added shared buffers", fmt.Sprintf("%d (%d bytes beyond the exporter's plan)", s.AddedSharedObjects, s.AddedSharedBytes))
	}
	tw.row("  unshared tensor bytes", s.UnsharedTensorBufferBytes)
	tw.row("  tensor buffer bytes", s.TensorBufferBytes)
	tw.row("  staging bytes", s.StagingBufferBytes)
	tw.row("  uniform bytes", s.UniformBufferBytes)
	tw.row("  deferred constants", fmt.Sprintf("%d (%d bytes)", s.NumDeferredConstants, s.DeferredConstantBytes))
	tw.row("  packed weight bytes", s.PackedWeightBytes)
	if s.NumFloat16Tensors > 0 {
		tw.row("  float16 tensors", fmt.Sprintf("%d, held as float32 (%d bytes)", s.NumFloat16Tensors, s.Float16TensorBytes))
	}
	if s.PersistentCopyBytes > 0 {
		tw.row("  persistent copy bytes", s.PersistentCopyBytes)
	}
	if s.NumHalfKVCaches > 0 {
		tw.row("  half KV caches", fmt.Sprintf("%d (%d bytes)", s.NumHalfKVCaches, s.HalfKVCacheBytes))
	}
	if s.NumChunkedWeights > 0 {
		// Weights too large for one buffer: their slices and the chunked
		// ops' scratch outputs are in the total.
		tw.row("  chunked weights", fmt.Sprintf("%d (%d bytes) in %d chunks; %d bytes of slices, %d scratch",
			s.NumChunkedWeights, s.ChunkedWeightBytes, s.NumWeightChunks, s.ChunkBytes, s.ScratchBytes))
	}
	if s.NumQuantizedWeights > 0 {
		// A breakdown of the bytes above, not an addition.
		tw.row("  quantized weights", fmt.Sprintf("%d (%d parameters in %d bytes, %.3f bytes each)",
			s.NumQuantizedWeights, s.QuantizedParams, s.QuantizedWeightBytes, bytesPerWeight(s.QuantizedWeightBytes, s.QuantizedParams)))
	}
	tw.row("  dispatches", s.NumDispatches)
	tw.row("  cached pipelines", s.NumCachedPipelines)
	tw.row("  cached shaders", s.NumCachedShaders)
	tw.row("  total bytes", s.TotalBytes())
	tw.flush()
}

// cpuThreadsNote describes a device's non-default llvmpipe thread setting
// for the adapter line, e.g. ", cpu threads: inline"; "" for the default.
func cpuThreadsNote(dev *wgdelegate.Device) string {
	switch n := dev.CPUThreads(); {
	case n == wgdelegate.CPUThreadsInline:
		return ", cpu threads: inline"
	case n > 0:
		return fmt.Sprintf(", cpu threads: %d", n)
	}
	return ""
}

// kernelsNote names the kernel family a load with --kernels fam runs on
// dev, for the adapter line.
func kernelsNote(dev *wgdelegate.Device, fam wgdelegate.KernelFamily) string {
	return fmt.Sprintf(", %v kernels", dev.KernelFamily(wgdelegate.KernelConfig{Family: fam}))
}

// widenHalf returns a float16 tensor's values as a float32 tensor.
func widenHalf(t wgdelegate.Tensor) (wgdelegate.Tensor, error) {
	h, err := t.Float16s()
	if err != nil {
		return t, err
	}
	f := make([]float32, len(h))
	for i, v := range h {
		f[i] = wgdelegate.HalfToFloat32(v)
	}
	return wgdelegate.FromFloat32(t.Shape, f), nil
}

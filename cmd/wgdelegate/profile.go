package main

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/npy"
	"github.com/wgdelegate/wgdelegate/serialization"
)

const profileUsage = `Usage:
  wgdelegate profile [flags] MODEL

Runs MODEL once to warm up, then N more times with every GPU dispatch timed
on its own, and prints the GPU time per op as a table sorted by total time:
op index, op name, kernel(s), dispatches, time in microseconds (the mean
over the iterations) and its share of the total. Times come from GPU
timestamp queries when the adapter has them ("gpu-timestamp"), otherwise
from submitting each dispatch alone and waiting for it on the CPU ("cpu",
which includes submission latency); the header says which. Each dispatch
runs in a compute pass of its own, so the total is an upper bound of an
Execute's GPU time.

Without --input, inputs are generated: small random values of each
input's dtype and shape (integers 1..3, floats in [-1, 1)).

Flags:
  --iterations N   timed runs (default 3)
  --trace FILE     also write a Chrome trace (JSON trace events, one per
                   dispatch laid end to end; open it in ui.perfetto.dev or
                   chrome://tracing)
  --json           print JSON instead of the table
  --no-fusion      do not fuse elementwise chains: one dispatch per op
  --f16-kv-cache   hold KV caches only the cache ops use as halves (enable_f16_kv_cache)
  --cpu-threads N  compute threads of a CPU adapter (llvmpipe/lavapipe):
                   "inline" runs every dispatch on the driver's own thread, N
                   (1..64) asks for N workers, "default" (or 0) keeps
                   LP_NUM_THREADS, else one worker per CPU. Inline suits
                   models of many small dispatches (on 2 vCPUs a tiny dispatch
                   costs 2-9 µs instead of 45-85 µs; a 27-dispatch decoder
                   step ran 2.3-2.9 -> 0.8-0.9 ms) but runs big kernels on one
                   core (on a quiet host a 1M-element elementwise chain went
                   15 -> 21 ms). Other adapters ignore it.
  --kernels F      kernel family: auto (default: cpu for a CPU adapter such
                   as lavapipe, gpu for a GPU), cpu or gpu (see 'wgdelegate
                   help run')
  --data FILE      a .ptd file holding named constants (repeatable)
  --input FILE     a .npy file for the next model input (repeatable)
  --verify         check every weight against its SHA-256 key while
                   loading (see 'wgdelegate help run')
  -v, --verbose    debug logs on stderr
  -h, --help       print this help

Examples:
  wgdelegate profile model.pte
  wgdelegate profile --iterations 10 --trace trace.json model.pte
  wgdelegate profile --json model.pte | jq '.ops[:5]'
  wgdelegate profile --no-fusion model.pte   # every elementwise op timed alone
`

// profileOptions are the parsed arguments of "wgdelegate profile".
type profileOptions struct {
	measureOptions
	trace string
}

// iterationsFlag parses a positive --iterations value into dst.
func iterationsFlag(dst *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", v)
		}
		*dst = n
		return nil
	}
}

func appendFlag(dst *[]string) func(string) error {
	return func(v string) error { *dst = append(*dst, v); return nil }
}

func parseProfileArgs(args []string) (profileOptions, error) {
	var o profileOptions
	o.iterations = 3
	err := o.parse("profile", args,
		flagSpec{names: []string{"trace"}, value: true, set: func(v string) error { o.trace = v; return nil }})
	return o, err
}

func profileCommand(args []string, stdout, stderr io.Writer) error {
	return parseAndRun(args, stdout, stderr, parseProfileArgs, profileModel)
}

// loaded is a model opened by a command, with its device and inputs.
type loaded struct {
	m       *wgdelegate.Model
	dev     *wgdelegate.Device
	inputs  []wgdelegate.Tensor
	release func()
}

func (l *loaded) close() {
	if l.m != nil {
		l.m.Close()
	}
	if l.release != nil {
		l.release()
	}
}

// readInputs reads the .npy inputs a command was given.
func readInputs(paths []string) ([]wgdelegate.Tensor, error) {
	inputs := make([]wgdelegate.Tensor, len(paths))
	for i, p := range paths {
		t, err := npy.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		inputs[i] = t
	}
	return inputs, nil
}

// openModel opens the device and loads path with opts, showing progress on
// po for a load over its delay. The inputs are read from inputPaths, or
// generated when there are none.
// When lm is not nil it receives what the load itself cost.
func openModel(ctx context.Context, path string, data, inputPaths []string, devOpts wgdelegate.DeviceOptions, po progressOut, lm *loadMeasure, opts ...wgdelegate.Option) (*loaded, error) {
	if err := checkModelFile(path); err != nil {
		return nil, err
	}
	inputs, err := readInputs(inputPaths)
	if err != nil {
		return nil, err
	}
	dev, release, err := openDevice(ctx, devOpts)
	if err != nil {
		return nil, err
	}
	log := devOpts.Logger
	l := &loaded{dev: dev, release: release}
	pr := newProgress(po, filepath.Base(path))
	opts = append([]wgdelegate.Option{wgdelegate.WithDevice(dev), wgdelegate.WithDataFiles(data...),
		wgdelegate.WithLogger(log), wgdelegate.WithProgress(pr.update)}, opts...)
	lm.begin(dev)
	m, err := wgdelegate.Open(ctx, path, opts...)
	lm.end(dev)
	pr.finish(err == nil)
	if err != nil {
		l.close()
		return nil, withDataHint(err, path, data)
	}
	l.m = m
	if len(inputPaths) == 0 {
		l.inputs = generateInputs(m)
	} else {
		if err := checkInputs(m, inputs, inputPaths); err != nil {
			l.close()
			return nil, err
		}
		l.inputs = inputs
	}
	return l, nil
}

// generateInputs makes one input per model input with its dtype and shape:
// integers 1..3 (valid sizes and indices for most models), floats in
// [-1, 1), booleans at random. The seed is fixed, so runs repeat.
func generateInputs(m *wgdelegate.Model) []wgdelegate.Tensor {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]wgdelegate.Tensor, m.NumInputs())
	for i := range out {
		dt, shape, _ := m.InputInfo(i) // i < NumInputs()
		n := int(wgdelegate.Numel(shape))
		size := dt.Size()
		data := make([]byte, n*size)
		for k := 0; k < n; k++ {
			b := data[k*size:]
			switch dt {
			case serialization.Float32:
				binary.LittleEndian.PutUint32(b, math.Float32bits(float32(r.Float64()*2-1)))
			case serialization.Float64:
				binary.LittleEndian.PutUint64(b, math.Float64bits(r.Float64()*2-1))
			case serialization.Float16:
				binary.LittleEndian.PutUint16(b, wgdelegate.Float32ToHalf(float32(r.Float64()*2-1)))
			case serialization.Int32:
				binary.LittleEndian.PutUint32(b, uint32(1+r.IntN(3)))
			case serialization.Int64:
				binary.LittleEndian.PutUint64(b, uint64(1+r.IntN(3)))
			case serialization.Bool:
				b[0] = byte(r.IntN(2))
			case serialization.Uint8, serialization.Int8:
				b[0] = byte(1 + r.IntN(3))
			}
			// Anything else stays zero.
		}
		out[i] = wgdelegate.Tensor{DType: dt, Shape: shape, Data: data}
	}
	return out
}

// profileResult is a profile summed over the iterations.
type profileResult struct {
	Source     string  `json:"source"`
	Adapter    string  `json:"adapter"`
	Iterations int     `json:"iterations"`
	TotalUS    float64 `json:"total_us"`
	// PassUS is the median over the iterations of the dispatches' time in
	// one compute pass, as Execute runs them (wgdelegate.Profile.Pass):
	// the run's own GPU time, which TotalUS overstates by a pass's cost
	// per dispatch.
	PassUS     float64          `json:"pass_us"`
	Ops        []opTime         `json:"ops"`
	Dispatches []dispatchRecord `json:"dispatches"`

	runs []wgdelegate.Profile // every iteration, for the trace
}

// opTime is one op's share: the mean over iterations of its dispatches'
// summed times.
type opTime struct {
	Graph      int      `json:"graph"`
	Op         int      `json:"op"`
	Name       string   `json:"name"`
	Kernels    []string `json:"kernels"`
	Dispatches int      `json:"dispatches"`
	// Chunks: how many chunks of a weight too large for one buffer the
	// op reads (graph.DispatchInfo.Chunk), 0 when none.
	Chunks  int     `json:"chunks,omitempty"`
	TotalUS float64 `json:"total_us"`
	Percent float64 `json:"percent"`
	chunks  map[int]bool
}

// dispatchRecord is one dispatch's mean time.
type dispatchRecord struct {
	Graph  int       `json:"graph"`
	Index  int       `json:"index"`
	Op     int       `json:"op"`
	Name   string    `json:"name"`
	Kernel string    `json:"kernel"`
	Groups [3]uint32 `json:"groups"`
	US     float64   `json:"us"`
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// summarize averages runs per dispatch and groups the dispatches by op.
func summarize(runs []wgdelegate.Profile) (profileResult, error) {
	res := profileResult{Source: runs[0].Source, Iterations: len(runs), runs: runs}
	first := runs[0]
	for _, r := range runs[1:] {
		if len(r.Graphs) != len(first.Graphs) {
			return res, errors.New("profile: the graphs changed between iterations")
		}
		for g := range r.Graphs {
			if len(r.Graphs[g].Dispatches) != len(first.Graphs[g].Dispatches) {
				return res, errors.New("profile: the dispatches changed between iterations")
			}
		}
		if r.Source == "cpu" {
			res.Source = "cpu"
		}
	}
	passes := make([]float64, len(runs))
	for i, r := range runs {
		passes[i] = us(r.Pass())
	}
	slices.Sort(passes)
	res.PassUS = passes[len(passes)/2]
	type key struct{ g, op int }
	byOp := map[key]*opTime{}
	n := float64(len(runs))
	for g, gp := range first.Graphs {
		for i, d := range gp.Dispatches {
			var sum time.Duration
			for _, r := range runs {
				sum += r.Graphs[g].Dispatches[i].Duration
			}
			mean := us(sum) / n
			res.Dispatches = append(res.Dispatches, dispatchRecord{Graph: g, Index: i, Op: d.Op, Name: d.OpName,
				Kernel: d.Kernel, Groups: d.Groups, US: mean})
			res.TotalUS += mean
			k := key{g, d.Op}
			o := byOp[k]
			if o == nil {
				o = &opTime{Graph: g, Op: d.Op, Name: d.OpName}
				byOp[k] = o
			}
			o.Dispatches++
			o.TotalUS += mean
			if d.Chunked && !o.chunks[d.Chunk] {
				if o.chunks == nil {
					o.chunks = map[int]bool{}
				}
				o.chunks[d.Chunk] = true
				o.Chunks++
			}
			if !slices.Contains(o.Kernels, d.Kernel) {
				o.Kernels = append(o.Kernels, d.Kernel)
			}
		}
	}
	for _, o := range byOp {
		if res.TotalUS > 0 {
			o.Percent = 100 * o.TotalUS / res.TotalUS
		}
		res.Ops = append(res.Ops, *o)
	}
	slices.SortFunc(res.Ops, func(a, b opTime) int {
		if c := cmp.Compare(b.TotalUS, a.TotalUS); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Graph, b.Graph), cmp.Compare(a.Op, b.Op))
	})
	return res, nil
}

// shortKernel is a kernel's name without its template parameters:
// "binary.wgsl{Op:add ...}" becomes "binary.wgsl".
func shortKernel(k string) string {
	if i := strings.IndexByte(k, '{'); i > 0 {
		return k[:i]
	}
	return k
}

func sourceDescription(s string) string {
	switch s {
	case "gpu-timestamp":
		return "gpu-timestamp (GPU timestamp queries around each dispatch)"
	case "cpu":
		return "cpu (no GPU timestamps: each dispatch submitted alone and timed on the host, submission latency included)"
	}
	return s
}

func profileModel(ctx context.Context, o profileOptions, stdout, stderr io.Writer) error {
	log := newLogger(stderr, o.verbose)
	l, err := openModel(ctx, o.model, o.data, o.inputs, wgdelegate.DeviceOptions{Logger: log, CPUThreads: o.cpuThreads}, newProgressOut(stderr, o.verbose), nil,
		append(verifyOption(o.verify), wgdelegate.WithKernels(wgdelegate.KernelConfig{Family: o.kernels, NoElementwiseFusion: o.noFusion, HalfKVCache: o.f16KV}))...)
	if err != nil {
		return err
	}
	defer l.close()
	verifyNote(stderr, l.m, o.verify, o.verbose)
	// Warm-up: the first Execute pays one-time driver work.
	if _, err := l.m.Execute(ctx, l.inputs...); err != nil {
		return err
	}
	runs := make([]wgdelegate.Profile, o.iterations)
	for i := range runs {
		if runs[i], err = l.m.Profile(ctx, l.inputs...); err != nil {
			return err
		}
	}
	res, err := summarize(runs)
	if err != nil {
		return err
	}
	res.Adapter = l.dev.AdapterName() + cpuThreadsNote(l.dev) + kernelsNote(l.dev, o.kernels)
	if o.trace != "" {
		if err := writeTraceFile(o.trace, res); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printProfile(stdout, res, l.m.NumDelegates() > 1)
	if o.trace != "" {
		fmt.Fprintf(stdout, "trace written to %s\n", o.trace)
	}
	return nil
}

func printProfile(w io.Writer, res profileResult, multi bool) {
	fmt.Fprintf(w, "timing: %s\n", sourceDescription(res.Source))
	fmt.Fprintf(w, "adapter: %s\n", res.Adapter)
	fmt.Fprintf(w, "%d dispatches, %.1f µs per run (mean of %d); %.1f µs in one pass as Execute runs them (median)\n\n", len(res.Dispatches), res.TotalUS, res.Iterations, res.PassUS)
	tab := newTable(w)
	head := []any{"op", "name", "kernels", "dispatches", "total µs", "%"}
	if multi {
		head = append([]any{"graph"}, head...)
	}
	tab.row(head...)
	for _, op := range res.Ops {
		var ks []string
		for _, k := range op.Kernels {
			if s := shortKernel(k); !slices.Contains(ks, s) {
				ks = append(ks, s)
			}
		}
		disp := fmt.Sprint(op.Dispatches)
		if op.Chunks > 0 {
			disp += fmt.Sprintf(" (%d chunks)", op.Chunks)
		}
		row := []any{op.Op, op.Name, strings.Join(ks, ","), disp, fmt.Sprintf("%.1f", op.TotalUS), fmt.Sprintf("%.1f", op.Percent)}
		if multi {
			row = append([]any{op.Graph}, row...)
		}
		tab.row(row...)
	}
	tab.flush()
}

// traceEvent is one Chrome trace event (the JSON Trace Event Format that
// Perfetto and chrome://tracing load). Times are in microseconds.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	TS   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

type traceFile struct {
	TraceEvents     []traceEvent `json:"traceEvents"`
	DisplayTimeUnit string       `json:"displayTimeUnit"`
}

// buildTrace lays every timed dispatch of every iteration end to end on one
// timeline, in execution order; each delegate graph is a thread.
func buildTrace(res profileResult) traceFile {
	tf := traceFile{DisplayTimeUnit: "ns"}
	tf.TraceEvents = append(tf.TraceEvents, traceEvent{Name: "process_name", Cat: "__metadata", Ph: "M", PID: 1,
		Args: map[string]any{"name": "wgdelegate " + res.Source}})
	if len(res.runs) > 0 {
		for g := range res.runs[0].Graphs {
			tf.TraceEvents = append(tf.TraceEvents, traceEvent{Name: "thread_name", Cat: "__metadata", Ph: "M", PID: 1, TID: g + 1,
				Args: map[string]any{"name": fmt.Sprintf("delegate graph %d", g)}})
		}
	}
	ts := 0.0
	for it, r := range res.runs {
		for g, gp := range r.Graphs {
			for i, d := range gp.Dispatches {
				dur := us(d.Duration)
				tf.TraceEvents = append(tf.TraceEvents, traceEvent{
					Name: d.OpName, Cat: "dispatch," + res.Source, Ph: "X", TS: ts, Dur: dur, PID: 1, TID: g + 1,
					Args: map[string]any{"iteration": it, "dispatch": i, "op": d.Op, "kernel": d.Kernel,
						"groups": d.Groups, "source": res.Source},
				})
				ts += dur
			}
		}
	}
	return tf
}

func writeTraceFile(path string, res profileResult) error {
	b, err := json.Marshal(buildTrace(res))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

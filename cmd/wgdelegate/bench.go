package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/serialization"
)

const benchUsage = `Usage:
  wgdelegate bench [flags] MODEL

Loads MODEL, executes it once (the first execute), then N more times, and
reports what loading and executing cost:

  load_ms                 time to load the model (the device is opened first
                          and not counted)
  first_execute_ms        the first Execute
  execute_ms              min, median and max of the next N
  dispatches_per_execute  GPU dispatches one Execute records
  submits_per_execute     GPU submissions per Execute (one per delegate call)
  allocs_per_execute      Go heap allocations per Execute (mean over the N)
  load_heap_bytes         Go heap allocated during the load
  gpu_bytes               GPU memory the model holds (tensor, staging and
                          uniform buffers)
  pipelines               compute pipelines created and cache hits during
                          the load
  packed_cache            packed-weight cache hits, misses (corrupt: misses
                          whose entry failed its checksum) and bytes
  cpu_threads             llvmpipe's thread setting when not the default
                          (-1 inline, N workers; see --cpu-threads)
  llm                     for a Llama-style decoder (see 'wgdelegate help
                          generate'): prefill and decode tokens/s and time
                          to first token (min, median, max over 3 runs of a
                          prompt of up to max_tokens_per_execute ids, then
                          up to 32 greedy decode steps)

Without --input, inputs are generated: small random values of each input's
dtype and shape (integers 1..3, floats in [-1, 1)). Runs longer than a
second show progress on stderr (on a terminal, or with --verbose).

Flags:
  --iterations N       timed executes after the first (default 10)
  --packed-cache DIR   use DIR as the packed-weight cache; a cache that
                       cannot be read or written, or is corrupt, gets one
                       warning line on stderr (the run goes on without it)
  --json               print the results as one JSON object
  --no-fusion          do not fuse elementwise chains: one dispatch per op
  --f16-kv-cache       hold KV caches only the cache ops use as halves (enable_f16_kv_cache)
  --cpu-threads N      compute threads of a CPU adapter (llvmpipe/lavapipe):
                       "inline" runs every dispatch on the driver's own
                       thread, N (1..64) asks for N workers, "default" (or 0)
                       keeps LP_NUM_THREADS, else one worker per CPU. Inline
                       suits models of many small dispatches (on 2 vCPUs a
                       tiny dispatch costs 2-9 µs instead of 45-85 µs; a
                       27-dispatch decoder step ran 2.3-2.9 -> 0.8-0.9 ms) but
                       runs big kernels on one core (on a quiet host a
                       1M-element elementwise chain went 15 -> 21 ms). Other
                       adapters ignore it.
  --kernels F          kernel family: auto (default: cpu for a CPU adapter
                       such as lavapipe, gpu for a GPU), cpu or gpu (see
                       'wgdelegate help run')
  --data FILE          a .ptd file holding named constants (repeatable)
  --input FILE         a .npy file for the next model input (repeatable)
  --verify             check every weight against its SHA-256 key while
                       loading (see 'wgdelegate help run'); the hashing
                       counts in load_ms
  -v, --verbose        debug logs on stderr
  -h, --help           print this help

Examples:
  wgdelegate bench model.pte
  wgdelegate bench --iterations 50 --json model.pte
  # cold, then warm, load through the packed-weight cache
  wgdelegate bench --packed-cache /tmp/wgd-cache --json model.pte
  wgdelegate bench --packed-cache /tmp/wgd-cache --json model.pte
`

// benchOptions are the parsed arguments of "wgdelegate bench".
type benchOptions struct {
	measureOptions
	packedCache string
}

// measureOptions are the options bench and profile share: the model,
// how it is loaded and run, and how the result is printed.
type measureOptions struct {
	model      string
	data       []string
	inputs     []string
	iterations int
	json       bool
	f16KV      bool
	noFusion   bool
	verbose    bool
	verify     bool                    // WithVerifyData (--verify)
	cpuThreads int                     // DeviceOptions.CPUThreads (--cpu-threads)
	kernels    wgdelegate.KernelFamily // KernelConfig.Family (--kernels)
}

// parse applies args to o's flags and to own, the command cmd's own
// flags, and takes the one model.
func (o *measureOptions) parse(cmd string, args []string, own ...flagSpec) error {
	specs := append(own,
		flagSpec{names: []string{"iterations", "n"}, value: true, set: iterationsFlag(&o.iterations)},
		flagSpec{names: []string{"json"}, set: func(string) error { o.json = true; return nil }},
		flagSpec{names: []string{"no-fusion"}, set: func(string) error { o.noFusion = true; return nil }},
		flagSpec{names: []string{"f16-kv-cache"}, set: func(string) error { o.f16KV = true; return nil }},
		flagSpec{names: []string{"cpu-threads"}, value: true, set: cpuThreadsFlag(&o.cpuThreads)},
		flagSpec{names: []string{"kernels"}, value: true, set: kernelsFlag(&o.kernels)},
		flagSpec{names: []string{"data"}, value: true, set: appendFlag(&o.data)},
		flagSpec{names: []string{"input"}, value: true, set: appendFlag(&o.inputs)},
		flagSpec{names: []string{"verify"}, set: func(string) error { o.verify = true; return nil }},
		flagSpec{names: []string{"verbose", "v"}, set: func(string) error { o.verbose = true; return nil }},
	)
	pos, err := parseArgs(cmd, args, specs)
	if err != nil {
		return err
	}
	o.model, err = oneModel(cmd, pos)
	return err
}

func parseBenchArgs(args []string) (benchOptions, error) {
	var o benchOptions
	o.iterations = 10
	err := o.parse("bench", args, packedCacheFlag(&o.packedCache))
	return o, err
}

func benchCommand(args []string, stdout, stderr io.Writer) error {
	return parseAndRun(args, stdout, stderr, parseBenchArgs, benchModel)
}

// benchResult is what bench prints; the JSON names are a stable interface.
type benchResult struct {
	LoadMS               float64      `json:"load_ms"`
	FirstExecuteMS       float64      `json:"first_execute_ms"`
	ExecuteMS            execStats    `json:"execute_ms"`
	DispatchesPerExecute int          `json:"dispatches_per_execute"`
	SubmitsPerExecute    int          `json:"submits_per_execute"`
	AllocsPerExecute     float64      `json:"allocs_per_execute"`
	LoadHeapBytes        uint64       `json:"load_heap_bytes"`
	GPUBytes             int64        `json:"gpu_bytes"`
	Pipelines            pipeStats    `json:"pipelines"`
	PackedCache          packedCStats `json:"packed_cache"`
	CPUThreads           int          `json:"cpu_threads,omitempty"`
	LLM                  *llmBench    `json:"llm,omitempty"`
}

// llmBench is bench's generation measurement for a decoder model.
type llmBench struct {
	PromptTokens  int       `json:"prompt_tokens"`
	DecodeSteps   int       `json:"decode_steps"`
	MaxSeqLen     int64     `json:"max_seq_len"`
	PrefillTokPS  execStats `json:"prefill_tokens_per_s"`
	DecodeTokPS   execStats `json:"decode_tokens_per_s"`
	TimeToFirstMS execStats `json:"time_to_first_token_ms"`
}

type execStats struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

type pipeStats struct {
	Created int64 `json:"created"`
	Hits    int64 `json:"hits"`
}

type packedCStats struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Corrupt int64 `json:"corrupt"`
	Bytes   int64 `json:"bytes"`
}

// loadMeasure records the cost of one load: wall time, Go heap allocated
// (TotalAlloc delta) and the device's pipeline counters. Its methods do
// nothing on a nil receiver.
type loadMeasure struct {
	start     time.Time
	heap0     uint64
	pipes0    wgdelegate.PipelineStats
	elapsed   time.Duration
	heapBytes uint64
	pipes     wgdelegate.PipelineStats
}

func (lm *loadMeasure) begin(dev *wgdelegate.Device) {
	if lm == nil {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	lm.heap0 = ms.TotalAlloc
	lm.pipes0 = dev.PipelineStats()
	lm.start = time.Now()
}

func (lm *loadMeasure) end(dev *wgdelegate.Device) {
	if lm == nil {
		return
	}
	lm.elapsed = time.Since(lm.start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	lm.heapBytes = ms.TotalAlloc - lm.heap0
	p := dev.PipelineStats()
	lm.pipes = wgdelegate.PipelineStats{Hits: p.Hits - lm.pipes0.Hits, Created: p.Created - lm.pipes0.Created}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func benchModel(ctx context.Context, o benchOptions, stdout, stderr io.Writer) error {
	log := newLogger(stderr, o.verbose)
	var lm loadMeasure
	opts := []wgdelegate.Option{wgdelegate.WithKernels(wgdelegate.KernelConfig{Family: o.kernels, NoElementwiseFusion: o.noFusion, HalfKVCache: o.f16KV})}
	if o.packedCache != "" {
		opts = append(opts, wgdelegate.WithPackedCache(o.packedCache))
	}
	opts = append(opts, verifyOption(o.verify)...)
	l, err := openModel(ctx, o.model, o.data, o.inputs, wgdelegate.DeviceOptions{Logger: log, CPUThreads: o.cpuThreads}, newProgressOut(stderr, o.verbose), &lm, opts...)
	if err != nil {
		return err
	}
	defer l.close()
	verifyNote(stderr, l.m, o.verify, o.verbose)
	m := l.m
	warnPackedCache(stderr, m)
	res := benchResult{
		LoadMS:        ms(lm.elapsed),
		LoadHeapBytes: lm.heapBytes,
		Pipelines:     pipeStats{Created: lm.pipes.Created, Hits: lm.pipes.Hits},
		CPUThreads:    l.dev.CPUThreads(),
	}

	pr := newIterProgress(newProgressOut(stderr, o.verbose), filepath.Base(o.model), o.iterations+1)
	defer pr.finish()
	start := time.Now()
	if _, err := m.Execute(ctx, l.inputs...); err != nil {
		return err
	}
	res.FirstExecuteMS = ms(time.Since(start))
	pr.set(1)

	times := make([]time.Duration, o.iterations)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range times {
		t := time.Now()
		if _, err := m.Execute(ctx, l.inputs...); err != nil {
			return err
		}
		times[i] = time.Since(t)
		pr.set(i + 2)
	}
	runtime.ReadMemStats(&after)
	pr.finish()
	res.AllocsPerExecute = float64(after.Mallocs-before.Mallocs) / float64(len(times))
	slices.Sort(times)
	res.ExecuteMS = execStats{Min: ms(times[0]), Median: ms(median(times)), Max: ms(times[len(times)-1])}

	st := m.MemoryStats()
	res.DispatchesPerExecute = st.NumDispatches
	res.SubmitsPerExecute = m.NumCalls()
	res.GPUBytes = st.TotalBytes()
	pc := m.PackedCacheStats()
	res.PackedCache = packedCStats{Hits: int64(pc.Hits), Misses: int64(pc.Misses), Corrupt: int64(pc.Corrupt), Bytes: pc.Bytes}
	if res.LLM, err = benchLLM(ctx, o.model, m); err != nil {
		return err
	}

	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printBench(stdout, res)
	return nil
}

// median of sorted, non-empty ds.
func median(ds []time.Duration) time.Duration {
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

func printBench(w io.Writer, r benchResult) {
	tab := newTable(w)
	tab.row("load", fmt.Sprintf("%.1f ms", r.LoadMS))
	tab.row("first execute", fmt.Sprintf("%.2f ms", r.FirstExecuteMS))
	tab.row("execute", fmt.Sprintf("min %.2f ms, median %.2f ms, max %.2f ms", r.ExecuteMS.Min, r.ExecuteMS.Median, r.ExecuteMS.Max))
	tab.row("dispatches per execute", r.DispatchesPerExecute)
	tab.row("submits per execute", r.SubmitsPerExecute)
	tab.row("allocs per execute", fmt.Sprintf("%.1f", r.AllocsPerExecute))
	tab.row("load heap", fmt.Sprintf("%d bytes (%s)", r.LoadHeapBytes, mib(int64(r.LoadHeapBytes))))
	tab.row("gpu memory", fmt.Sprintf("%d bytes (%s)", r.GPUBytes, mib(r.GPUBytes)))
	tab.row("pipelines", fmt.Sprintf("%d created, %d cache hits", r.Pipelines.Created, r.Pipelines.Hits))
	tab.row("packed cache", fmt.Sprintf("%d hits, %d misses (%d corrupt), %d bytes", r.PackedCache.Hits, r.PackedCache.Misses, r.PackedCache.Corrupt, r.PackedCache.Bytes))
	switch {
	case r.CPUThreads == wgdelegate.CPUThreadsInline:
		tab.row("cpu threads", "inline")
	case r.CPUThreads > 0:
		tab.row("cpu threads", r.CPUThreads)
	}
	if l := r.LLM; l != nil {
		tab.row("prefill", fmt.Sprintf("%d tokens: median %.1f tok/s (%.1f-%.1f)", l.PromptTokens, l.PrefillTokPS.Median, l.PrefillTokPS.Min, l.PrefillTokPS.Max))
		tab.row("decode", fmt.Sprintf("%d steps: median %.1f tok/s (%.1f-%.1f)", l.DecodeSteps, l.DecodeTokPS.Median, l.DecodeTokPS.Min, l.DecodeTokPS.Max))
		tab.row("time to first token", fmt.Sprintf("median %.2f ms (%.2f-%.2f)", l.TimeToFirstMS.Median, l.TimeToFirstMS.Min, l.TimeToFirstMS.Max))
	}
	tab.flush()
}

// iterProgress shows a benchmark's executes once they have run longer
// than the progressOut's delay (the load's own progress is newProgress's):
// a redrawn bar on a terminal, a plain line per second otherwise.
type iterProgress struct {
	w      io.Writer // nil: show nothing
	tty    bool
	delay  time.Duration
	label  string
	total  int
	start  time.Time
	mu     sync.Mutex
	last   time.Time // last plain line
	shown  bool
	closed bool
}

func newIterProgress(po progressOut, label string, total int) *iterProgress {
	return &iterProgress{w: po.w, tty: po.tty, delay: po.delay, label: label, total: total, start: time.Now()}
}

// set reports that done executes have finished.
func (p *iterProgress) set(done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := time.Since(p.start)
	if p.w == nil || p.closed || elapsed < p.delay {
		return
	}
	line := fmt.Sprintf("bench %s: execute %d/%d", p.label, done, p.total)
	if p.tty {
		const width = 24
		n := done * width / max(p.total, 1)
		fmt.Fprintf(p.w, "\r\033[K[%s%s] %s (%.1fs)", strings.Repeat("#", n), strings.Repeat(" ", width-n), line, elapsed.Seconds())
		p.shown = true
		return
	}
	if done == p.total || time.Since(p.last) >= time.Second {
		fmt.Fprintf(p.w, "%s (%.1fs)\n", line, elapsed.Seconds())
		p.last = time.Now()
		p.shown = true
	}
}

// finish ends the bar's line; it is safe to call twice.
func (p *iterProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.shown && p.tty {
		fmt.Fprintln(p.w)
	}
}

// benchLLM measures generation when the model at path is a Llama-style
// decoder (nil, nil when it is not): 3 runs of a prompt of up to
// MaxTokens ids (at most half the cache) and up to 32 greedy decode steps.
func benchLLM(ctx context.Context, path string, m *wgdelegate.Model) (*llmBench, error) {
	mf, err := serialization.MapFile(path)
	if err != nil {
		return nil, err
	}
	info, err := llm.InspectProgram(mf.Bytes())
	mf.Close()
	if err != nil {
		return nil, nil
	}
	r, err := llm.New(m, info)
	if err != nil {
		return nil, nil
	}
	defer r.Close()
	c := r.Convention()
	p := int(min(c.MaxTokens, max(c.MaxSeqLen/2, 1)))
	steps := int(min(32, c.MaxSeqLen-int64(p)))
	prompt := make([]int32, p)
	for i := range prompt {
		prompt[i] = int32(1 + i%int(max(c.Vocab-1, 1)))
	}
	const runs = 3
	var pre, dec, ttft []float64
	for range runs {
		r.Reset()
		res, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: steps + 1})
		if err != nil {
			return nil, fmt.Errorf("generation: %w", err)
		}
		s := res.Stats
		pre = append(pre, s.PromptTokensPerSecond())
		dec = append(dec, s.DecodeTokensPerSecond())
		ttft = append(ttft, ms(s.TimeToFirstToken))
	}
	stat := func(v []float64) execStats {
		slices.Sort(v)
		return execStats{Min: v[0], Median: v[len(v)/2], Max: v[len(v)-1]}
	}
	return &llmBench{PromptTokens: p, DecodeSteps: steps, MaxSeqLen: c.MaxSeqLen, PrefillTokPS: stat(pre), DecodeTokPS: stat(dec), TimeToFirstMS: stat(ttft)}, nil
}

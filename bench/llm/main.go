// Command llm benchmarks greedy Llama decoding: a random-weight model of a
// llama2.c TinyStories shape, written as an ExecuTorch Vulkan llama export
// (internal/models.Llama, exporter memory plan), loaded through the public
// API and decoded greedily through the llm package's Runner, one token per
// step with input_pos advancing, from token 1 (BOS) at position 0, as
// llama2.c's run.c does with an empty prompt. By default the tokens are
// picked on the device and steps pipelined (llm's device head); -pick host
// reads every step's logits back and picks on the host, and -pick both
// alternates the two in one process and prints their ratio. It reports
// tokens/s (the median and range over -runs), milliseconds per step, GPU
// dispatches per step and, for the device pick, the host's time per step
// spent submitting and waiting:
//
//	go run ./bench/llm -shape 260k -n 256
//	go run ./bench/llm -shape 110m -n 32 -runc /path/to/llama2.c/run.c
//
// Beside model.pte and weights.ptd it always writes a llama2.c
// tokenizer.bin whose piece for token i is "<i>", so that the model also
// runs with `wgdelegate generate --tokenizer tokenizer.bin` (and run.c).
// With -runc and a C compiler on PATH (cc or gcc) it also writes the same
// weights as a llama2.c checkpoint, compiles run.c (-O3 -march=native -fopenmp for 110m,
// -O2 on one thread for 260k, unless -cflags and -threads say otherwise),
// runs it with temperature 0 for the same number of steps, and prints its
// "achieved tok/s", the ratio, and whether its greedy tokens equal ours.
// The runs alternate (ours, run.c's, ours, ...), so that on a shared
// machine both see the same load. -baseline-kernels loads the model a
// second time with the tiled kernel for one-row quantized linears
// (KernelConfig.NoQGEMV), or with -baseline-skip on the kernels a
// KernelConfig.SkipKernels list leaves (issue 33's new kernels skipped:
// the ones they replaced), and alternates its runs with the default
// load's, a same-process comparison of the two kernels. -long P (the 1b
// shape's default: 1024) then times -n steps more from position P,
// decoding up to it untimed: the speed at a long context, where every
// step's attention reads P cached positions. -profile prints one
// mid-sequence step's GPU time in one pass, as Execute runs it, beside its
// dispatches' times each in a pass of its own (which add a pass's cost per
// dispatch). Both count tokens/s the same way: steps
// after the first, over the time they took. The classifier is a weight of
// its own unless -shared makes it the embedding, as in the TinyStories
// checkpoints.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// shape is one model size with its defaults for the run.c comparison.
type shape struct {
	cfg     models.LlamaConfig
	steps   int
	cflags  string
	threads int  // OMP_NUM_THREADS for run.c; 0 leaves it unset
	shared  bool // the classifier is the embedding, always
	long    int  // -long's default: the long-context point's position
}

var shapes = map[string]shape{
	"110m": {cfg: models.Stories110M, steps: 32, cflags: "-O3 -march=native -fopenmp"},
	"1b":   {cfg: models.Llama32_1B, steps: 16, cflags: "-O3 -march=native -fopenmp", shared: true, long: 1024},
	"260k": {cfg: models.Stories260K, steps: 256, cflags: "-O2", threads: 1},
}

func main() {
	shapeName := flag.String("shape", "260k", "model shape: 260k (stories260K: dim 64, 5 layers, GQA 8/4, vocab 512), 110m (stories110M: dim 768, 12 layers, vocab 32000) or 1b (Llama 3.2 1B: dim 2048, hidden 8192, 16 layers, GQA 32/8, vocab 128256, tied classifier)")
	steps := flag.Int("n", 0, "decode steps per run (0: 256 for 260k, 32 for 110m); at most the cache length")
	runs := flag.Int("runs", 3, "timed runs (each restarts at input_pos 0)")
	seq := flag.Int64("seq", 0, "KV cache length, seq_len (0: the shape's: 512 for 260k, 256 for 110m)")
	seed := flag.Uint64("seed", 1, "weight seed")
	split := flag.Bool("split-cache", false, "write update_cache + llama.custom_sdpa instead of sdpa_with_kv_cache")
	out := flag.String("out", "", "directory to write model.pte, weights.ptd and tokenizer.bin (and model.bin, run for the run.c comparison); a temporary one when empty")
	runc := flag.String("runc", "", "path to llama2.c's run.c; when set and a C compiler is on PATH, run.c runs the same weights")
	cflags := flag.String("cflags", "", "compiler flags for run.c (default: -O3 -march=native -fopenmp for 110m, -O2 for 260k)")
	threads := flag.Int("threads", -1, "OMP_NUM_THREADS for run.c (-1: 1 for 260k, unset for 110m; 0: unset)")
	profile := flag.Bool("profile", false, "print one mid-sequence step's GPU time in one pass, as Execute runs it, and its dispatch times, each dispatch in a pass of its own, summed by op (wgdelegate.Model.Profile)")
	q4 := flag.Int64("q4", 0, "write every linear as et_vk.linear_q4gsw with 4-bit weights in groups of this size (-qmode 4w); run.c then runs the float weights, so only the speeds compare")
	pick := flag.String("pick", "device", "where greedy tokens are picked: device (llm's device head, steps pipelined), host (every step's logits read back), or both (alternating runs, same process)")
	cpuThreads := flag.String("cpu-threads", "default", "llvmpipe compute workers for wgdelegate's device: inline (no worker pool: a few µs per dispatch instead of 15-80, one core), default, or a count (wgdelegate.DeviceOptions.CPUThreads)")
	kernels := flag.String("kernels", "auto", "kernel family (wgdelegate.KernelConfig.Family): auto (cpu on a CPU adapter such as lavapipe, gpu on a GPU), cpu or gpu")
	baseline := flag.Bool("baseline-kernels", false, "also load the model with the tiled kernel for one-row quantized linears (KernelConfig.NoQGEMV) and alternate runs between the two loads in this process")
	baselineSkip := flag.String("baseline-skip", "", "with -baseline-kernels: the baseline load passes over these linear-family kernels (KernelConfig.SkipKernels, e.g. gpu/q4gemv,gpu/qcgemv,gpu/tiled128,gpu/skinny: the kernels before issue 33's) instead of setting NoQGEMV")
	shared := flag.Bool("shared", false, "the classifier is the embedding, as in the TinyStories checkpoints (random weights then tend to echo token 1, BOS, at once, which stops run.c)")
	layers := flag.Int64("layers", 0, "decoder layers (0: the shape's): fewer layers of a large shape fit a smaller host")
	dyn8 := flag.Bool("8da4w", false, "with -q4: write every linear as 8da4w (choose_qparams_affine + et_vk.linear_dq8ca_q4gsw, -qmode 8da4w)")
	embedQ4 := flag.Int64("embed-q4", 0, "write the embedding as et_vk.embedding_q4gsw with 4-bit rows in groups of this size (-E 4,G)")
	long := flag.Int("long", -1, "after the runs, time -n steps more from this position on (decoding greedily up to it, untimed): decode speed at a long context, where attention reads a long cache (-1: the shape's, 1024 for 1b, none for the others; 0: none); the cache grows to fit unless -seq is set")
	flag.Parse()

	sh, ok := shapes[*shapeName]
	if !ok {
		log.Fatalf("llm: unknown -shape %q (260k, 110m or 1b)", *shapeName)
	}
	cfg := sh.cfg
	cfg.Seed, cfg.SplitCache, cfg.Q4Group = *seed, *split, *q4
	cfg.Dynamic8, cfg.EmbeddingQ4Group = *dyn8, *embedQ4
	if *layers > 0 {
		cfg.Layers = *layers
	}
	if *seq > 0 {
		cfg.MaxSeq = *seq
	}
	n := *steps
	if n == 0 {
		n = sh.steps
	}
	if *long < 0 {
		*long = sh.long
	}
	if need := int64(*long + n); *long > 0 && *seq == 0 && cfg.MaxSeq < need {
		cfg.MaxSeq = (need + 255) / 256 * 256
	}
	if *long > 0 && int64(*long+n) > cfg.MaxSeq {
		log.Fatalf("llm: -long %d plus -n %d is past the cache length %d", *long, n, cfg.MaxSeq)
	}
	if n < 2 || int64(n) > cfg.MaxSeq || *runs < 1 {
		log.Fatalf("llm: -n must be 2..%d (the cache length) and -runs at least 1", cfg.MaxSeq)
	}
	if *cflags == "" {
		*cflags = sh.cflags
	}
	if *threads < 0 {
		*threads = sh.threads
	}
	dir := *out
	if dir == "" {
		d, err := os.MkdirTemp("", "wgd-llm-")
		if err != nil {
			log.Fatal(err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if *pick != "device" && *pick != "host" && *pick != "both" {
		log.Fatalf("llm: -pick %q is not device, host or both", *pick)
	}
	o := options{pick: *pick, name: *shapeName, shared: *shared || sh.shared, steps: n, runs: *runs, dir: dir, runc: *runc, cflags: *cflags, threads: *threads, profile: *profile, q4: *q4, baseline: *baseline, baselineSkip: *baselineSkip, long: *long}
	fam, err := wgdelegate.ParseKernelFamily(*kernels)
	if err != nil {
		log.Fatalf("llm: -kernels: %v", err)
	}
	o.kernels = fam
	switch *cpuThreads {
	case "inline":
		o.cpuThreads = wgdelegate.CPUThreadsInline
	case "default":
	default:
		v, err := strconv.Atoi(*cpuThreads)
		if err != nil || v < 0 || v > wgdelegate.MaxCPUThreads {
			log.Fatalf("llm: -cpu-threads %q is not inline, default or a worker count 0..%d", *cpuThreads, wgdelegate.MaxCPUThreads)
		}
		o.cpuThreads = v
	}
	_, err = run(cfg, o)
	if *out == "" {
		os.RemoveAll(dir)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// options are the benchmark's settings besides the model's.
type options struct {
	name         string // the shape's name, for the report
	shared       bool   // the classifier is the embedding
	steps, runs  int
	dir          string
	runc, cflags string
	threads      int
	profile      bool  // print where one step's GPU time goes
	q4           int64 // the graph's linears are 4-bit (LlamaConfig.Q4Group)
	// baseline also loads the model with KernelConfig.NoQGEMV and times
	// it in alternation with the default load.
	baseline bool
	// baselineSkip, when set, is the baseline load's
	// KernelConfig.SkipKernels instead of NoQGEMV.
	baselineSkip string
	// kernels is the loads' kernel family (-kernels)
	kernels wgdelegate.KernelFamily
	// cpuThreads is the device's llvmpipe worker setting
	// (wgdelegate.DeviceOptions.CPUThreads); 0 keeps the default device.
	cpuThreads int
	// pick is where the greedy tokens are picked: device, host or both.
	pick string
	// long is the long-context point's position (0: none).
	long int
}

// result is what one benchmark measured.
type result struct {
	rates, stepMs []float64 // tok/s per run; ms of every timed step
	// baseRates and baseStepMs are the same for the -baseline-kernels load.
	baseRates, baseStepMs []float64
	// fixedMs are the times of steps that repeat one input_pos: the
	// graph is then not recorded again, as it is for every new position.
	fixedMs []float64
	// longStepMs are the times of the o.steps steps from position
	// o.long on (-long).
	longStepMs []float64
	// hostRates and hostStepMs are the host pick's, with -pick both.
	hostRates, hostStepMs []float64
	// submitUs and waitUs are the host's µs per step submitting steps and
	// waiting for tokens, per device-pick run.
	submitUs, waitUs []float64
	dispatches       int
	records          wgdelegate.RecordStats // after the timed runs
	ours             []int32
	// cRates and theirs are run.c's tok/s per run and its tokens (empty
	// when run.c did not run); mismatch is the first step where the
	// tokens differ, -1 when they agree as far as both go.
	cRates   []float64
	theirs   []int32
	mismatch int
}

// run builds, writes and loads the model, then times o.runs decodes,
// alternating with run.c's when it runs, so that both see the same load
// on a shared machine.
func run(cfg models.LlamaConfig, o options) (*result, error) {
	ctx := context.Background()
	w := models.RandomLlamaWeights(cfg)
	params := cfg.Params()
	if o.shared {
		w.Output = w.Embedding
		params -= cfg.Vocab * cfg.Dim
	}
	fmt.Printf("shape %s: dim %d, hidden %d, %d layers, %d heads (%d kv), vocab %d, seq_len %d, shared classifier %v: %.1fM parameters\n",
		o.name, cfg.Dim, cfg.Hidden, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.Vocab, cfg.MaxSeq, o.shared, float64(params)/1e6)
	start := time.Now()
	l, err := models.NewLlama(cfg, w)
	if err != nil {
		return nil, err
	}
	f, err := models.Encode(l.B, true)
	if err != nil {
		return nil, err
	}
	pte, ptd := filepath.Join(o.dir, "model.pte"), filepath.Join(o.dir, "weights.ptd")
	if err := os.WriteFile(pte, f.PTE, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(ptd, f.PTD, 0o644); err != nil {
		return nil, err
	}
	l.B, f = nil, models.Files{} // the GPU model is read from the files
	if o.runc == "" {
		// Nothing reads the weights again: give their memory back before
		// the load (a 1B-shaped float32 model holds 5 GB here).
		w, l = nil, nil
		debug.FreeOSMemory()
	}
	tok := filepath.Join(o.dir, "tokenizer.bin")
	var buf bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&buf, int(cfg.Vocab)); err != nil {
		return nil, err
	}
	if err := os.WriteFile(tok, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	fmt.Printf("wrote %s, %s (%.1f MiB of weights) and %s in %v\n", pte, ptd, float64(fileSize(ptd))/(1<<20), tok, time.Since(start).Round(time.Millisecond))

	var runC func() ([]int32, float64, error)
	if o.runc != "" {
		cc := ""
		for _, c := range []string{"cc", "gcc"} {
			if p, err := exec.LookPath(c); err == nil {
				cc = p
				break
			}
		}
		if cc == "" {
			fmt.Println("run.c: skipped (no cc or gcc on PATH)")
		} else if runC, err = prepareC(cc, cfg, w, o); err != nil {
			return nil, err
		}
	} else {
		fmt.Println("run.c: skipped (no -runc)")
	}

	start = time.Now()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{CPUThreads: o.cpuThreads})
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	lopts := []wgdelegate.Option{wgdelegate.WithDataFiles(ptd), wgdelegate.WithDevice(dev)}
	kc := wgdelegate.KernelConfig{Family: o.kernels}
	m, err := wgdelegate.Open(ctx, pte, append(lopts, wgdelegate.WithKernels(kc))...)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	fmt.Printf("loaded in %v (cpu threads %s, %v kernels)\n", time.Since(start).Round(time.Millisecond), threadsName(o.cpuThreads), dev.KernelFamily(kc))
	st := m.MemoryStats()
	fmt.Printf("device memory %.1f MiB", float64(st.TotalBytes())/(1<<20))
	if st.NumChunkedWeights > 0 {
		fmt.Printf(" (%d weights too large for one buffer held in %d chunks)", st.NumChunkedWeights, st.NumWeightChunks)
	}
	fmt.Println()
	var base *wgdelegate.Model
	if o.baseline {
		if o.baselineSkip != "" {
			kc.SkipKernels = o.baselineSkip
		} else {
			kc.NoQGEMV = true
		}
		base, err = wgdelegate.Open(ctx, pte, append(lopts, wgdelegate.WithKernels(kc))...)
		if err != nil {
			return nil, err
		}
		defer base.Close()
	}

	runner, err := llm.New(m, llm.ProgramInfo{MaxSeqLen: cfg.MaxSeq})
	if err != nil {
		return nil, err
	}
	defer runner.Close()
	res := &result{mismatch: -1}
	for r := range o.runs {
		ids, times, st, err := decode(ctx, runner, o.steps, o.pick == "host")
		if err != nil {
			return nil, err
		}
		if r == 0 {
			res.ours = ids
		} else if !slices.Equal(ids, res.ours) {
			return nil, fmt.Errorf("llm: run %d decoded other tokens than run 0", r)
		}
		var total time.Duration
		for _, t := range times[1:] {
			total += t
			res.stepMs = append(res.stepMs, float64(t)/float64(time.Millisecond))
		}
		res.rates = append(res.rates, float64(o.steps-1)/total.Seconds())
		res.dispatches = m.MemoryStats().NumDispatches
		if st.OnDevice {
			res.dispatches++ // the head's argmax
			res.submitUs = append(res.submitUs, float64(st.Submit.Microseconds())/float64(o.steps))
			res.waitUs = append(res.waitUs, float64(st.Wait.Microseconds())/float64(o.steps))
		}
		res.records = m.RecordStats()
		if o.pick == "both" {
			ids, times, _, err := decode(ctx, runner, o.steps, true)
			if err != nil {
				return nil, err
			}
			if !slices.Equal(ids, res.ours) {
				return nil, fmt.Errorf("llm: the host pick decoded other tokens than the device pick")
			}
			var total time.Duration
			for _, t := range times[1:] {
				total += t
				res.hostStepMs = append(res.hostStepMs, float64(t)/float64(time.Millisecond))
			}
			res.hostRates = append(res.hostRates, float64(o.steps-1)/total.Seconds())
		}
		if base != nil {
			br, err := llm.New(base, llm.ProgramInfo{MaxSeqLen: cfg.MaxSeq})
			if err != nil {
				return nil, err
			}
			ids, times, _, err := decode(ctx, br, o.steps, o.pick == "host")
			br.Close()
			if err != nil {
				return nil, err
			}
			if !slices.Equal(ids, res.ours) {
				return nil, fmt.Errorf("llm: the baseline-kernels load decoded other tokens than the default one")
			}
			var total time.Duration
			for _, t := range times[1:] {
				total += t
				res.baseStepMs = append(res.baseStepMs, float64(t)/float64(time.Millisecond))
			}
			res.baseRates = append(res.baseRates, float64(o.steps-1)/total.Seconds())
		}
		if runC != nil {
			ids, rate, err := runC()
			if err != nil {
				return nil, err
			}
			if r == 0 {
				res.theirs = ids
			}
			res.cRates = append(res.cRates, rate)
		}
	}
	// The same step again and again, at the middle of the decode (the
	// average attention length): what a step costs without re-recording
	// the graph for a new input_pos.
	mid := int64(o.steps / 2)
	midIn := []wgdelegate.Tensor{wgdelegate.FromInt32([]int64{1, 1}, []int32{res.ours[mid-1]}), wgdelegate.FromInt64([]int64{1}, []int64{mid})} // as models.Llama.Inputs
	for i := range o.steps {
		t0 := time.Now()
		if _, err := m.Execute(ctx, midIn...); err != nil {
			return nil, err
		}
		if i > 0 {
			res.fixedMs = append(res.fixedMs, float64(time.Since(t0))/float64(time.Millisecond))
		}
	}
	if o.long > 0 {
		// Greedy from position 0 to o.long untimed, then o.steps timed:
		// the same tokens as any run's up to o.steps.
		_, times, _, err := decode(ctx, runner, o.long+o.steps, o.pick == "host")
		if err != nil {
			return nil, fmt.Errorf("llm: -long: %w", err)
		}
		for _, t := range times[o.long:] {
			res.longStepMs = append(res.longStepMs, float64(t)/float64(time.Millisecond))
		}
	}
	if o.profile {
		p, err := m.Profile(ctx, midIn...)
		if err != nil {
			return nil, err
		}
		printProfile(p)
	}
	for i := range min(len(res.ours), len(res.theirs)) {
		if res.ours[i] != res.theirs[i] {
			res.mismatch = i
			break
		}
	}
	if k := len(res.theirs); runC != nil && res.mismatch < 0 && k < len(res.ours) && res.ours[k] != 1 {
		// run.c stops early only when it generates token 1 (BOS).
		res.mismatch = k
	}
	res.print(o)
	return res, nil
}

func (res *result) print(o options) {
	fmt.Printf("wgdelegate: %s tok/s over %d runs of %d steps; %.2f ms/step (median, p10 %.2f, p90 %.2f); %d dispatches/step\n",
		summary(res.rates), o.runs, o.steps, quantile(res.stepMs, 0.5), quantile(res.stepMs, 0.1), quantile(res.stepMs, 0.9), res.dispatches)
	if len(res.submitUs) > 0 {
		fmt.Printf("host per step (device pick, pipelined): submit %.1f µs, wait %.1f µs (medians over runs)\n",
			quantile(res.submitUs, 0.5), quantile(res.waitUs, 0.5))
	}
	if len(res.hostRates) > 0 {
		fmt.Printf("host pick (logits read back), runs alternating with the above: %s tok/s; %.2f ms/step (median, p10 %.2f, p90 %.2f); device / host %.3f (medians)\n",
			summary(res.hostRates), quantile(res.hostStepMs, 0.5), quantile(res.hostStepMs, 0.1), quantile(res.hostStepMs, 0.9),
			quantile(res.rates, 0.5)/quantile(res.hostRates, 0.5))
	}
	fmt.Printf("recordings over the runs: %d full, %d refreshes of SymInt params (%d dispatches patched, %d plan nodes re-run, %d of them through their update functions)\n",
		res.records.Rerecords, res.records.Refreshes, res.records.Patched, res.records.Rerun, res.records.Updated)
	fmt.Printf("the same step repeated at one input_pos (no re-recording): %.2f ms/step (median, p10 %.2f, p90 %.2f)\n",
		quantile(res.fixedMs, 0.5), quantile(res.fixedMs, 0.1), quantile(res.fixedMs, 0.9))
	if len(res.longStepMs) > 0 {
		fmt.Printf("long context: %.2f tok/s at positions %d-%d; %.2f ms/step (median, p10 %.2f, p90 %.2f)\n",
			1000/quantile(res.longStepMs, 0.5), o.long, o.long+o.steps-1, quantile(res.longStepMs, 0.5), quantile(res.longStepMs, 0.1), quantile(res.longStepMs, 0.9))
	}
	fmt.Printf("greedy tokens: %v\n", head(res.ours, 16))
	if len(res.baseRates) > 0 {
		what := "NoQGEMV"
		if o.baselineSkip != "" {
			what = "SkipKernels " + o.baselineSkip
		}
		fmt.Printf("baseline kernels (%s), runs alternating with the above: %s tok/s; %.2f ms/step (median, p10 %.2f, p90 %.2f); default / baseline %.3f (medians)\n",
			what, summary(res.baseRates), quantile(res.baseStepMs, 0.5), quantile(res.baseStepMs, 0.1), quantile(res.baseStepMs, 0.9), median(res.rates)/median(res.baseRates))
	}
	if len(res.cRates) == 0 {
		return
	}
	th := "unset"
	if o.threads > 0 {
		th = strconv.Itoa(o.threads)
	}
	fmt.Printf("run.c (%s, OMP_NUM_THREADS %s): %s tok/s over %d runs\n", o.cflags, th, summary(res.cRates), o.runs)
	fmt.Printf("ratio wgdelegate / run.c: %.3f (medians)\n", median(res.rates)/median(res.cRates))
	switch {
	case o.q4 > 0:
		fmt.Println("greedy tokens: not compared (the graph's weights are 4-bit, run.c's float)")
	case res.mismatch >= 0:
		i := res.mismatch
		theirs := "nothing (it stopped)"
		if i < len(res.theirs) {
			theirs = strconv.Itoa(int(res.theirs[i]))
		}
		fmt.Printf("greedy tokens: differ at step %d: wgdelegate %d, run.c %s (the first %d agree)\n", i, res.ours[i], theirs, i)
	case len(res.theirs) < len(res.ours):
		// run.c stops at a generated BOS (token 1).
		fmt.Printf("greedy tokens: run.c's %d equal ours (it stops at a generated BOS, token 1, as we did next)\n", len(res.theirs))
	default:
		fmt.Printf("greedy tokens: all %d equal run.c's\n", len(res.ours))
	}
}

// decode runs n greedy steps from token 1 at input_pos 0 and returns the
// tokens chosen and each step's time.
// decode generates n greedy tokens from token 1 at position 0 (n steps:
// the first from the one-token prompt) and returns them with the time
// between consecutive tokens (the first from the call) and the runner's
// stats; host picks on the host (llm.GenerateOptions.HostGreedy).
func decode(ctx context.Context, r *llm.Runner, n int, host bool) ([]int32, []time.Duration, llm.Stats, error) {
	r.Reset()
	times := make([]time.Duration, 0, n)
	last := time.Now()
	res, err := r.Generate(ctx, []int32{1}, llm.GenerateOptions{MaxNewTokens: n, HostGreedy: host, OnToken: func(int32) error {
		now := time.Now()
		times = append(times, now.Sub(last))
		last = now
		return nil
	}})
	if err != nil {
		return nil, nil, llm.Stats{}, err
	}
	if len(res.Tokens) != n {
		return nil, nil, llm.Stats{}, fmt.Errorf("llm: %d tokens of %d", len(res.Tokens), n)
	}
	return res.Tokens, times, res.Stats, nil
}

var tokPerSec = regexp.MustCompile(`achieved tok/s: ([0-9.]+|inf)`)

// prepareC writes the checkpoint and compiles run.c (run already wrote the
// tokenizer); the function it returns runs it once, returning its tokens
// and tok/s.
func prepareC(cc string, cfg models.LlamaConfig, w *models.LlamaWeights, o options) (func() ([]int32, float64, error), error) {
	ckpt, tok, bin := filepath.Join(o.dir, "model.bin"), filepath.Join(o.dir, "tokenizer.bin"), filepath.Join(o.dir, "run")
	var buf bytes.Buffer
	if err := models.WriteLlama2C(&buf, cfg, w); err != nil {
		return nil, err
	}
	if err := os.WriteFile(ckpt, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	args := append(strings.Fields(o.cflags), "-o", bin, o.runc, "-lm")
	if outb, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("llm: compiling run.c: %w\n%s", err, outb)
	}
	return func() ([]int32, float64, error) {
		cmd := exec.Command(bin, ckpt, "-z", tok, "-t", "0", "-n", strconv.Itoa(o.steps), "-i", "")
		cmd.Env = os.Environ()
		if o.threads > 0 {
			cmd.Env = append(cmd.Env, "OMP_NUM_THREADS="+strconv.Itoa(o.threads))
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, 0, fmt.Errorf("llm: running run.c: %w\n%s", err, stderr.String())
		}
		mt := tokPerSec.FindStringSubmatch(stderr.String())
		if mt == nil {
			ids := models.ParseLlama2CPieces(stdout.String())
			return nil, 0, fmt.Errorf("llm: run.c printed no \"achieved tok/s\" (it stops when it generates token 1, BOS; it printed %d tokens): %s", len(ids), stderr.String())
		}
		v, err := strconv.ParseFloat(mt[1], 64)
		if err != nil {
			return nil, 0, fmt.Errorf("llm: run.c's tok/s: %w", err)
		}
		return models.ParseLlama2CPieces(stdout.String()), v, nil
	}, nil
}

// printProfile prints the dispatch times of p summed by op name, the
// largest first.
func printProfile(p wgdelegate.Profile) {
	type opTime struct {
		name  string
		n     int
		total time.Duration
	}
	byName := map[string]*opTime{}
	var all time.Duration
	n := 0
	for _, g := range p.Graphs {
		n += len(g.Dispatches)
		for _, d := range g.Dispatches {
			t := byName[d.OpName]
			if t == nil {
				t = &opTime{name: d.OpName}
				byName[d.OpName] = t
			}
			t.n++
			t.total += d.Duration
			all += d.Duration
		}
	}
	ts := make([]*opTime, 0, len(byName))
	for _, t := range byName {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *opTime) int { return int(b.total - a.total) })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("one step's GPU time in one pass, as Execute runs it (%s timing, median of %d): %.3f ms; each dispatch alone, summed: %.3f ms (%d dispatches)\n",
		p.Source, graph.PassRuns, ms(p.Pass()), ms(all), n)
	fmt.Printf("profile of one step (%s timing, each dispatch alone): %.2f ms in all\n", p.Source, ms(all))
	for _, t := range ts {
		fmt.Printf("  %-34s %4d dispatches %9.3f ms %5.1f%%\n", t.name, t.n, float64(t.total)/float64(time.Millisecond), 100*float64(t.total)/float64(all))
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// summary formats the median and range of v.
func summary(v []float64) string {
	return fmt.Sprintf("%.2f (range %.2f-%.2f)", median(v), slices.Min(v), slices.Max(v))
}

func median(v []float64) float64 { return quantile(v, 0.5) }

// quantile returns the q-quantile of v (nearest rank).
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	if len(s)%2 == 0 && q == 0.5 {
		return (s[i] + s[i+1]) / 2
	}
	return s[i]
}

func head(v []int32, k int) []int32 { return v[:min(k, len(v))] }

// threadsName names a CPUThreads setting for the report.
func threadsName(n int) string {
	switch n {
	case 0:
		return "default"
	case wgdelegate.CPUThreadsInline:
		return "inline"
	}
	return strconv.Itoa(n)
}

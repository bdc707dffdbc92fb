// Command transformer builds one llama-style transformer decoder layer
// with a KV cache as an ExecuTorch Vulkan-delegate program, generates a
// few tokens with it on WebGPU, and checks every step against the plain-Go
// reference interpreter replaying the same steps.
//
//	go run ./examples/transformer             # files in a temporary directory
//	go run ./examples/transformer -out model  # keep model/decoder.pte and model/weights.ptd
//	go run ./examples/transformer -steps 10   # decode 10 tokens after the prompt
//
// The layer (internal/models/decoder.go has it op by op): token embedding,
// rms_norm, q/k/v projections, rotary embedding, a KV-cache update and
// attention in one sdpa_with_kv_cache op, the output projection and a
// residual add, rms_norm, a SwiGLU feed-forward block and a second
// residual, then rms_norm and an output head giving logits over the
// vocabulary. The weights are random, so the "text" is not meaningful;
// the point is the mechanics of a decoder loop.
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/exampleutil"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

func main() {
	out := flag.String("out", "", "directory to write decoder.pte and weights.ptd to (default: a temporary directory, removed on exit)")
	steps := flag.Int("steps", 3, "how many tokens to decode after the prompt")
	flag.Parse()
	exampleutil.Exit("transformer", run(*out, *steps))
}

// prompt is the first Execute's input: a prefill of four tokens.
var prompt = []int32{1, 17, 42, 7}

func run(outDir string, steps int) error {
	cfg := models.DefaultDecoder
	if n := int64(len(prompt) + steps); n > cfg.MaxSeq {
		return fmt.Errorf("%d prompt tokens + %d steps do not fit the %d-position KV cache", len(prompt), steps, cfg.MaxSeq)
	}

	// Step 1: the graph. The token dimension is dynamic: tokens is
	// declared [1, 8], an upper bound, and every Execute passes its own
	// count S — 4 for the prompt, then 1 per decoded token — through the
	// same graph. sym_size.int turns the live S into a SymInt that sizes
	// the views ([1, S, heads, head_dim]) and, added to input_pos (a
	// SymInt graph input), bounds the slice of the rotary tables. The KV
	// caches are et_vk.prepack outputs: buffers filled once at load (with
	// zeros) that sdpa_with_kv_cache writes rows input_pos..input_pos+S-1
	// of, in place, on every Execute, and that persist to the next one.
	d, err := models.NewDecoder(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("decoder: vocab %d, dim %d, %d query heads / %d kv heads of %d, ffn %d, up to %d tokens per step, %d cache positions\n",
		cfg.Vocab, cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.Hidden, cfg.MaxTokens, cfg.MaxSeq)
	fmt.Println("graph:")
	for _, op := range models.OpCounts(d.B) {
		fmt.Printf("  %2d× %s\n", op.Count, op.Name)
	}

	// Step 2: the files. The program (decoder.pte) holds the graph; the
	// weights, the rotary tables and the caches' initial contents go in
	// weights.ptd, keyed by the SHA-256 of their bytes.
	// The memory plan is the exporter's: greedy, a shared buffer reused
	// as soon as its tensor's last reader has run.
	models.ApplyPlan(d.B, models.PlanExporter)
	files, err := models.Encode(d.B, true)
	if err != nil {
		return err
	}
	outDir, cleanup, err := exampleutil.OutDir(outDir, "transformer")
	if err != nil {
		return err
	}
	defer cleanup()
	paths, err := exampleutil.WriteFiles(outDir,
		exampleutil.File{Name: "decoder.pte", Data: files.PTE}, exampleutil.File{Name: "weights.ptd", Data: files.PTD})
	if err != nil {
		return err
	}
	ptePath, ptdPath := paths[0], paths[1]

	// Step 3: loading, as in the other examples.
	ctx := context.Background()
	dev, err := exampleutil.OpenDevice(ctx)
	if err != nil {
		return err
	}
	defer dev.Close()
	start := time.Now()
	model, err := wgdelegate.Open(ctx, ptePath, wgdelegate.WithDevice(dev), wgdelegate.WithDataFiles(ptdPath))
	if err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	defer model.Close()
	fmt.Printf("loaded in %v\n", time.Since(start).Round(time.Microsecond))

	// Step 4: generating. Each Execute takes the new tokens and input_pos
	// (a SymInt input, passed as a one-element tensor) and returns the
	// layer's output h and the logits, both [1, S, ...] with the live S.
	// The greedy next token is the argmax of the last row of logits; it is
	// the next step's input. When the live shapes change (4 tokens, then
	// 1) or input_pos does, the graph re-runs its ops' shape logic and
	// re-records its dispatches before executing. Ops pick kernel variants
	// by shape (a matrix-vector kernel for one token, say), so the first
	// steps may compile new pipelines ("pipelines" counts them; they stay
	// cached on the device) and take longer than the steady state.
	//
	// Every step is checked against the reference interpreter. It has no
	// persistent buffers, so DecoderReference replays the steps: each one
	// runs the graph with caches starting as the previous step left them
	// (the reference returns the updated caches as extra outputs). The GPU
	// only matches it if its own cache writes survived between Executes.
	ref := d.NewReference()
	fmt.Printf("%-8s %-10s %-14s %-10s %-10s %-6s %s\n", "step", "input_pos", "tokens", "time", "pipelines", "next", "vs reference (h; logits)")
	tokens, pos := prompt, int64(0)
	pipelines := model.MemoryStats().NumCachedPipelines
	generated := []int32{}
	for step := 0; step <= steps; step++ {
		start := time.Now()
		outs, err := model.Execute(ctx, d.Inputs(tokens, pos)...)
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		elapsed := time.Since(start)
		compiled := model.MemoryStats().NumCachedPipelines - pipelines
		pipelines += compiled
		logits, err := outs[1].Float32s()
		if err != nil {
			return err
		}
		next := models.Argmax(logits, int(cfg.Vocab))

		want, err := ref.Step(tokens, pos)
		if err != nil {
			return fmt.Errorf("step %d: reference: %w", step, err)
		}
		var diffs []models.Diff
		for i, name := range []string{"h", "logits"} {
			diff, err := models.Compare(outs[i], want[i], models.Tol)
			if err != nil {
				return fmt.Errorf("step %d: %s differs from the reference: %w", step, name, err)
			}
			diffs = append(diffs, diff)
		}
		name := "decode"
		if step == 0 {
			name = "prefill"
		}
		fmt.Printf("%-8s %-10d %-14s %-10v %-10s %-6d max rel err %.2g; %.2g\n",
			name, pos, fmt.Sprint(tokens), elapsed.Round(time.Microsecond), fmt.Sprintf("+%d", compiled), next, diffs[0].MaxRel, diffs[1].MaxRel)

		pos += int64(len(tokens))
		tokens = []int32{next}
		generated = append(generated, next)
	}
	fmt.Printf("prompt %v → generated %v (%d positions of the cache in use)\n", prompt, generated[:steps], pos)

	// Step 5: memory. The caches are two of the "unshared" tensors; the
	// rotary tables and weights are the rest. The staging buffers are
	// sized for the outputs' upper bounds.
	s := model.MemoryStats()
	fmt.Printf("memory: %d tensors, %d unshared tensor bytes, %d staging bytes, %d uniform bytes, %d total bytes\n",
		s.NumTensors, s.UnsharedTensorBufferBytes, s.StagingBufferBytes, s.UniformBufferBytes, s.TotalBytes())
	fmt.Printf("work: %d dispatches per Execute (for the last shapes), %d cached pipelines on the device\n", s.NumDispatches, s.NumCachedPipelines)
	return nil
}

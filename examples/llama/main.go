// Command llama writes a small Llama-shaped model the way ExecuTorch's
// export_llama lays out a Vulkan export, twice (float weights, and 4-bit
// weights as `-qmode 4w` leaves them: et_vk.linear_q4gsw), generates text
// ids with each through the llm package, and checks the logits of every
// step against the plain-Go reference interpreter.
//
//	go run ./examples/llama              # files in a temporary directory
//	go run ./examples/llama -out model   # keep the .pte and .ptd files
//
// The files it writes can be fed to the command-line tool too:
//
//	wgdelegate generate --data model/llama-fp32.ptd --ids 1,5,9 -n 20 --temperature 0 model/llama-fp32.pte
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/exampleutil"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/ops/reference"
)

// cfg is the model: 2 decoder layers of 64 features, 8 query heads over 4
// key/value heads (grouped-query attention, as Llama 3 and stories260K
// have), a SwiGLU feed-forward block of 176 units, a vocabulary of 512,
// a 64-position KV cache, and up to 8 tokens per Execute (the prefill
// bound; export_llama's is max_seq_length - 1).
var cfg = models.LlamaConfig{Dim: 64, Hidden: 176, Layers: 2, Heads: 8, KVHeads: 4, Vocab: 512,
	MaxSeq: 64, MaxTokens: 8, Eps: 1e-5, RopeTheta: 10000, Seed: 1}

// prompt is the token ids the generation starts from: BOS (1), then
// eleven more, more than one Execute takes, so the prefill runs in two.
var prompt = []int32{1, 72, 101, 108, 108, 111, 44, 32, 87, 111, 114, 108}

func main() {
	out := flag.String("out", "", "directory to write the models to (default: a temporary directory, removed on exit)")
	steps := flag.Int("steps", 24, "tokens to generate per model")
	flag.Parse()
	exampleutil.Exit("llama", run(*out, *steps))
}

func run(outDir string, steps int) error {
	if steps < 1 || len(prompt)+steps-1 > int(cfg.MaxSeq) {
		return fmt.Errorf("-steps %d: want 1..%d (the cache holds %d positions)", steps, int(cfg.MaxSeq)-len(prompt)+1, cfg.MaxSeq)
	}
	dir, cleanup, err := exampleutil.OutDir(outDir, "llama")
	if err != nil {
		return err
	}
	defer cleanup()
	// Step 1: weights. Random, from a seed; models.ReadLlama2C would read
	// a llama2.c checkpoint's instead (cmd/wgdelegate's tests do). Both
	// models below share them; the 4-bit one quantizes every linear.
	w := models.RandomLlamaWeights(cfg)
	for _, q4 := range []int64{0, 16} {
		if err := generate(dir, w, q4, steps); err != nil {
			return err
		}
	}
	return nil
}

func generate(dir string, w *models.LlamaWeights, q4 int64, steps int) error {
	ctx := context.Background()
	name := "llama-fp32"
	c := cfg
	if q4 > 0 {
		// Step 2b: with Q4Group every linear (q, k, v, o, the three
		// feed-forward projections and the output head) is written as
		// et_vk.linear_q4gsw: weights in signed 4-bit groups of 16 along
		// the input features, two per byte, with a float scale per group.
		c.Q4Group = q4
		name = fmt.Sprintf("llama-q4g%d", q4)
	}
	// Step 2: the graph, as export_llama -kv --use_sdpa_with_kv_cache
	// writes it: tokens [1, S] and input_pos [1] in, read on the host by
	// et_vk.select_as_symint; per layer rms_norm, q/k/v projections,
	// rotary embedding, sdpa_with_kv_cache over KV caches that are
	// prepacked constants updated in place, SwiGLU; the last position's
	// logits [1, 512] out. The weights go to a .ptd.
	l, err := models.NewLlama(c, w)
	if err != nil {
		return err
	}
	f, err := models.Encode(l.B, true)
	if err != nil {
		return err
	}
	pte, ptd := filepath.Join(dir, name+".pte"), filepath.Join(dir, name+".ptd")
	if err := os.WriteFile(pte, f.PTE, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(ptd, f.PTD, 0o644); err != nil {
		return err
	}

	// Step 3: open it with the llm package. It reads the calling
	// convention from the model's inputs and outputs and the cache length
	// from the graph's cache tensors.
	r, err := llm.Open(ctx, pte, wgdelegate.WithDataFiles(ptd))
	if err != nil {
		return err
	}
	defer r.Close()
	cv := r.Convention()
	fmt.Printf("%s: %d params, %d ops; tokens %v [1, ≤%d], input_pos %s, logits [1, %d], cache %d positions\n",
		name, c.Params(), len(l.B.Graph().Chain), cv.TokenType, cv.MaxTokens, posKind(cv), cv.Vocab, cv.MaxSeqLen)

	// Step 4: prefill and decode by hand with Forward, checking every
	// step's logits against the reference interpreter, which replays the
	// same graph in float64 with its caches carried on the host. Forward
	// splits the 12-token prompt into Executes of 8 and 4; the reference
	// replays the same two steps.
	ref := l.NewReference()
	var greedy []int32
	var worst models.Diff
	toks, pos := prompt, int64(0)
	for len(greedy) < steps {
		logits, err := r.Forward(ctx, toks)
		if err != nil {
			return err
		}
		var want *reference.Tensor
		for len(toks) > 0 {
			n := min(len(toks), int(cv.MaxTokens))
			if want, err = ref.Step(toks[:n], pos); err != nil {
				return err
			}
			toks, pos = toks[n:], pos+int64(n)
		}
		d, err := models.Compare(wgdelegate.FromFloat32([]int64{1, cfg.Vocab}, logits), want, models.Tol)
		if err != nil {
			return fmt.Errorf("%s: logits at position %d: %w", name, pos-1, err)
		}
		worst.MaxAbs, worst.MaxRel = max(worst.MaxAbs, d.MaxAbs), max(worst.MaxRel, d.MaxRel)
		next := models.Argmax(logits, int(cfg.Vocab))
		greedy = append(greedy, next)
		toks = []int32{next}
	}
	fmt.Printf("  %d steps' logits match the reference (%v)\n", steps, worst)

	// Step 5: the same through Generate, which also times it. Reset starts
	// the sequence over at position 0 (the cache rows are overwritten
	// before attention reads them).
	r.Reset()
	res, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: steps})
	if err != nil {
		return err
	}
	if !slices.Equal(res.Tokens, greedy) {
		return fmt.Errorf("%s: Generate gave %v, the checked steps %v", name, res.Tokens, greedy)
	}
	s := res.Stats
	fmt.Printf("  greedy: %v\n", res.Tokens)
	fmt.Printf("  prompt %d tokens at %.0f tok/s, time to first token %.1f ms, decode %.0f tok/s\n",
		s.PromptTokens, s.PromptTokensPerSecond(), float64(s.TimeToFirstToken.Microseconds())/1000, s.DecodeTokensPerSecond())

	// Step 6: sampling. Temperature 0.8 and top-p 0.9 with a seed: the
	// same seed gives the same tokens.
	r.Reset()
	sampled, err := r.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: steps, Temperature: 0.8, TopP: 0.9, Seed: 42})
	if err != nil {
		return err
	}
	fmt.Printf("  sampled (T 0.8, top-p 0.9, seed 42): %v\n", sampled.Tokens)
	return nil
}

func posKind(c llm.Convention) string {
	if c.PosSymInt {
		return "a SymInt"
	}
	return fmt.Sprintf("%v [1]", c.PosType)
}

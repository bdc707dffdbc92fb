package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// TestRun runs the benchmark end to end on a tiny llama (two layers,
// grouped-query attention), with run.c too when LLAMA2C_RUN_C names
// llama2.c's run.c: its greedy tokens must then equal ours.
func TestRun(t *testing.T) {
	cfg := models.LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 64,
		MaxSeq: 16, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 2}
	o := options{name: "test", profile: true, steps: 12, runs: 2, dir: t.TempDir(), runc: os.Getenv("LLAMA2C_RUN_C"), cflags: "-O2", threads: 1}
	res, err := run(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ours) != o.steps || len(res.rates) != o.runs || len(res.stepMs) != o.runs*(o.steps-1) {
		t.Errorf("%d tokens, %d rates, %d step times; want %d, %d, %d", len(res.ours), len(res.rates), len(res.stepMs), o.steps, o.runs, o.runs*(o.steps-1))
	}
	if len(res.fixedMs) != o.steps-1 {
		t.Errorf("%d fixed-position step times, want %d", len(res.fixedMs), o.steps-1)
	}
	if res.dispatches <= 0 {
		t.Errorf("%d dispatches per step", res.dispatches)
	}
	for _, tok := range res.ours {
		if tok < 0 || int64(tok) >= cfg.Vocab {
			t.Fatalf("token %d out of the vocabulary", tok)
		}
	}
	// The tokenizer is written with or without run.c, for generate.
	tok, err := llm.LoadLlama2CTokenizer(filepath.Join(o.dir, "tokenizer.bin"))
	if err != nil {
		t.Fatalf("tokenizer.bin: %v", err)
	}
	if int64(tok.VocabSize()) != cfg.Vocab {
		t.Fatalf("tokenizer.bin has %d pieces, want %d", tok.VocabSize(), cfg.Vocab)
	}
	if o.runc == "" {
		t.Log("run.c not compared (LLAMA2C_RUN_C unset)")
		return
	}
	if len(res.theirs) == 0 || res.mismatch >= 0 {
		t.Errorf("run.c's tokens %v, ours %v", res.theirs, res.ours)
	}
}

// TestRunQ4Baseline runs a 4-bit tiny llama whose linears take the
// one-row quantized kernel (dims and group multiples of 32) with
// -baseline-kernels: the tiled-kernel load must decode the same tokens
// (run checks it) and be timed as often.
func TestRunQ4Baseline(t *testing.T) {
	cfg := models.LlamaConfig{Dim: 64, Hidden: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 64,
		MaxSeq: 16, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 2, Q4Group: 32}
	o := options{name: "test", steps: 6, runs: 2, dir: t.TempDir(), q4: 32, baseline: true}
	res, err := run(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.baseRates) != o.runs || len(res.baseStepMs) != o.runs*(o.steps-1) {
		t.Errorf("%d baseline rates, %d step times; want %d, %d", len(res.baseRates), len(res.baseStepMs), o.runs, o.runs*(o.steps-1))
	}
}

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		q    float64
		want float64
	}{
		{[]float64{3, 1, 2}, 0.5, 2},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{[]float64{5, 1, 4, 2, 3}, 0.1, 1},
		{[]float64{5, 1, 4, 2, 3}, 0.9, 4},
		{[]float64{7}, 0.5, 7},
	} {
		if got := quantile(tc.v, tc.q); got != tc.want {
			t.Errorf("quantile(%v, %g) = %g, want %g", tc.v, tc.q, got, tc.want)
		}
	}
}

// TestDispatchesPerStep pins the dispatches of one stories260K decode step
// in both kernel families: 33 with the linear-group fusion (rms_norm in
// the linears' prologue, q/k/v in one dispatch, SwiGLU in one), the rope
// and KV-cache fusion, the rope tables read whole instead of sliced, and
// the last token's select as a view (issue 28: 67 before them). A fusion
// that stops applying to the llama export shows here.
func TestDispatchesPerStep(t *testing.T) {
	for _, fam := range []wgdelegate.KernelFamily{wgdelegate.KernelsCPU, wgdelegate.KernelsGPU} {
		o := options{name: "260k", steps: 2, runs: 1, dir: t.TempDir(), kernels: fam, threads: 1}
		res, err := run(models.Stories260K, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.dispatches != 33 {
			t.Errorf("kernels %v: %d dispatches per step, want 33", fam, res.dispatches)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
)

// genCfg has stories260K's shape (dim 64, 5 layers, 8 query heads over 4
// key/value heads, vocabulary 512) with a feed-forward of 176 units, so
// that 4-bit groups of 16 divide it (stories260K's 172 is not a multiple
// of 8), and a 128-position cache.
var genCfg = models.LlamaConfig{Dim: 64, Hidden: 176, Layers: 5, Heads: 8, KVHeads: 4, Vocab: 512,
	MaxSeq: 128, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 11}

// writeGenModel writes a llama2.c checkpoint of random weights, reads it
// back with models.ReadLlama2C and writes the model from it as dir/name.pte
// and .ptd, with up to 8 tokens per Execute and 4-bit weights when q4 > 0.
// It returns the .pte path and the weights as read.
func writeGenModel(t *testing.T, dir, name string, q4 int64) (string, models.LlamaConfig, *models.LlamaWeights) {
	t.Helper()
	var ckpt bytes.Buffer
	if err := models.WriteLlama2C(&ckpt, genCfg, models.RandomLlamaWeights(genCfg)); err != nil {
		t.Fatal(err)
	}
	cfg, w, err := models.ReadLlama2C(ckpt.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxTokens, cfg.Q4Group = 8, q4
	l, err := models.NewLlama(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(l.B, true)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, name+".ptd", f.PTD)
	return write(t, dir, name+".pte", f.PTE), cfg, w
}

// dequantized returns w with every linear weight (the layers' and the
// classifier) replaced by its 4-bit quantization in groups of g, decoded
// back to float32: the weights a linear_q4gsw model computes with.
func dequantized(cfg models.LlamaConfig, w *models.LlamaWeights, g int64) *models.LlamaWeights {
	dq := func(v []float32, n, k int64) []float32 {
		packed, scales := models.QuantizeQ4GSW(v, n, k, g)
		kp, np4 := (k+7)/8*8, (n+3)/4*4
		out := make([]float32, n*k)
		for r := range n {
			for j := range k {
				b := packed[r*kp/2+j/2]
				code := b & 15
				if j%2 == 1 {
					code = b >> 4
				}
				out[r*k+j] = float32(int(code)-8) * scales[(j/g)*np4+r]
			}
		}
		return out
	}
	hd := cfg.HeadDim()
	qd, kvd := cfg.Heads*hd, cfg.KVHeads*hd
	d := &models.LlamaWeights{Embedding: w.Embedding, Norm: w.Norm, Output: dq(w.Output, cfg.Vocab, cfg.Dim)}
	for _, l := range w.Layers {
		d.Layers = append(d.Layers, models.LayerWeights{AttnNorm: l.AttnNorm, FFNNorm: l.FFNNorm,
			Wq: dq(l.Wq, qd, cfg.Dim), Wk: dq(l.Wk, kvd, cfg.Dim), Wv: dq(l.Wv, kvd, cfg.Dim), Wo: dq(l.Wo, cfg.Dim, qd),
			W1: dq(l.W1, cfg.Hidden, cfg.Dim), W3: dq(l.W3, cfg.Hidden, cfg.Dim), W2: dq(l.W2, cfg.Dim, cfg.Hidden)})
	}
	return d
}

// parseIDs reads the space-separated ids generate prints without a
// tokenizer.
func parseIDs(t *testing.T, s string) []int32 {
	t.Helper()
	var ids []int32
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q: %v", s, err)
		}
		ids = append(ids, int32(n))
	}
	return ids
}

// TestGenerateMatchesRunC: `generate --ids 1 -n 64 --temperature 0` on a
// model written from a llama2.c checkpoint prints run.c's greedy tokens
// for the same checkpoint (prompt BOS, 64 steps), for float weights and
// for linear_q4gsw weights (groups of 16; run.c then runs the dequantized
// weights, which is what the 4-bit kernels compute with). The tokens
// compare exactly; run.c stops early only at BOS (token 1), where generate
// must produce 1 too. Skipped without a C compiler.
func TestGenerateMatchesRunC(t *testing.T) {
	dir := t.TempDir()
	bin := buildRunC(t, dir)
	var tok bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&tok, int(genCfg.Vocab)); err != nil {
		t.Fatal(err)
	}
	tokPath := write(t, dir, "tokenizer.bin", tok.Bytes())
	for _, q4 := range []int64{0, 16} {
		t.Run(fmt.Sprintf("q4=%d", q4), func(t *testing.T) {
			name := fmt.Sprintf("m%d", q4)
			pte, cfg, w := writeGenModel(t, dir, name, q4)
			if q4 > 0 {
				w = dequantized(cfg, w, q4)
			}
			var ckpt bytes.Buffer
			if err := models.WriteLlama2C(&ckpt, cfg, w); err != nil {
				t.Fatal(err)
			}
			ckptPath := write(t, dir, name+".bin", ckpt.Bytes())
			want, runCStderr := runCIDs(t, bin, ckptPath, tokPath)

			out := mustRunStdout(t, "generate", "--data", strings.TrimSuffix(pte, ".pte")+".ptd", "--ids", "1", "-n", "64", "--temperature", "0", pte)
			got := parseIDs(t, out)
			if len(got) != 64 {
				t.Fatalf("generate printed %d tokens, want 64", len(got))
			}
			n := len(want)
			if !slices.Equal(got[:n], want) || (n < 64 && got[n] != 1) {
				t.Fatalf("generate's greedy tokens differ from run.c's:\n got %v\nwant %v (then BOS if shorter)", got, want)
			}
			t.Logf("%d tokens equal run.c's (run.c %s)", n, strings.TrimSpace(runCStderr))
		})
	}
}

// mustRunStdout runs the command, which must succeed, and returns stdout
// (stderr carries the statistics).
func mustRunStdout(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := invoke(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	for _, w := range []string{"prompt: ", "decode: ", "tok/s", "time to first token", "memory: GPU"} {
		if !strings.Contains(stderr, w) {
			t.Fatalf("%v: stderr %q lacks %q", args, stderr, w)
		}
	}
	return stdout
}

// TestGenerate: --json numbers, a text prompt through a tokenizer,
// prefill in chunks agreeing with one token at a time, seeded sampling
// repeating, stop tokens, and the errors.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	pte, _, _ := writeGenModel(t, dir, "m", 0)
	ptd := strings.TrimSuffix(pte, ".pte") + ".ptd"
	jsonRun := func(args ...string) generateResult {
		t.Helper()
		out := mustRun(t, append([]string{"generate", "--json", "--data", ptd}, append(args, pte)...)...)
		var r generateResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("--json printed %q: %v", out, err)
		}
		return r
	}
	r := jsonRun("--ids", "1,20,30,40,50,60,70,80,90,100,110", "-n", "12", "--temperature", "0")
	if r.PromptTokens != 11 || r.GeneratedTokens != 12 || len(r.Tokens) != 12 || r.DecodeSteps != 11 ||
		r.MaxSeqLen != genCfg.MaxSeq || r.MaxTokens != 8 || r.Stop != -1 || r.Text != nil {
		t.Fatalf("--json: %+v", r)
	}
	if r.PromptTokPerS <= 0 || r.DecodeTokPerS <= 0 || r.TTFTMS <= 0 || r.GPUBytes <= 0 || r.GoHeapBytes == 0 {
		t.Fatalf("--json numbers: %+v", r)
	}
	// --f16-kv-cache holds the caches as halves: less GPU memory (each
	// cache element 2 bytes instead of 4), and on this model the same
	// greedy tokens.
	h := jsonRun("--ids", "1,20,30,40,50,60,70,80,90,100,110", "-n", "12", "--temperature", "0", "--f16-kv-cache")
	cacheBytes := 2 * genCfg.Layers * genCfg.MaxSeq * genCfg.KVHeads * genCfg.HeadDim() * 4
	if saved := r.GPUBytes - h.GPUBytes; saved < cacheBytes/2 || !slices.Equal(h.Tokens, r.Tokens) {
		t.Fatalf("--f16-kv-cache: GPU bytes %d (float32 caches: %d, %d cache bytes), tokens %v (float32: %v)",
			h.GPUBytes, r.GPUBytes, cacheBytes, h.Tokens, r.Tokens)
	}
	// The same prompt one token per Execute: run.c's way, as text ids.
	var ids []string
	for _, id := range r.Tokens[:3] {
		ids = append(ids, strconv.Itoa(int(id)))
	}
	stop := r.Tokens[3]
	if k := slices.Index(r.Tokens, stop); k < 3 {
		stop = -1
	}
	if stop >= 0 {
		s := jsonRun("--ids", "1,20,30,40,50,60,70,80,90,100,110", "-n", "12", "--temperature", "0", "--stop", strconv.Itoa(int(stop)))
		if s.Stop != stop || !slices.Equal(s.Tokens, r.Tokens[:3]) {
			t.Fatalf("--stop %d: %v (stop %d), want %v", stop, s.Tokens, s.Stop, r.Tokens[:3])
		}
	}
	a := jsonRun("--ids", "1", "-n", "10", "--temperature", "1", "--top-p", "0.9", "--seed", "5")
	b := jsonRun("--ids", "1", "-n", "10", "--temperature", "1", "--top-p", "0.9", "--seed", "5")
	if !slices.Equal(a.Tokens, b.Tokens) {
		t.Fatalf("seed 5 twice: %v and %v", a.Tokens, b.Tokens)
	}

	var tok bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&tok, int(genCfg.Vocab)); err != nil {
		t.Fatal(err)
	}
	tokPath := write(t, dir, "tokenizer.bin", tok.Bytes())
	tr := jsonRun("--tokenizer", tokPath, "--prompt", "hi", "-n", "5", "--temperature", "0", "--stop", "511")
	if tr.Text == nil || tr.PromptTokens != 3 { // BOS and the bytes h, i (byte fallback; no " " piece)
		t.Fatalf("--prompt hi: %+v", tr)
	}
	if got := models.ParseLlama2CPieces(*tr.Text); !slices.Equal(got, tr.Tokens) {
		t.Fatalf("text %q decodes to %v, tokens %v", *tr.Text, got, tr.Tokens)
	}

	mlp := models.NewMLP(models.DefaultMLP)
	f, err := models.Encode(mlp.B, false)
	if err != nil {
		t.Fatal(err)
	}
	mlpPath := write(t, dir, "mlp.pte", f.PTE)
	for _, tc := range []struct {
		want []string
		args []string
	}{
		{[]string{"--prompt needs --tokenizer"}, []string{"--prompt", "x", pte}},
		{[]string{"not both"}, []string{"--tokenizer", tokPath, "--prompt", "x", "--ids", "1", pte}},
		{[]string{"--ids", "list of token ids"}, []string{"--ids", "1,x", pte}},
		{[]string{"-n", "token count"}, []string{"-n", "-3", pte}},
		{[]string{"--temperature", "not a number"}, []string{"--temperature", "hot", pte}},
		{[]string{"temperature -1"}, []string{"--data", ptd, "--temperature", "-1", pte}},
		{[]string{"top-p 2"}, []string{"--data", ptd, "--top-p", "2", pte}},
		{[]string{"no MODEL"}, []string{"--ids", "1"}},
		{[]string{"not a Llama-style decoder"}, []string{mlpPath}},
		{[]string{"prompt longer than the cache"}, []string{"--data", ptd, "--ids", strings.Repeat("5,", 128) + "5", pte}},
		{[]string{"position past the end"}, []string{"--data", ptd, "--ids", "1", "-n", "200", pte}},
		{[]string{"token id outside the vocabulary"}, []string{"--data", ptd, "--ids", "1,512", pte}},
		{[]string{"bad tokenizer"}, []string{"--data", ptd, "--tokenizer", write(t, dir, "bad.bin", []byte{1, 2}), pte}},
		{[]string{"tokenizer", "no such file"}, []string{"--tokenizer", filepath.Join(dir, "none"), pte}},
	} {
		mustFail(t, tc.want, append([]string{"generate"}, tc.args...)...)
	}
	for _, args := range [][]string{{"generate", "-h"}, {"help", "generate"}} {
		out := mustRun(t, args...)
		if !strings.Contains(out, "Usage:") || !hasExamples(out) {
			t.Fatalf("%v: %q", args, out)
		}
	}
}

// TestBenchLLM: bench measures prefill and decode tok/s for a decoder
// (and TestBenchJSON checks that other models get no "llm" field).
func TestBenchLLM(t *testing.T) {
	dir := t.TempDir()
	pte, _, _ := writeGenModel(t, dir, "m", 16)
	ptd := strings.TrimSuffix(pte, ".pte") + ".ptd"
	out := mustRun(t, "bench", "--json", "--iterations", "2", "--data", ptd, pte)
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	l := r.LLM
	if l == nil || l.PromptTokens != 8 || l.DecodeSteps != 32 || l.MaxSeqLen != genCfg.MaxSeq {
		t.Fatalf("llm: %+v", l)
	}
	for _, s := range []execStats{l.PrefillTokPS, l.DecodeTokPS, l.TimeToFirstMS} {
		if s.Min <= 0 || s.Min > s.Median || s.Median > s.Max {
			t.Fatalf("llm: %+v", l)
		}
	}
	text := mustRun(t, "bench", "--iterations", "2", "--data", ptd, pte)
	for _, w := range []string{"prefill", "8 tokens: median", "decode", "32 steps: median", "time to first token"} {
		if !strings.Contains(text, w) {
			t.Errorf("bench output lacks %q:\n%s", w, text)
		}
	}
}

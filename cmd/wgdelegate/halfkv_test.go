package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestF16KVCacheFlag: bench and profile take --f16-kv-cache, and bench
// loads a llama with it holding its KV caches as halves: gpu_bytes drops
// by half the float32 caches' bytes.
func TestF16KVCacheFlag(t *testing.T) {
	b, err := parseBenchArgs([]string{"--f16-kv-cache", "m.pte"})
	if err != nil || !b.f16KV {
		t.Errorf("bench: %+v, %v", b, err)
	}
	if b, err = parseBenchArgs([]string{"m.pte"}); err != nil || b.f16KV {
		t.Errorf("bench without the flag: %+v, %v", b, err)
	}
	p, err := parseProfileArgs([]string{"m.pte", "--f16-kv-cache"})
	if err != nil || !p.f16KV {
		t.Errorf("profile: %+v, %v", p, err)
	}

	cfg := models.LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 40,
		MaxSeq: 64, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 3}
	l, err := models.NewLlama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(l.B, false)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(t.TempDir(), "llama.pte")
	if err := os.WriteFile(model, f.PTE, 0o644); err != nil {
		t.Fatal(err)
	}
	gpuBytes := func(args ...string) int64 {
		out := mustRun(t, append(append([]string{"bench", "--json", "--iterations", "2"}, args...), model)...)
		var r struct {
			GPUBytes int64 `json:"gpu_bytes"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return r.GPUBytes
	}
	full, half := gpuBytes(), gpuBytes("--f16-kv-cache")
	caches := 2 * cfg.Layers * cfg.MaxSeq * cfg.KVHeads * (cfg.Dim / cfg.Heads)
	if full-half != caches*2 {
		t.Errorf("gpu_bytes %d with --f16-kv-cache, %d without: want %d fewer", half, full, caches*2)
	}
}

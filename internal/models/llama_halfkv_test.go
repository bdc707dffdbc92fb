package models

import (
	"context"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
)

// TestLlamaHalfKVCacheDecode loads the two-layer GQA llama with
// KernelConfig.HalfKVCache, under both memory plans and both cache op
// styles (sdpa_with_kv_cache; update_cache + custom_sdpa), runs a 3-token
// prefill and then one-token steps with input_pos advancing, and checks
// every step's logits against the reference replay whose attentions read
// the cached k and v rounded to half. A float32 load of the same file runs
// alongside: its caches take 4 bytes an element where the half load's
// take 2, and MemoryStats must say so. With the position on the device
// (the default) and in uniform params (HostPosition).
func TestLlamaHalfKVCacheDecode(t *testing.T) {
	for _, split := range []bool{false, true} {
		for _, plan := range Plans {
			for _, host := range []bool{false, true} {
				t.Run(fmt.Sprintf("split_cache=%v/plan=%s/host_position=%v", split, plan, host), func(t *testing.T) {
					cfg := testLlama
					cfg.SplitCache = split
					halfKVDecode(t, cfg, plan, host)
				})
			}
		}
	}
}

func halfKVDecode(t *testing.T, cfg LlamaConfig, plan Plan, host bool) {
	ctx := context.Background()
	l, err := NewLlama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ApplyPlan(l.B, plan)
	f, err := Encode(l.B, true)
	if err != nil {
		t.Fatal(err)
	}
	half, err := wgdelegate.Load(ctx, f.PTE, wgdelegate.WithData(f.PTD), wgdelegate.WithKernels(wgdelegate.KernelConfig{HalfKVCache: true, HostPosition: host}))
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	full, err := wgdelegate.Load(ctx, f.PTE, wgdelegate.WithData(f.PTD), wgdelegate.WithKernels(wgdelegate.KernelConfig{HostPosition: host}))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()

	caches := 2 * cfg.Layers
	numel := cfg.MaxSeq * cfg.KVHeads * (cfg.Dim / cfg.Heads)
	hs, fs := half.MemoryStats(), full.MemoryStats()
	if hs.NumHalfKVCaches != int(caches) || hs.HalfKVCacheBytes != caches*numel*2 {
		t.Fatalf("half load: %d half caches of %d bytes, want %d of %d", hs.NumHalfKVCaches, hs.HalfKVCacheBytes, caches, caches*numel*2)
	}
	if fs.NumHalfKVCaches != 0 || fs.HalfKVCacheBytes != 0 {
		t.Fatalf("float32 load: %d half caches (%d bytes)", fs.NumHalfKVCaches, fs.HalfKVCacheBytes)
	}
	// The float32 caches are dedicated prepacked buffers: the half load
	// saves 2 of their 4 bytes an element and nothing else changes.
	if d := fs.TotalBytes() - hs.TotalBytes(); d != caches*numel*2 {
		t.Fatalf("float32 load holds %d bytes more than the half load, want %d (%+v vs %+v)", d, caches*numel*2, fs, hs)
	}

	ref, fref := l.NewHalfKVReference(), l.NewReference()
	tokens, pos := []int32{1, 7, 23}, int64(0)
	for step := range 7 {
		got, _, logits := llamaStep(t, half, l, ref, step, tokens, pos)
		// The float32 replay differs by the rounding, within fp16's
		// tolerance.
		fwant, err := fref.Step(tokens, pos)
		if err != nil {
			t.Fatalf("step %d: float32 reference: %v", step, err)
		}
		if _, err := Compare(got, fwant, Tolerance{Abs: 1e-2, Rel: 1e-2}); err != nil {
			t.Fatalf("step %d (input_pos %d): logits against the float32 reference: %v", step, pos, err)
		}
		pos += int64(len(tokens))
		tokens = []int32{Argmax(logits, int(cfg.Vocab))}
	}
}

package opstest

import (
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
)

// TestKVCacheHalfSplit runs half KV cache chains whose decode steps take
// the attention's split kernel (the gpu family, caches of 1,024 rows or
// more: ops gpu/attn-split) against the reference that reads the cached k
// and v rounded to half: one-token steps whose key counts cross the
// 64-key blocks' edges (62..66 keys; 127..129), both cache op styles, a
// head dim that is not a multiple of 4, grouped-query heads, batches of
// two; and the split cases of cases_attention_split.go with their caches
// held as halves.
func TestKVCacheHalfSplit(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	var cases []Case
	for _, s := range []halfKVSpec{
		{b: 1, hq: 8, hkv: 2, d: 8, maxS: 1024, prefill: 61, decode: 5},
		{b: 1, hq: 8, hkv: 2, d: 8, maxS: 1024, prefill: 126, decode: 3, split: true},
		{b: 2, hq: 6, hkv: 2, d: 6, maxS: 1030, prefill: 62, decode: 3, split: true},
		{b: 1, hq: 4, hkv: 4, d: 64, maxS: 1024, prefill: 63, decode: 2},
	} {
		cases = append(cases, s.testCase())
	}
	for _, c := range Cases {
		if (strings.HasPrefix(c.Name, "sdpa_with_kv_cache/") || strings.HasPrefix(c.Name, "custom_sdpa/")) && strings.Contains(c.Name, "_S1_") && strings.Contains(c.Name, "_max1") {
			c.Tol = halfKVTolLoose
			cases = append(cases, c)
		}
	}
	if len(cases) < 14 {
		t.Fatalf("%d cases", len(cases))
	}
	RunAgainst(t, GPU{Dev: dev, Kernels: ops.Config{Family: ops.FamilyGPU, HalfKVCache: true}}, Reference{Options: reference.Options{HalfKVCache: true}}, cases)
}

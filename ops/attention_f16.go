package ops

// Half KV caches (Config.HalfKVCache, the reference runtime's
// enable_f16_kv_cache). A KV cache that only the cache ops use (as their
// cache arguments: KVCacheArgs) is held as packed halves instead of
// float32: two halves a u32 word, the lower element in the low 16 bits
// (pack2x16float's order), half the bytes. The graph decides which caches
// qualify before it allocates anything (HalfKVCacheDims; a cache another
// op reads, a graph input or output, or one that is not a constant or an
// et_vk.prepack output of one stays float32, so its readers and the host
// see float32 as before), makes each packed buffer once at load from the
// constant's values rounded to half, and hands it to the ops through
// HalfCacher. The cache ops then write rows with pack2x16float (round to
// nearest even on lavapipe), one invocation per pair of elements, and the
// attention kernel reads the cached k and v with unpack2x16float and
// computes in float32 (shaders/attention.wgsl). A cache op's k_cache and
// v_cache may differ: one half, one float32.

// KVCacheArgs returns the cache arguments of a KV-cache op (op name as
// serialized): those a half KV cache may be passed as; nil for other ops.
func KVCacheArgs(op string) []int {
	switch op {
	case "sdpa_with_kv_cache.default":
		return []int{3, 4}
	case "llama.custom_sdpa.default":
		return []int{1, 2}
	case "update_cache.default":
		return []int{1}
	}
	return nil
}

// HalfKVCacheDims reports whether a KV cache of serialized dims can be held
// as packed halves: [B, max_seq_len, heads, head_dim] with head_dim even
// (every head's row then starts on a word: a row update writes whole
// words, no two invocations share one, and the attention's chunks of four
// are two words), not empty.
func HalfKVCacheDims(dims []int64) bool {
	return len(dims) == 4 && dims[0] > 0 && dims[1] > 0 && dims[2] > 0 && dims[3] > 0 && dims[3]%2 == 0
}

// HalfCacheWords is the u32 words of a half KV cache of numel elements.
func HalfCacheWords(numel int64) int64 { return (numel + 1) / 2 }

// halfCache returns cache c as the cache ops bind it when the builder
// holds it as halves: c's dims, the packed buffer's id; ok is false when c
// stays float32.
func halfCache(b Builder, c Tensor, arg int) (Tensor, bool, error) {
	if !b.Config().HalfKVCache {
		return Tensor{}, false, nil
	}
	p, ok, err := b.HalfCache(c.ID)
	if err != nil {
		return Tensor{}, false, argErr(arg, err)
	}
	if !ok {
		return Tensor{}, false, nil
	}
	if len(c.Dims) != 4 || !HalfKVCacheDims(c.Dims) || p.Numel != HalfCacheWords(c.Numel) {
		return Tensor{}, false, Errorf(arg, "half cache of value %d has %d words for dims %v", c.ID, p.Numel, c.Dims)
	}
	h := c
	h.ID, h.Constant, h.NBytes = p.ID, false, p.NBytes
	return h, true, nil
}

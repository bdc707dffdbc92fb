package opstest

// Cases for the attention's split kernel (flash-decoding, ops
// attnKernels: gpu/attn-split): one-row attention over a KV cache of
// 1,024 rows or more, its keys in blocks of 64, one workgroup per block,
// then a dispatch merging the blocks. Key counts at and around the block
// edges (63, 64, 65, 128, 129) and the cache's end, grouped-query heads
// (several query rows a workgroup) and one head a kv head, odd head dims
// (no vec4 form), both cache op styles; a prefill of several rows over
// the same cache takes the one-workgroup kernel (unaffected). Both
// families run them (ops.FamilyOps); the gpu family takes the split.
func init() {
	for _, c := range []kvCaseSpec{
		{b: 1, s: 1, hq: 8, hkv: 2, d: 8, maxS: 1024, pos: 62, causal: 1},
		{b: 1, s: 1, hq: 8, hkv: 2, d: 8, maxS: 1024, pos: 63, causal: 0},
		{b: 1, s: 1, hq: 4, hkv: 4, d: 16, maxS: 1024, pos: 64, causal: 1, scale: 0.3},
		{b: 1, s: 1, hq: 6, hkv: 2, d: 5, maxS: 1030, pos: 127, causal: 1},
		{b: 1, s: 1, hq: 2, hkv: 1, d: 8, maxS: 1088, pos: 128, causal: 0},
		{b: 2, s: 1, hq: 4, hkv: 2, d: 12, maxS: 1024, pos: 1023, causal: 1},
		{b: 1, s: 1, hq: 8, hkv: 2, d: 64, maxS: 1100, pos: 700, causal: 1, symPos: true},
	} {
		Cases = append(Cases, sdpaKVCase(c), customSDPACase(c))
	}
	// A causal prefill of 5 rows over a long cache: not split.
	Cases = append(Cases,
		sdpaKVCase(kvCaseSpec{b: 1, s: 5, hq: 4, hkv: 2, d: 8, maxS: 1024, pos: 64, causal: 1}),
		customSDPACase(kvCaseSpec{b: 1, s: 3, hq: 4, hkv: 1, d: 8, maxS: 1024, pos: 200, causal: 2}),
	)
}

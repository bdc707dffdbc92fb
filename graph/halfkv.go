package graph

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// HalfCache implements ops.Builder: the packed-halves buffer makeHalfKV
// made for KV cache id (ops.Config.HalfKVCache, Analysis.HalfKV).
func (b *opBuilder) HalfCache(id int32) (ops.Tensor, bool, error) {
	vid, ok := b.g.halfKV[id]
	if !ok {
		return ops.Tensor{}, false, nil
	}
	t, err := b.Tensor(vid)
	return t, err == nil, err
}

// makeHalfKV places each cache Analysis.HalfKV lists as packed halves,
// before the first recording (weights.go): HalfCacheWords u32 words holding its
// constant's values rounded to half (round to nearest even), two a word,
// the lower element in the low 16 bits. The buffer is writable and
// persists across Execute calls like a prepacked tensor; the cache itself
// (and, for a prepack output, nothing else) has no buffer.
func (g *WebGPUGraph) makeHalfKV() error {
	if len(g.an.HalfKV) == 0 {
		return nil
	}
	src := map[int32]int32{}
	for _, op := range g.graph.Chain {
		if op.Name == prepack.Op && len(op.Args) == 2 {
			src[op.Args[1]] = op.Args[0]
		}
	}
	for _, id := range g.an.HalfKV {
		c := id
		if ts := g.tensors[id]; !ts.constant {
			s, ok := src[id]
			if !ok || s < 0 || int(s) >= len(g.tensors) || g.tensors[s] == nil || !g.tensors[s].constant {
				return fmt.Errorf("%w: KV cache %d is neither a constant nor an et_vk.prepack output of one", ErrInvalidGraph, id)
			}
			c = s
		}
		cs := g.tensors[c]
		if cs.dtype != serialization.Float32 || cs.numel != g.tensors[id].numel {
			return fmt.Errorf("%w: KV cache %d: source %d is %v with %d elements, want float32 with %d", ErrInvalidGraph, id, c, cs.dtype, cs.numel, g.tensors[id].numel)
		}
		data, err := g.constantBytes(c, cs)
		if err != nil {
			return err
		}
		words := ops.HalfCacheWords(cs.numel)
		halves := make([]byte, 0, words*4)
		halves = tensor.NarrowHalf(halves, data)
		for int64(len(halves)) < words*4 {
			halves = append(halves, 0)
		}
		g.stats.NumHalfKVCaches++
		ts := &tensorState{dtype: serialization.Int32, dims: []int64{words}, numel: words, nbytes: words * 4,
			constID: -1, memObj: -1, materialized: true}
		ts.setLive(ts.dims, words)
		vid := int32(len(g.tensors))
		g.tensors = append(g.tensors, ts)
		g.halfKV[id] = vid
		g.place(placement{id: vid, size: uint64(words * 4), data: halves, stat: &g.stats.HalfKVCacheBytes, label: fmt.Sprintf("half KV cache %d", id)})
	}
	return nil
}

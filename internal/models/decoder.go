package models

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// DecoderConfig sizes the decoder: a vocabulary of Vocab tokens embedded
// in Dim features; attention with Heads query heads and KVHeads key/value
// heads (grouped-query attention when fewer) of HeadDim each; a SwiGLU
// feed-forward block of Hidden units. One Execute takes up to MaxTokens
// tokens; the KV cache holds MaxSeq positions.
type DecoderConfig struct {
	Vocab, Dim, Heads, KVHeads, HeadDim, Hidden int64
	MaxTokens, MaxSeq                           int64
	Eps, RopeTheta                              float64
	Seed                                        uint64
	// SplitCache writes the cache update and the attention as separate
	// ops, update_cache.default for each cache then
	// llama.custom_sdpa.default (as ExecuTorch's llama export does with
	// its custom KV-cache module), instead of one
	// sdpa_with_kv_cache.default.
	SplitCache bool
}

// DefaultDecoder is a toy llama-style layer: 64 features, 4 query heads
// sharing 2 key/value heads of 16, a 32-position cache.
var DefaultDecoder = DecoderConfig{Vocab: 96, Dim: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Hidden: 128,
	MaxTokens: 8, MaxSeq: 32, Eps: 1e-5, RopeTheta: 10000, Seed: 5}

// Decoder is one llama-style transformer decoder layer between a token
// embedding and an output head, as the Vulkan exporter writes it with
// ExecuTorch's custom ops:
//
//	h = embedding(tokens)                                  # [1, S, Dim]
//	x = rms_norm(h)
//	q, k, v = linear(x, wq), linear(x, wk), linear(x, wv)  # viewed [1, S, heads, HeadDim]
//	q, k = apply_rotary_emb(q, k, cos[pos:pos+S], sin[pos:pos+S])
//	a = sdpa_with_kv_cache(q, k, v, k_cache, v_cache, pos) # writes cache rows pos..pos+S-1
//	h = h + linear(a.view(1, S, -1), wo)
//	x = rms_norm(h)
//	h = h + linear(silu(linear(x, w1)) * linear(x, w3), w2)
//	logits = linear(rms_norm(h), wout)                     # [1, S, Vocab]
//
// The inputs are tokens (int32, declared [1, MaxTokens], an upper bound:
// S is whatever the caller passes, 1..MaxTokens) and input_pos (a SymInt,
// the position of the first token). S reaches the ops as a SymInt too
// (sym_size.int of tokens), which is how view sizes and the rope table
// slice follow the live shape. The KV caches are et_vk.prepack outputs:
// persistent buffers that sdpa_with_kv_cache updates in place, so one
// loaded model carries its cache from one Execute to the next. Outputs:
// h (the layer's output, [1, S, Dim]) and logits.
type Decoder struct {
	Cfg DecoderConfig
	// B is the graph for the GPU: the caches start zeroed.
	B *serialization.Builder
	s *stack
}

// NewDecoder builds the graph with weights drawn from cfg.Seed.
func NewDecoder(cfg DecoderConfig) (*Decoder, error) {
	if cfg.HeadDim%2 != 0 || cfg.Heads%cfg.KVHeads != 0 || cfg.MaxTokens > cfg.MaxSeq {
		return nil, fmt.Errorf("models: bad decoder config %+v", cfg)
	}
	r := newRNG(cfg.Seed)
	qd, kvd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	in := 1 / math.Sqrt(float64(cfg.Dim))
	w := &LlamaWeights{Embedding: r.normal(cfg.Vocab*cfg.Dim, 1)}
	w.Layers = []LayerWeights{randomLayer(r, cfg.Dim, qd, kvd, cfg.Hidden)}
	w.Norm = r.uniform(cfg.Dim, 0.8, 1.2)
	w.Output = r.normal(cfg.Vocab*cfg.Dim, in)
	s := &stack{vocab: cfg.Vocab, dim: cfg.Dim, heads: cfg.Heads, kvHeads: cfg.KVHeads, headDim: cfg.HeadDim,
		hidden: cfg.Hidden, maxTokens: cfg.MaxTokens, maxSeq: cfg.MaxSeq, eps: cfg.Eps, w: w, splitCache: cfg.SplitCache}
	s.cos, s.sin = ropeTables(cfg.MaxSeq, cfg.HeadDim, cfg.RopeTheta)
	return &Decoder{Cfg: cfg, s: s, B: s.build(nil, false)}, nil
}

// Inputs returns the model inputs for one step: tokens [1, len(tokens)]
// and input_pos, a SymInt, as a one-element tensor.
func (d *Decoder) Inputs(tokens []int32, pos int64) []wgdelegate.Tensor {
	return []wgdelegate.Tensor{
		wgdelegate.FromInt32([]int64{1, int64(len(tokens))}, tokens),
		wgdelegate.FromInt64([]int64{1}, []int64{pos}),
	}
}

// DecoderReference replays a sequence of decoder steps on the reference
// interpreter, carrying the KV caches from step to step on the host.
type DecoderReference struct {
	r *stackReference
}

// NewReference starts a replay with zeroed caches, like a freshly loaded
// model.
func (d *Decoder) NewReference() *DecoderReference {
	return &DecoderReference{r: d.s.newReference()}
}

// Step runs one step: the graph, with caches starting as the previous step
// left them, on tokens at input_pos pos. It returns h and logits and keeps
// the updated caches for the next step.
func (r *DecoderReference) Step(tokens []int32, pos int64) ([]*reference.Tensor, error) {
	return r.r.step(tokens, pos)
}

// Argmax returns the index of the largest of the last row of logits
// ([1, S, Vocab]): the next token a greedy decoder picks.
func Argmax(logits []float32, vocab int) int32 {
	row := logits[len(logits)-vocab:]
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}

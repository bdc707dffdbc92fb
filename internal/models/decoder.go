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
	w decoderWeights
}

type decoderWeights struct {
	emb, attnNorm, wq, wk, wv, wo, ffnNorm, w1, w3, w2, norm, out []float32
	cos, sin                                                      []float32
}

// NewDecoder builds the graph with weights drawn from cfg.Seed.
func NewDecoder(cfg DecoderConfig) (*Decoder, error) {
	if cfg.HeadDim%2 != 0 || cfg.Heads%cfg.KVHeads != 0 || cfg.MaxTokens > cfg.MaxSeq {
		return nil, fmt.Errorf("models: bad decoder config %+v", cfg)
	}
	r := newRNG(cfg.Seed)
	qd, kvd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	in := 1 / math.Sqrt(float64(cfg.Dim))
	w := decoderWeights{
		emb:      r.normal(cfg.Vocab*cfg.Dim, 1),
		attnNorm: r.uniform(cfg.Dim, 0.8, 1.2),
		wq:       r.normal(qd*cfg.Dim, in),
		wk:       r.normal(kvd*cfg.Dim, in),
		wv:       r.normal(kvd*cfg.Dim, in),
		wo:       r.normal(cfg.Dim*qd, 1/math.Sqrt(float64(qd))),
		ffnNorm:  r.uniform(cfg.Dim, 0.8, 1.2),
		w1:       r.normal(cfg.Hidden*cfg.Dim, in),
		w3:       r.normal(cfg.Hidden*cfg.Dim, in),
		w2:       r.normal(cfg.Dim*cfg.Hidden, 1/math.Sqrt(float64(cfg.Hidden))),
		norm:     r.uniform(cfg.Dim, 0.8, 1.2),
		out:      r.normal(cfg.Vocab*cfg.Dim, in),
	}
	// llama's rope tables: position p rotates pair j of each head by
	// p·θ^(-2j/HeadDim).
	half := cfg.HeadDim / 2
	w.cos, w.sin = make([]float32, cfg.MaxSeq*half), make([]float32, cfg.MaxSeq*half)
	for p := range cfg.MaxSeq {
		for j := range half {
			a := float64(p) * math.Pow(cfg.RopeTheta, -2*float64(j)/float64(cfg.HeadDim))
			w.cos[p*half+j], w.sin[p*half+j] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	d := &Decoder{Cfg: cfg, w: w}
	zero := make([]float32, d.cacheNumel())
	d.B = d.build(zero, zero, false)
	return d, nil
}

func (d *Decoder) cacheShape() []int64 {
	return []int64{1, d.Cfg.MaxSeq, d.Cfg.KVHeads, d.Cfg.HeadDim}
}

func (d *Decoder) cacheNumel() int64 { return d.Cfg.MaxSeq * d.Cfg.KVHeads * d.Cfg.HeadDim }

// build writes the graph with the caches' starting contents kc and vc.
// With exposeCaches the caches are graph outputs too (after h and
// logits): the reference interpreter's way of handing back the state a
// step leaves in them.
func (d *Decoder) build(kc, vc []float32, exposeCaches bool) *serialization.Builder {
	c, w := d.Cfg, d.w
	f := serialization.Float32
	b := serialization.NewBuilder()
	T, D, hd := c.MaxTokens, c.Dim, c.HeadDim
	qd, kvd := c.Heads*hd, c.KVHeads*hd
	act := func(s ...int64) int32 { return b.Tensor(f, dims(s...), -1) }
	linear := func(x, wt int32, out int32) { b.Op("aten.linear.default", x, wt, b.Null(), out) }

	tokens := b.Tensor(serialization.Int32, dims(1, T), -1)
	pos := b.SymInt(0)
	b.Inputs(tokens, pos)

	// S, the live token count, and end = input_pos + S.
	S, end := b.SymInt(0), b.SymInt(0)
	b.Op("sym_size.int", tokens, b.Int(1), S)
	b.Op("add", pos, S, end)
	view := func(x int32, out int32, tail ...int64) {
		size := []int32{b.Int(1), S}
		for _, t := range tail {
			size = append(size, b.Int(t))
		}
		b.Op("aten.view_copy.default", x, b.ValueList(size...), out)
	}

	// Embedding: [weight, indices, padding_idx, scale_grad_by_freq, sparse, out].
	h0 := act(1, T, D)
	b.Op("aten.embedding.default", weight(b, w.emb, c.Vocab, D), tokens, b.Int(-1), b.Bool(false), b.Bool(false), h0)

	// Attention block.
	x1 := act(1, T, D)
	b.Op("et_vk.rms_norm.default", h0, weight(b, w.attnNorm, D), b.Double(c.Eps), x1)
	q, k, v := act(1, T, qd), act(1, T, kvd), act(1, T, kvd)
	linear(x1, weight(b, w.wq, qd, D), q)
	linear(x1, weight(b, w.wk, kvd, D), k)
	linear(x1, weight(b, w.wv, kvd, D), v)
	qv, kv, vv := act(1, T, c.Heads, hd), act(1, T, c.KVHeads, hd), act(1, T, c.KVHeads, hd)
	view(q, qv, c.Heads, hd)
	view(k, kv, c.KVHeads, hd)
	view(v, vv, c.KVHeads, hd)
	// The rope table rows of positions input_pos .. input_pos+S-1:
	// [self, dim, start, end, step, out] with SymInt bounds.
	cos, sin := act(T, hd/2), act(T, hd/2)
	b.Op("aten.slice_copy.Tensor", weight(b, w.cos, c.MaxSeq, hd/2), b.Int(0), pos, end, b.Int(1), cos)
	b.Op("aten.slice_copy.Tensor", weight(b, w.sin, c.MaxSeq, hd/2), b.Int(0), pos, end, b.Int(1), sin)
	qr, kr := act(1, T, c.Heads, hd), act(1, T, c.KVHeads, hd)
	b.Op("et_vk.apply_rotary_emb.default", qv, kv, cos, sin, b.ValueList(qr, kr))
	// The caches: constants copied once, at load, into writable buffers.
	cacheDims := dims(d.cacheShape()...)
	kcConst, _ := b.NamedConst(f, cacheDims, f32bytes(kc))
	vcConst, _ := b.NamedConst(f, cacheDims, f32bytes(vc))
	kCache, vCache := b.Tensor(f, cacheDims, -1), b.Tensor(f, cacheDims, -1)
	b.Op("et_vk.prepack.default", kcConst, kCache)
	b.Op("et_vk.prepack.default", vcConst, vCache)
	// [q, k, v, k_cache, v_cache, input_pos, seq_len, attn_mask,
	//  dropout_p, is_causal, scale, out]
	attn := act(1, T, c.Heads, hd)
	if c.SplitCache {
		// update_cache: [value, cache, input_pos, out (a placeholder)];
		// custom_sdpa: [q, k_cache, v_cache, input_pos, attn_mask,
		// dropout_p, is_causal, scale, out].
		b.Op("update_cache.default", kr, kCache, pos, act(1))
		b.Op("update_cache.default", vv, vCache, pos, act(1))
		b.Op("llama.custom_sdpa.default", qr, kCache, vCache, pos, b.Null(), b.Double(0), b.Bool(true), b.Null(), attn)
	} else {
		b.Op("sdpa_with_kv_cache.default", qr, kr, vv, kCache, vCache, pos, S, b.Null(), b.Double(0), b.Bool(true), b.Null(), attn)
	}
	a2, o, h1 := act(1, T, qd), act(1, T, D), act(1, T, D)
	view(attn, a2, qd)
	linear(a2, weight(b, w.wo, D, qd), o)
	b.Op("aten.add.Tensor", h0, o, b.Int(1), h1)

	// Feed-forward block: SwiGLU, silu(g) written as g·sigmoid(g).
	x2 := act(1, T, D)
	b.Op("et_vk.rms_norm.default", h1, weight(b, w.ffnNorm, D), b.Double(c.Eps), x2)
	g, sg, silu, u, gu := act(1, T, c.Hidden), act(1, T, c.Hidden), act(1, T, c.Hidden), act(1, T, c.Hidden), act(1, T, c.Hidden)
	linear(x2, weight(b, w.w1, c.Hidden, D), g)
	b.Op("aten.sigmoid.default", g, sg)
	b.Op("aten.mul.Tensor", g, sg, silu)
	linear(x2, weight(b, w.w3, c.Hidden, D), u)
	b.Op("aten.mul.Tensor", silu, u, gu)
	dn, h2 := act(1, T, D), act(1, T, D)
	linear(gu, weight(b, w.w2, D, c.Hidden), dn)
	b.Op("aten.add.Tensor", h1, dn, b.Int(1), h2)

	// Output head.
	xf, logits := act(1, T, D), act(1, T, c.Vocab)
	b.Op("et_vk.rms_norm.default", h2, weight(b, w.norm, D), b.Double(c.Eps), xf)
	linear(xf, weight(b, w.out, c.Vocab, D), logits)

	b.Outputs(h2, logits)
	if exposeCaches {
		b.Outputs(kCache, vCache)
	}
	return b
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
	d      *Decoder
	kc, vc []float32
}

// NewReference starts a replay with zeroed caches, like a freshly loaded
// model.
func (d *Decoder) NewReference() *DecoderReference {
	return &DecoderReference{d: d, kc: make([]float32, d.cacheNumel()), vc: make([]float32, d.cacheNumel())}
}

// Step runs one step: the graph, with caches starting as the previous step
// left them, on tokens at input_pos pos. It returns h and logits and keeps
// the updated caches for the next step.
func (r *DecoderReference) Step(tokens []int32, pos int64) ([]*reference.Tensor, error) {
	b := r.d.build(r.kc, r.vc, true)
	tok := reference.New(serialization.Int32, []int64{1, int64(len(tokens))})
	for i, t := range tokens {
		tok.V[i] = float64(t)
	}
	p := reference.New(serialization.Int64, []int64{1})
	p.V[0] = float64(pos)
	outs, err := RunReference(b, []*reference.Tensor{tok, p})
	if err != nil {
		return nil, err
	}
	for i, dst := range [][]float32{r.kc, r.vc} {
		for j, v := range outs[2+i].V {
			dst[j] = float32(v)
		}
	}
	return outs[:2], nil
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

package models

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// LlamaConfig sizes a llama-style model: Layers decoder layers of Dim
// features, attention with Heads query heads and KVHeads key/value heads
// (grouped-query attention when fewer) of Dim/Heads each, a SwiGLU
// feed-forward block of Hidden units, a vocabulary of Vocab tokens. The KV
// caches hold MaxSeq positions; one Execute takes up to MaxTokens tokens.
// Seed draws the random weights (RandomLlamaWeights).
type LlamaConfig struct {
	Dim, Hidden, Layers, Heads, KVHeads, Vocab int64
	MaxSeq, MaxTokens                          int64
	Eps, RopeTheta                             float64
	Seed                                       uint64
	// SplitCache writes update_cache ×2 + llama.custom_sdpa per layer
	// (ExecuTorch's custom KV-cache module before the Vulkan pass fuses
	// it) instead of sdpa_with_kv_cache.
	SplitCache bool
	// Q4Group, when positive, writes every linear (the layers' and the
	// output head's) as et_vk.linear_q4gsw.default, as `export_llama
	// -qmode 4w -G Q4Group` leaves them: each weight row quantized in
	// groups of Q4Group along K, symmetric 4-bit (QuantizeQ4GSW). Dim and
	// Hidden must be multiples of it, and it of 8.
	Q4Group int64
	// Dynamic8, with Q4Group, writes every linear the way `export_llama
	// -qmode 8da4w -G Q4Group` leaves it: torchao.choose_qparams_affine
	// (per-row asymmetric int8 qparams of the activation) feeding
	// et_vk.linear_dq8ca_q4gsw.default, which quantizes the activation
	// with them and multiplies it by the same 4-bit weights, with the
	// per-group weight sums the exporter adds.
	Dynamic8 bool
	// EmbeddingQ4Group, when positive, writes the token embedding as
	// et_vk.embedding_q4gsw.default, as `export_llama -E 4,G` leaves it:
	// 4-bit rows in groups of EmbeddingQ4Group, packed the linear way
	// (is_linear_weight true), scales [Vocab, Dim/G] ([Vocab] for one
	// group per row). It must be a multiple of 8 dividing Dim, and Dim a
	// multiple of 32 (the runtimes' condition).
	EmbeddingQ4Group int64
}

// Stories110M and Stories260K have the shapes of llama2.c's TinyStories
// checkpoints stories110M.bin (with a 256-position cache; the checkpoint's
// is 1024) and stories260K.bin. Eps and RopeTheta are run.c's fixed
// values.
var (
	Stories110M = LlamaConfig{Dim: 768, Hidden: 2048, Layers: 12, Heads: 12, KVHeads: 12, Vocab: 32000,
		MaxSeq: 256, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 1}
	Stories260K = LlamaConfig{Dim: 64, Hidden: 172, Layers: 5, Heads: 8, KVHeads: 4, Vocab: 512,
		MaxSeq: 512, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 1}
	// Llama32_1B has Llama 3.2 1B's shape (its classifier is the
	// embedding, tied: set LlamaWeights.Output to the embedding), with a
	// 256-position cache; RopeTheta is Llama 3's base without its
	// frequency scaling.
	Llama32_1B = LlamaConfig{Dim: 2048, Hidden: 8192, Layers: 16, Heads: 32, KVHeads: 8, Vocab: 128256,
		MaxSeq: 256, MaxTokens: 1, Eps: 1e-5, RopeTheta: 500000, Seed: 1}
	// TinyLlama is the small llama the tests run: two layers, grouped-query
	// attention (4 query heads over 2 key/value heads of 8), a 40-token
	// vocabulary, a 16-position cache, up to 4 tokens per Execute.
	TinyLlama = LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 40,
		MaxSeq: 16, MaxTokens: 4, Eps: 1e-5, RopeTheta: 10000, Seed: 3}
)

// HeadDim is the size of one attention head.
func (c LlamaConfig) HeadDim() int64 { return c.Dim / c.Heads }

// Params counts the model's weights (the classifier included).
func (c LlamaConfig) Params() int64 {
	hd := c.HeadDim()
	layer := 2*c.Dim + c.Dim*c.Heads*hd*2 + 2*c.Dim*c.KVHeads*hd + 3*c.Dim*c.Hidden
	return 2*c.Vocab*c.Dim + c.Layers*layer + c.Dim
}

// Validate reports a configuration no graph can be written for.
func (c LlamaConfig) Validate() error {
	switch {
	case c.Dim <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.Vocab <= 0 || c.MaxSeq <= 0 || c.MaxTokens <= 0:
		return fmt.Errorf("models: llama config %+v: sizes must be positive", c)
	case c.Q4Group < 0 || (c.Q4Group > 0 && (c.Q4Group%8 != 0 || c.Dim%c.Q4Group != 0 || c.Hidden%c.Q4Group != 0)):
		return fmt.Errorf("models: llama config: Q4Group %d must be a multiple of 8 dividing Dim %d and Hidden %d", c.Q4Group, c.Dim, c.Hidden)
	case c.Dynamic8 && c.Q4Group == 0:
		return fmt.Errorf("models: llama config: Dynamic8 needs Q4Group (8da4w has 4-bit weights)")
	case c.EmbeddingQ4Group < 0 || (c.EmbeddingQ4Group > 0 && (c.EmbeddingQ4Group%8 != 0 || c.Dim%c.EmbeddingQ4Group != 0 || c.Dim%32 != 0)):
		return fmt.Errorf("models: llama config: EmbeddingQ4Group %d must be a multiple of 8 dividing Dim %d, a multiple of 32", c.EmbeddingQ4Group, c.Dim)
	case c.Dim%c.Heads != 0 || c.HeadDim()%2 != 0:
		return fmt.Errorf("models: llama config: Dim %d is not Heads %d × an even head size", c.Dim, c.Heads)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("models: llama config: Heads %d is not a multiple of KVHeads %d", c.Heads, c.KVHeads)
	case c.MaxTokens > c.MaxSeq:
		return fmt.Errorf("models: llama config: MaxTokens %d exceeds MaxSeq %d", c.MaxTokens, c.MaxSeq)
	}
	return nil
}

// RandomLlamaWeights draws weights from cfg.Seed: normal, with linear
// weights scaled by 1/√fan-in, norm weights near 1, and a classifier of
// its own (not the embedding).
func RandomLlamaWeights(cfg LlamaConfig) *LlamaWeights {
	r := newRNG(cfg.Seed)
	hd := cfg.HeadDim()
	qd, kvd := cfg.Heads*hd, cfg.KVHeads*hd
	in := 1 / math.Sqrt(float64(cfg.Dim))
	w := &LlamaWeights{Embedding: r.normal(cfg.Vocab*cfg.Dim, 1)}
	for range cfg.Layers {
		w.Layers = append(w.Layers, randomLayer(r, cfg.Dim, qd, kvd, cfg.Hidden))
	}
	w.Norm = r.uniform(cfg.Dim, 0.8, 1.2)
	w.Output = r.normal(cfg.Vocab*cfg.Dim, in)
	return w
}

// check reports weights whose sizes do not match cfg.
func (w *LlamaWeights) check(cfg LlamaConfig) error {
	hd := cfg.HeadDim()
	qd, kvd := cfg.Heads*hd, cfg.KVHeads*hd
	if int64(len(w.Layers)) != cfg.Layers {
		return fmt.Errorf("models: %d layers of weights, config has %d", len(w.Layers), cfg.Layers)
	}
	type arr struct {
		name string
		v    []float32
		n    int64
	}
	all := []arr{{"embedding", w.Embedding, cfg.Vocab * cfg.Dim}, {"norm", w.Norm, cfg.Dim}, {"output", w.Output, cfg.Vocab * cfg.Dim}}
	for i, l := range w.Layers {
		p := fmt.Sprintf("layer %d ", i)
		all = append(all, arr{p + "attention norm", l.AttnNorm, cfg.Dim}, arr{p + "wq", l.Wq, qd * cfg.Dim},
			arr{p + "wk", l.Wk, kvd * cfg.Dim}, arr{p + "wv", l.Wv, kvd * cfg.Dim}, arr{p + "wo", l.Wo, cfg.Dim * qd},
			arr{p + "ffn norm", l.FFNNorm, cfg.Dim}, arr{p + "w1", l.W1, cfg.Hidden * cfg.Dim},
			arr{p + "w2", l.W2, cfg.Dim * cfg.Hidden}, arr{p + "w3", l.W3, cfg.Hidden * cfg.Dim})
	}
	for _, a := range all {
		if int64(len(a.v)) != a.n {
			return fmt.Errorf("models: %s has %d weights, want %d", a.name, len(a.v), a.n)
		}
	}
	return nil
}

// Llama is a multi-layer llama-style model laid out the way ExecuTorch's
// llama export (-kv --use_sdpa_with_kv_cache, fp32, dynamic shape) comes
// out of the Vulkan partitioner:
//
//	pos = select_as_symint(input_pos, 0, -1)
//	S = sym_size(tokens, 1); end = pos + S
//	h = embedding(tokens)                                   # [1, S, Dim]
//	cos, sin = slice_copy(prepack(freqs_cos|sin), 0, pos, end)
//	for each layer:
//	  x = rms_norm(h)
//	  q, k, v = linear(x, wq), linear(x, wk), linear(x, wv)  # viewed [1, S, heads, HeadDim]
//	  q, k = apply_rotary_emb(q, k, cos, sin)                # interleaved pairs, as run.c
//	  a = sdpa_with_kv_cache(q, k, v, k_cache, v_cache, pos) # caches: prepack outputs, updated in place
//	  h = h + linear(a.view(1, S, -1), wo)
//	  x = rms_norm(h)
//	  g = linear(x, w1)                                      # silu(g) written as g·sigmoid(g)
//	  h = h + linear(g * sigmoid(g) * linear(x, w3), w2)
//	logits = linear(rms_norm(h[:, -1, :]), wout)             # [1, Vocab]
//
// Linear, embedding and rms_norm weights are constants (TensorRefs) that
// the ops prepack themselves; the rope tables and the caches go through
// et_vk.prepack. The inputs are tokens (int32 [1, MaxTokens], an upper
// bound: S is 1..MaxTokens) and input_pos (int64 [1]); the output is the
// last token's logits. It computes what llama2.c's run.c computes for the
// same weights, one token at a time.
type Llama struct {
	Cfg LlamaConfig
	W   *LlamaWeights
	// B is the graph for the GPU, with zeroed caches and the exporter's
	// memory plan (PlanExporter) applied.
	B *serialization.Builder
	s *stack
}

// llamaWeights checks cfg, and w against it; a nil w is
// RandomLlamaWeights(cfg).
func llamaWeights(cfg LlamaConfig, w *LlamaWeights) (*LlamaWeights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if w == nil {
		return RandomLlamaWeights(cfg), nil
	}
	if err := w.check(cfg); err != nil {
		return nil, err
	}
	return w, nil
}

// NewLlama writes the graph for cfg with weights w (RandomLlamaWeights
// when nil).
func NewLlama(cfg LlamaConfig, w *LlamaWeights) (*Llama, error) {
	w, err := llamaWeights(cfg, w)
	if err != nil {
		return nil, err
	}
	s := &stack{vocab: cfg.Vocab, dim: cfg.Dim, heads: cfg.Heads, kvHeads: cfg.KVHeads, headDim: cfg.HeadDim(),
		hidden: cfg.Hidden, maxTokens: cfg.MaxTokens, maxSeq: cfg.MaxSeq, eps: cfg.Eps, w: w,
		splitCache: cfg.SplitCache, exported: true, q4Group: cfg.Q4Group, dyn8: cfg.Dynamic8,
		embedQ4Group: cfg.EmbeddingQ4Group}
	s.cos, s.sin = ropeTables(cfg.MaxSeq, cfg.HeadDim(), cfg.RopeTheta)
	l := &Llama{Cfg: cfg, W: w, s: s, B: s.build(nil, false)}
	ApplyPlan(l.B, PlanExporter)
	return l, nil
}

// Inputs returns the model inputs for one step: tokens [1, len(tokens)]
// and input_pos [1].
func (l *Llama) Inputs(tokens []int32, pos int64) []wgdelegate.Tensor {
	return []wgdelegate.Tensor{
		wgdelegate.FromInt32([]int64{1, int64(len(tokens))}, tokens),
		wgdelegate.FromInt64([]int64{1}, []int64{pos}),
	}
}

// LlamaReference replays a sequence of steps on the reference interpreter
// (float64), carrying the KV caches from step to step on the host.
type LlamaReference struct {
	r *stackReference
}

// NewReference starts a replay with zeroed caches, like a freshly loaded
// model.
func (l *Llama) NewReference() *LlamaReference { return &LlamaReference{r: l.s.newReference()} }

// NewHalfKVReference is NewReference for a model loaded with
// ops.Config.HalfKVCache: the attentions read the cached k and v rounded
// to half (reference.Options.HalfKVCache).
func (l *Llama) NewHalfKVReference() *LlamaReference {
	r := l.s.newReference()
	r.opts.HalfKVCache = true
	return &LlamaReference{r: r}
}

// Step runs tokens at input_pos pos and returns the logits of the last of
// them, [1, Vocab].
func (r *LlamaReference) Step(tokens []int32, pos int64) (*reference.Tensor, error) {
	outs, err := r.r.step(tokens, pos)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// llama2.c checkpoint (the legacy version-0 format run.c reads): a header
// of seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len; a negative vocab_size means the classifier is not
// the embedding), then float32 arrays, each with all layers back to back:
// token embedding, attention norms, wq, wk, wv, wo, ffn norms, w1, w2, w3,
// the final norm, two unused rope tables of seq_len·head_size/2, and the
// classifier when it is not shared.
const llama2cHeader = 7 * 4

// maxLlama2CSize caps each header field of a checkpoint ReadLlama2C
// accepts, before any size is multiplied out: 2^19, past Llama 3's
// 128256-token vocabulary and the 270000 of TestChunkedLlamaMatchesRunC
// (products of three fields stay far below 2^63).
const maxLlama2CSize = 1 << 19

// WriteLlama2C writes cfg and w as a llama2.c checkpoint, with MaxSeq as
// its seq_len. The classifier is written as shared when w.Output equals
// w.Embedding. The rope tables run.c skips are written as the tables the
// graph uses.
func WriteLlama2C(out io.Writer, cfg LlamaConfig, w *LlamaWeights) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := w.check(cfg); err != nil {
		return err
	}
	shared := slices.Equal(w.Output, w.Embedding)
	vocab := int32(cfg.Vocab)
	if !shared {
		vocab = -vocab
	}
	hdr := []int32{int32(cfg.Dim), int32(cfg.Hidden), int32(cfg.Layers), int32(cfg.Heads), int32(cfg.KVHeads), vocab, int32(cfg.MaxSeq)}
	if err := binary.Write(out, binary.LittleEndian, hdr); err != nil {
		return fmt.Errorf("models: writing the llama2.c header: %w", err)
	}
	cos, sin := ropeTables(cfg.MaxSeq, cfg.HeadDim(), cfg.RopeTheta)
	arrays := [][]float32{w.Embedding}
	each := func(f func(l *LayerWeights) []float32) {
		for i := range w.Layers {
			arrays = append(arrays, f(&w.Layers[i]))
		}
	}
	each(func(l *LayerWeights) []float32 { return l.AttnNorm })
	each(func(l *LayerWeights) []float32 { return l.Wq })
	each(func(l *LayerWeights) []float32 { return l.Wk })
	each(func(l *LayerWeights) []float32 { return l.Wv })
	each(func(l *LayerWeights) []float32 { return l.Wo })
	each(func(l *LayerWeights) []float32 { return l.FFNNorm })
	each(func(l *LayerWeights) []float32 { return l.W1 })
	each(func(l *LayerWeights) []float32 { return l.W2 })
	each(func(l *LayerWeights) []float32 { return l.W3 })
	arrays = append(arrays, w.Norm, cos, sin)
	if !shared {
		arrays = append(arrays, w.Output)
	}
	for _, a := range arrays {
		if _, err := out.Write(f32bytes(a)); err != nil {
			return fmt.Errorf("models: writing the llama2.c weights: %w", err)
		}
	}
	return nil
}

// ErrLlama2C is wrapped by the errors ReadLlama2C returns for a malformed
// checkpoint.
var ErrLlama2C = errors.New("malformed llama2.c checkpoint")

// ErrLlama2CVersion is wrapped, with ErrLlama2C, by the error ReadLlama2C
// returns for a checkpoint of llama2.c's later export versions (1: float32,
// 2: int8), which start with the magic "ak42" (the uint32 0x616b3432) and a
// version number: run.c reads only the legacy version-0 format, and so
// does ReadLlama2C. llama2.c's export.py writes version 0 with --version 0.
var ErrLlama2CVersion = errors.New("llama2.c export version other than 0")

// llama2cMagic is the first uint32 of a version-1 or later llama2.c
// export ("ak42"; the bytes "24ka" in the file).
const llama2cMagic = 0x616b3432

// ParseLlama2CHeader reads a llama2.c checkpoint's header, as ReadLlama2C
// does, and checks it and the size of data without reading the weights:
// the config ReadLlama2C would return and whether the classifier is the
// embedding (a positive vocab_size).
func ParseLlama2CHeader(data []byte) (cfg LlamaConfig, shared bool, err error) {
	if len(data) >= 4 && binary.LittleEndian.Uint32(data) == llama2cMagic {
		version := "of an unknown version"
		if len(data) >= 8 {
			version = fmt.Sprintf("version %d", int32(binary.LittleEndian.Uint32(data[4:])))
		}
		return LlamaConfig{}, false, fmt.Errorf("models: %w: %w: magic \"ak42\", %s; run.c reads only the legacy version-0 format (export.py --version 0)",
			ErrLlama2C, ErrLlama2CVersion, version)
	}
	if len(data) < llama2cHeader {
		return LlamaConfig{}, false, fmt.Errorf("models: %w: %d bytes, shorter than the header", ErrLlama2C, len(data))
	}
	var h [7]int64
	for i := range h {
		h[i] = int64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	shared = h[5] > 0
	vocab := h[5]
	if vocab < 0 {
		vocab = -vocab
	}
	for i, v := range []int64{h[0], h[1], h[2], h[3], h[4], vocab, h[6]} {
		if v <= 0 || v > maxLlama2CSize {
			return LlamaConfig{}, false, fmt.Errorf("models: %w: header field %d is %d, want 1..%d", ErrLlama2C, i, v, maxLlama2CSize)
		}
	}
	cfg = LlamaConfig{Dim: h[0], Hidden: h[1], Layers: h[2], Heads: h[3], KVHeads: h[4], Vocab: vocab, MaxSeq: h[6],
		MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000}
	if err := cfg.Validate(); err != nil {
		return LlamaConfig{}, false, fmt.Errorf("%w: %w", ErrLlama2C, err)
	}
	hd := cfg.HeadDim()
	qd, kvd := cfg.Heads*hd, cfg.KVHeads*hd
	// Every field is at most 2^19 (and the query width is Dim), so the
	// largest term, Layers·7·Dim², stays below 2^60: these sums of
	// products, times 4, fit in an int64.
	floats := cfg.Vocab*cfg.Dim + cfg.Layers*(2*cfg.Dim+2*qd*cfg.Dim+2*kvd*cfg.Dim+3*cfg.Hidden*cfg.Dim) + cfg.Dim + cfg.MaxSeq*hd
	if !shared {
		floats += cfg.Vocab * cfg.Dim
	}
	switch want := llama2cHeader + 4*floats; {
	case int64(len(data)) < want:
		return LlamaConfig{}, false, fmt.Errorf("models: %w: truncated: %d bytes, the header calls for %d", ErrLlama2C, len(data), want)
	case int64(len(data)) > want:
		return LlamaConfig{}, false, fmt.Errorf("models: %w: %d bytes, %d more than the header calls for", ErrLlama2C, len(data), int64(len(data))-want)
	}
	return cfg, shared, nil
}

// ReadLlama2C reads a llama2.c checkpoint. The config it returns has the
// checkpoint's sizes, MaxSeq = seq_len, MaxTokens 1 and run.c's Eps
// (1e-5) and RopeTheta (10000). A shared classifier comes back as Output
// aliasing Embedding. The file must hold exactly the arrays the header
// calls for.
func ReadLlama2C(data []byte) (LlamaConfig, *LlamaWeights, error) {
	cfg, shared, err := ParseLlama2CHeader(data)
	if err != nil {
		return LlamaConfig{}, nil, err
	}
	hd := cfg.HeadDim()
	qd, kvd := cfg.Heads*hd, cfg.KVHeads*hd
	off := llama2cHeader
	next := func(n int64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
		}
		off += 4 * int(n)
		return v
	}
	w := &LlamaWeights{Embedding: next(cfg.Vocab * cfg.Dim), Layers: make([]LayerWeights, cfg.Layers)}
	each := func(n int64, set func(l *LayerWeights, v []float32)) {
		for i := range w.Layers {
			set(&w.Layers[i], next(n))
		}
	}
	each(cfg.Dim, func(l *LayerWeights, v []float32) { l.AttnNorm = v })
	each(qd*cfg.Dim, func(l *LayerWeights, v []float32) { l.Wq = v })
	each(kvd*cfg.Dim, func(l *LayerWeights, v []float32) { l.Wk = v })
	each(kvd*cfg.Dim, func(l *LayerWeights, v []float32) { l.Wv = v })
	each(cfg.Dim*qd, func(l *LayerWeights, v []float32) { l.Wo = v })
	each(cfg.Dim, func(l *LayerWeights, v []float32) { l.FFNNorm = v })
	each(cfg.Hidden*cfg.Dim, func(l *LayerWeights, v []float32) { l.W1 = v })
	each(cfg.Dim*cfg.Hidden, func(l *LayerWeights, v []float32) { l.W2 = v })
	each(cfg.Hidden*cfg.Dim, func(l *LayerWeights, v []float32) { l.W3 = v })
	w.Norm = next(cfg.Dim)
	off += 4 * int(cfg.MaxSeq*hd) // the unused rope tables
	if shared {
		w.Output = w.Embedding
	} else {
		w.Output = next(cfg.Vocab * cfg.Dim)
	}
	return cfg, w, nil
}

// WriteLlama2CTokenizer writes a tokenizer.bin run.c accepts for vocab
// tokens, whose piece for token i is "<i>", so that the token ids can be
// read back from the text run.c prints (ParseLlama2CPieces).
func WriteLlama2CTokenizer(out io.Writer, vocab int) error {
	maxLen := len(fmt.Sprintf("<%d>", vocab-1))
	buf := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
	for i := range vocab {
		p := fmt.Sprintf("<%d>", i)
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(0))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(p)))
		buf = append(buf, p...)
	}
	if _, err := out.Write(buf); err != nil {
		return fmt.Errorf("models: writing the tokenizer: %w", err)
	}
	return nil
}

// ParseLlama2CPieces reads the token ids back from text of "<i>" pieces
// (WriteLlama2CTokenizer's), ignoring anything between them.
func ParseLlama2CPieces(text string) []int32 {
	var ids []int32
	for i := 0; i < len(text); i++ {
		if text[i] != '<' {
			continue
		}
		j, v := i+1, int64(0)
		for j < len(text) && text[j] >= '0' && text[j] <= '9' && v <= math.MaxInt32 {
			v = 10*v + int64(text[j]-'0')
			j++
		}
		if j > i+1 && j < len(text) && text[j] == '>' && v <= math.MaxInt32 {
			ids = append(ids, int32(v))
			i = j
		}
	}
	return ids
}

// randomLayer draws one decoder layer's weights: norms near 1, projections
// normal with variance 1/fan-in (dim features in, qd query and kvd
// key/value features, hidden feed-forward units).
func randomLayer(r *rng, dim, qd, kvd, hidden int64) LayerWeights {
	in := 1 / math.Sqrt(float64(dim))
	return LayerWeights{
		AttnNorm: r.uniform(dim, 0.8, 1.2),
		Wq:       r.normal(qd*dim, in),
		Wk:       r.normal(kvd*dim, in),
		Wv:       r.normal(kvd*dim, in),
		Wo:       r.normal(dim*qd, 1/math.Sqrt(float64(qd))),
		FFNNorm:  r.uniform(dim, 0.8, 1.2),
		W1:       r.normal(hidden*dim, in),
		W3:       r.normal(hidden*dim, in),
		W2:       r.normal(dim*hidden, 1/math.Sqrt(float64(hidden))),
	}
}

package models

import (
	"math"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// LayerWeights are one decoder layer's weights, each row-major with the
// output features first, as torch's nn.Linear and llama2.c store them.
type LayerWeights struct {
	AttnNorm []float32 // [Dim]
	Wq       []float32 // [Heads·HeadDim, Dim]
	Wk, Wv   []float32 // [KVHeads·HeadDim, Dim]
	Wo       []float32 // [Dim, Heads·HeadDim]
	FFNNorm  []float32 // [Dim]
	W1, W3   []float32 // [Hidden, Dim]: gate and up projections
	W2       []float32 // [Dim, Hidden]: down projection
}

// LlamaWeights are a llama-style model's weights.
type LlamaWeights struct {
	Embedding []float32 // [Vocab, Dim]
	Layers    []LayerWeights
	Norm      []float32 // [Dim]: the final rms_norm
	// Output is the classifier, [Vocab, Dim]. A model that shares it with
	// the embedding has Output equal to Embedding.
	Output []float32
}

// stack is a llama-style transformer as a graph writer: the sizes, the
// weights and how the graph is laid out. Decoder (one layer, the hidden
// state as an output too) and Llama (an ExecuTorch llama export) are both
// written by it.
type stack struct {
	vocab, dim, heads, kvHeads, headDim, hidden int64
	maxTokens, maxSeq                           int64
	eps                                         float64
	w                                           *LlamaWeights
	// cos and sin are the rope tables, [maxSeq, headDim/2].
	cos, sin []float32
	// splitCache writes update_cache ×2 + llama.custom_sdpa per layer
	// instead of one sdpa_with_kv_cache.
	splitCache bool
	// exported lays the graph out as ExecuTorch's llama export does:
	// input_pos is an int64 tensor [1] read through
	// et_vk.select_as_symint, the rope tables are et_vk.prepack outputs
	// (slice_copy does not prepack its input), only the last token's
	// logits are computed (select_copy.int of h) and logits are the only
	// output. Otherwise input_pos is a SymInt input, the tables are
	// sliced as constants and the outputs are h (the last layer's output,
	// all tokens) and logits (all tokens).
	exported bool
	// q4Group > 0 writes the linears as et_vk.linear_q4gsw.default with
	// weights quantized in groups of q4Group.
	q4Group int64
	// dyn8 writes those linears as choose_qparams_affine +
	// et_vk.linear_dq8ca_q4gsw (8da4w) instead.
	dyn8 bool
	// embedQ4Group > 0 writes the embedding as et_vk.embedding_q4gsw.
	embedQ4Group int64
}

// ropeTables returns llama's rope tables for maxSeq positions: position p
// rotates pair j of each head by p·θ^(-2j/headDim). They are computed the
// way llama2.c's run.c computes its angles, in float32 (the frequency
// rounded to float32, then multiplied by the position in float32), so that
// a graph and run.c rotate by the same angles.
func ropeTables(maxSeq, headDim int64, theta float64) (cos, sin []float32) {
	half := headDim / 2
	cos, sin = make([]float32, maxSeq*half), make([]float32, maxSeq*half)
	for j := range half {
		freq := float32(1 / math.Pow(theta, float64(2*j)/float64(headDim)))
		for p := range maxSeq {
			a := float64(float32(p) * freq)
			cos[p*half+j], sin[p*half+j] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return cos, sin
}

func (s *stack) layers() int { return len(s.w.Layers) }

func (s *stack) cacheShape() []int64 { return []int64{1, s.maxSeq, s.kvHeads, s.headDim} }

func (s *stack) cacheNumel() int64 { return s.maxSeq * s.kvHeads * s.headDim }

// build writes the graph. caches holds each layer's starting key and
// value cache contents (k0, v0, k1, v1, ...); nil means all zero. With
// exposeCaches the caches are graph outputs too, after the others: the
// reference interpreter's way of handing back the state a step leaves in
// them.
func (s *stack) build(caches [][]float32, exposeCaches bool) *serialization.Builder {
	f := serialization.Float32
	b := serialization.NewBuilder()
	T, D, hd := s.maxTokens, s.dim, s.headDim
	qd, kvd := s.heads*hd, s.kvHeads*hd
	act := func(sz ...int64) int32 { return b.Tensor(f, dims(sz...), -1) }
	// linear writes out = x·wᵀ for a float weight w [n, k], as
	// aten.linear or, quantized, et_vk.linear_q4gsw or (8da4w)
	// choose_qparams_affine + et_vk.linear_dq8ca_q4gsw. x is [1, T, k] or
	// [1, k].
	linear := func(x int32, w []float32, n, k int64, out int32) {
		if s.q4Group <= 0 {
			b.Op("aten.linear.default", x, weight(b, w, n, k), b.Null(), out)
			return
		}
		g := s.q4Group
		packed, scales := QuantizeQ4GSW(w, n, k, g)
		pw, _ := b.NamedConst(serialization.Uint8, dims(n, (k+7)/8*4), packed)
		ps := weight(b, scales, k/g, (n+3)/4*4)
		if !s.dyn8 {
			b.Op("et_vk.linear_q4gsw.default", x, pw, ps, b.Int(g), b.Null(), out)
			return
		}
		// The activation's qparams, one per row: [x, mapping_type,
		// block_size, target_dtype, quant_min, quant_max, eps,
		// scale_dtype, zero_point_dtype, keepdim, ValueList[scale, zp]]
		// as torchao's per-token int8 path calls it.
		xd := b.Graph().Values[x].Tensor.Dims
		lead := make([]int64, 0, len(xd))
		block := make([]int64, len(xd))
		for i, d := range xd {
			block[i] = 1
			if i < len(xd)-1 {
				lead = append(lead, int64(d))
			}
		}
		block[len(xd)-1] = k
		xs, xz := act(lead...), b.Tensor(serialization.Int8, dims(lead...), -1)
		b.Op("torchao.choose_qparams_affine.default", x, b.String("ASYMMETRIC"), b.IntList(block...), b.Null(),
			b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null(), b.Bool(false), b.ValueList(xs, xz))
		sums, _ := b.NamedConst(serialization.Int32, dims(k/g, (n+7)/8*8), i32bytes(Q4GroupSums(packed, n, k, g)))
		b.Op("et_vk.linear_dq8ca_q4gsw.default", x, xs, xz, pw, sums, ps, b.Int(g), b.Null(), out)
	}

	tokens := b.Tensor(serialization.Int32, dims(1, T), -1)
	var posT int32
	if s.exported {
		posT = b.Tensor(serialization.Int64, dims(1), -1)
		b.Inputs(tokens, posT)
	}
	pos := b.SymInt(0)
	if !s.exported {
		b.Inputs(tokens, pos)
	}

	// The prepack ops come first, as the exporter's insert_prepack_nodes
	// puts each right after its constant's placeholder, ahead of every
	// compute op. The caches are constants (mutable buffers, serialized as
	// constants) copied once, at load, into persistent buffers that the
	// attention updates in place. Zeroed caches all have the same bytes,
	// so they share one named key.
	cacheDims := dims(s.cacheShape()...)
	var cacheIDs []int32
	var zero []float32
	for l := range s.layers() {
		var kc, vc []float32
		if caches != nil {
			kc, vc = caches[2*l], caches[2*l+1]
		} else {
			if zero == nil {
				zero = make([]float32, s.cacheNumel())
			}
			kc, vc = zero, zero
		}
		kcConst, _ := b.NamedConst(f, cacheDims, f32bytes(kc))
		vcConst, _ := b.NamedConst(f, cacheDims, f32bytes(vc))
		kCache, vCache := b.Tensor(f, cacheDims, -1), b.Tensor(f, cacheDims, -1)
		b.Op("et_vk.prepack.default", kcConst, kCache)
		b.Op("et_vk.prepack.default", vcConst, vCache)
		cacheIDs = append(cacheIDs, kCache, vCache)
	}
	cosT, sinT := weight(b, s.cos, s.maxSeq, hd/2), weight(b, s.sin, s.maxSeq, hd/2)
	if s.exported {
		pc, ps := act(s.maxSeq, hd/2), act(s.maxSeq, hd/2)
		b.Op("et_vk.prepack.default", cosT, pc)
		b.Op("et_vk.prepack.default", sinT, ps)
		cosT, sinT = pc, ps
		// input_pos[-1].item(), as the exporter's select_as_symint
		// pattern writes it.
		b.Op("et_vk.select_as_symint.default", posT, b.Int(0), b.Int(-1), pos)
	}

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
	h := act(1, T, D)
	if g := s.embedQ4Group; g > 0 {
		// [weight, weight_scales, group_size, indices, is_linear_weight,
		//  out]: the rows packed like a linear weight, scales [V, D/g]
		// (not transposed), or [V] for one group per row.
		packed, tscales := QuantizeQ4GSW(s.w.Embedding, s.vocab, D, g)
		groups, vp4 := D/g, (s.vocab+3)/4*4
		scales := make([]float32, s.vocab*groups)
		for v := range s.vocab {
			for gi := range groups {
				scales[v*groups+gi] = tscales[gi*vp4+v]
			}
		}
		sd := dims(s.vocab, groups)
		if groups == 1 {
			sd = dims(s.vocab)
		}
		pw, _ := b.NamedConst(serialization.Uint8, dims(s.vocab, D/2), packed)
		ps, _ := b.NamedConst(f, sd, f32bytes(scales))
		b.Op("et_vk.embedding_q4gsw.default", pw, ps, b.Int(g), tokens, b.Bool(true), h)
	} else {
		b.Op("aten.embedding.default", weight(b, s.w.Embedding, s.vocab, D), tokens, b.Int(-1), b.Bool(false), b.Bool(false), h)
	}

	// The rope table rows of positions input_pos .. input_pos+S-1, shared
	// by every layer: [self, dim, start, end, step, out] with SymInt
	// bounds.
	cos, sin := act(T, hd/2), act(T, hd/2)
	b.Op("aten.slice_copy.Tensor", cosT, b.Int(0), pos, end, b.Int(1), cos)
	b.Op("aten.slice_copy.Tensor", sinT, b.Int(0), pos, end, b.Int(1), sin)

	for l, lw := range s.w.Layers {
		// Attention block.
		x1 := act(1, T, D)
		b.Op("et_vk.rms_norm.default", h, weight(b, lw.AttnNorm, D), b.Double(s.eps), x1)
		q, k, v := act(1, T, qd), act(1, T, kvd), act(1, T, kvd)
		linear(x1, lw.Wq, qd, D, q)
		linear(x1, lw.Wk, kvd, D, k)
		linear(x1, lw.Wv, kvd, D, v)
		qv, kv, vv := act(1, T, s.heads, hd), act(1, T, s.kvHeads, hd), act(1, T, s.kvHeads, hd)
		view(q, qv, s.heads, hd)
		view(k, kv, s.kvHeads, hd)
		view(v, vv, s.kvHeads, hd)
		qr, kr := act(1, T, s.heads, hd), act(1, T, s.kvHeads, hd)
		b.Op("et_vk.apply_rotary_emb.default", qv, kv, cos, sin, b.ValueList(qr, kr))
		kCache, vCache := cacheIDs[2*l], cacheIDs[2*l+1]
		attn := act(1, T, s.heads, hd)
		if s.splitCache {
			// update_cache: [value, cache, input_pos, out (a placeholder)];
			// custom_sdpa: [q, k_cache, v_cache, input_pos, attn_mask,
			// dropout_p, is_causal, scale, out].
			b.Op("update_cache.default", kr, kCache, pos, act(1))
			b.Op("update_cache.default", vv, vCache, pos, act(1))
			b.Op("llama.custom_sdpa.default", qr, kCache, vCache, pos, b.Null(), b.Double(0), b.Bool(true), b.Null(), attn)
		} else {
			// [q, k, v, k_cache, v_cache, input_pos, seq_len, attn_mask,
			//  dropout_p, is_causal, scale, out]
			b.Op("sdpa_with_kv_cache.default", qr, kr, vv, kCache, vCache, pos, S, b.Null(), b.Double(0), b.Bool(true), b.Null(), attn)
		}
		a2, o, h1 := act(1, T, qd), act(1, T, D), act(1, T, D)
		view(attn, a2, qd)
		linear(a2, lw.Wo, D, qd, o)
		b.Op("aten.add.Tensor", h, o, b.Int(1), h1)

		// Feed-forward block: SwiGLU, silu(g) written as g·sigmoid(g).
		x2 := act(1, T, D)
		b.Op("et_vk.rms_norm.default", h1, weight(b, lw.FFNNorm, D), b.Double(s.eps), x2)
		g, sg, silu, u, gu := act(1, T, s.hidden), act(1, T, s.hidden), act(1, T, s.hidden), act(1, T, s.hidden), act(1, T, s.hidden)
		linear(x2, lw.W1, s.hidden, D, g)
		b.Op("aten.sigmoid.default", g, sg)
		b.Op("aten.mul.Tensor", g, sg, silu)
		linear(x2, lw.W3, s.hidden, D, u)
		b.Op("aten.mul.Tensor", silu, u, gu)
		dn, h2 := act(1, T, D), act(1, T, D)
		linear(gu, lw.W2, D, s.hidden, dn)
		b.Op("aten.add.Tensor", h1, dn, b.Int(1), h2)
		h = h2
	}

	// Output head.
	if s.exported {
		// Only the last token's logits: h[:, -1, :].
		last, xf, logits := act(1, D), act(1, D), act(1, s.vocab)
		b.Op("aten.select_copy.int", h, b.Int(1), b.Int(-1), last)
		b.Op("et_vk.rms_norm.default", last, weight(b, s.w.Norm, D), b.Double(s.eps), xf)
		linear(xf, s.w.Output, s.vocab, D, logits)
		b.Outputs(logits)
	} else {
		xf, logits := act(1, T, D), act(1, T, s.vocab)
		b.Op("et_vk.rms_norm.default", h, weight(b, s.w.Norm, D), b.Double(s.eps), xf)
		linear(xf, s.w.Output, s.vocab, D, logits)
		b.Outputs(h, logits)
	}
	if exposeCaches {
		b.Outputs(cacheIDs...)
	}
	return b
}

// numOutputs is how many outputs build writes before the caches.
func (s *stack) numOutputs() int {
	if s.exported {
		return 1
	}
	return 2
}

// stackReference replays steps of a stack on the reference interpreter,
// carrying the KV caches from step to step on the host.
type stackReference struct {
	s      *stack
	caches [][]float32
	opts   reference.Options
}

func (s *stack) newReference() *stackReference {
	r := &stackReference{s: s}
	for range 2 * s.layers() {
		r.caches = append(r.caches, make([]float32, s.cacheNumel()))
	}
	return r
}

// step runs the graph, with caches starting as the previous step left
// them, on tokens at input_pos pos. It returns the graph's outputs (not
// the caches) and keeps the updated caches for the next step.
func (r *stackReference) step(tokens []int32, pos int64) ([]*reference.Tensor, error) {
	b := r.s.build(r.caches, true)
	tok := reference.New(serialization.Int32, []int64{1, int64(len(tokens))})
	for i, t := range tokens {
		tok.V[i] = float64(t)
	}
	p := reference.New(serialization.Int64, []int64{1})
	p.V[0] = float64(pos)
	outs, err := RunReferenceOptions(b, []*reference.Tensor{tok, p}, r.opts)
	if err != nil {
		return nil, err
	}
	n := r.s.numOutputs()
	for i, dst := range r.caches {
		for j, v := range outs[n+i].V {
			dst[j] = float32(v)
		}
	}
	return outs[:n], nil
}

// QuantizeQ4GSW quantizes a float weight w [n, k] (row-major) the way
// torchao's symmetric int4 per-group scheme does for `-qmode 4w`: per row
// and group of g along k, scale = max|w| / 7.5 and q = clamp(round(w /
// scale), -8, 7). It returns the bytes et_vk.linear_q4gsw reads: packed
// [n, roundup(k, 8)/2] with even k in the low nibble as q+8, and the
// scales transposed to [k/g, roundup(n, 4)] (zero-padded).
func QuantizeQ4GSW(w []float32, n, k, g int64) (packed []byte, scales []float32) {
	kp := (k + 7) / 8 * 8
	np4 := (n + 3) / 4 * 4
	packed = make([]byte, n*kp/2)
	scales = make([]float32, k/g*np4)
	for r := range n {
		row := w[r*k : (r+1)*k]
		for gi := range k / g {
			var amax float64
			for _, v := range row[gi*g : (gi+1)*g] {
				amax = math.Max(amax, math.Abs(float64(v)))
			}
			scale := float32(amax / 7.5)
			scales[gi*np4+r] = scale
			for j := gi * g; j < (gi+1)*g; j++ {
				q := 0.0
				if scale != 0 {
					q = math.Max(-8, math.Min(7, math.RoundToEven(float64(row[j]/scale))))
				}
				code := byte(int(q) + 8)
				if j%2 == 0 {
					packed[r*kp/2+j/2] |= code
				} else {
					packed[r*kp/2+j/2] |= code << 4
				}
			}
		}
	}
	return packed, scales
}

// Q4GroupSums returns the weight sums et_vk.linear_dq8ca_q4gsw takes with
// a weight QuantizeQ4GSW packed: per group of g along k and row n, the sum
// of the signed 4-bit values, transposed to [k/g, roundup(n, 8)] and
// zero-padded, as the exporter computes them before packing.
func Q4GroupSums(packed []byte, n, k, g int64) []int32 {
	kp := (k + 7) / 8 * 8
	np8 := (n + 7) / 8 * 8
	sums := make([]int32, k/g*np8)
	for r := range n {
		for j := range k {
			c := packed[r*kp/2+j/2]
			if j%2 == 1 {
				c >>= 4
			}
			sums[(j/g)*np8+r] += int32(c&15) - 8
		}
	}
	return sums
}

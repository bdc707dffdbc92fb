package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/ops/reference"
)

// llamaStep executes step step (tokens at pos) of l on m and of ref,
// checks that the logits agree within 1e-4, and returns the device's
// logits tensor, the reference's, and the device's values.
func llamaStep(t *testing.T, m *wgdelegate.Model, l *Llama, ref *LlamaReference, step int, tokens []int32, pos int64) (got wgdelegate.Tensor, want *reference.Tensor, logits []float32) {
	t.Helper()
	outs, err := m.Execute(context.Background(), l.Inputs(tokens, pos)...)
	if err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	want, err = ref.Step(tokens, pos)
	if err != nil {
		t.Fatalf("step %d: reference: %v", step, err)
	}
	if _, err := Compare(outs[0], want, Tolerance{Abs: 1e-4, Rel: 1e-4}); err != nil {
		t.Fatalf("step %d (input_pos %d): logits: %v", step, pos, err)
	}
	if logits, err = outs[0].Float32s(); err != nil {
		t.Fatal(err)
	}
	return outs[0], want, logits
}

// testLlama is TinyLlama, a small llama with two layers and grouped-query
// attention (4 query heads over 2 key/value heads of 8).
var testLlama = TinyLlama

// TestLlamaDecode loads a two-layer GQA llama through wgdelegate.Load and
// runs a 3-token prefill, then greedy decode steps of one token with
// input_pos advancing, checking the last token's logits of every step
// against the reference replay, and the greedy tokens against it too,
// under the dedicated and the exporter memory plans and both cache op
// styles.
func TestLlamaDecode(t *testing.T) {
	for _, split := range []bool{false, true} {
		for _, plan := range Plans {
			t.Run(fmt.Sprintf("split_cache=%v/plan=%s", split, plan), func(t *testing.T) {
				cfg := testLlama
				cfg.SplitCache = split
				decodeAgainstReference(t, cfg, plan)
			})
		}
	}
}

// TestLlamaQ4GSWDecode is TestLlamaDecode with every linear written as
// et_vk.linear_q4gsw (4-bit weights in groups of 16), as a `-qmode 4w`
// export has them, under both memory plans.
func TestLlamaQ4GSWDecode(t *testing.T) {
	for _, plan := range Plans {
		t.Run(fmt.Sprintf("plan=%s", plan), func(t *testing.T) {
			cfg := testLlama
			cfg.Q4Group = 16
			decodeAgainstReference(t, cfg, plan)
		})
	}
}

// TestLlama8da4wDecode is TestLlamaDecode for the other two forms an
// export_llama 4-bit model takes: every linear as 8da4w
// (choose_qparams_affine + linear_dq8ca_q4gsw, group 16) with the
// embedding as embedding_q4gsw (-E 4,16, and -E 4,32: one group per row,
// 1-D scales), and 4w linears with a 4-bit embedding, under both memory
// plans.
func TestLlama8da4wDecode(t *testing.T) {
	for _, c := range []struct {
		name       string
		dyn8       bool
		embedGroup int64
	}{{"8da4w/E16", true, 16}, {"8da4w/E32", true, 32}, {"4w/E16", false, 16}} {
		for _, plan := range Plans {
			t.Run(fmt.Sprintf("%s/plan=%s", c.name, plan), func(t *testing.T) {
				cfg := testLlama
				cfg.Q4Group, cfg.Dynamic8, cfg.EmbeddingQ4Group = 16, c.dyn8, c.embedGroup
				decodeAgainstReference(t, cfg, plan)
			})
		}
	}
}

// decodeAgainstReference loads the llama cfg describes under plan, runs a
// 3-token prefill and then greedy one-token steps, and checks every step's
// logits and greedy token against the reference replay.
func decodeAgainstReference(t *testing.T, cfg LlamaConfig, plan Plan) {
	t.Helper()
	l, err := NewLlama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ApplyPlan(l.B, plan)
	count := map[string]int{}
	for _, op := range l.B.Graph().Chain {
		count[op.Name]++
	}
	kind := "aten.linear.default"
	switch {
	case cfg.Dynamic8:
		kind = "et_vk.linear_dq8ca_q4gsw.default"
	case cfg.Q4Group > 0:
		kind = "et_vk.linear_q4gsw.default"
	}
	want := int(7*cfg.Layers + 1)
	qparams := 0
	if cfg.Dynamic8 {
		qparams = want
	}
	linears := count["aten.linear.default"] + count["et_vk.linear_q4gsw.default"] + count["et_vk.linear_dq8ca_q4gsw.default"]
	if count[kind] != want || linears != want || count["torchao.choose_qparams_affine.default"] != qparams {
		t.Fatalf("config %+v: ops %v, want %d %s and %d choose_qparams_affine", cfg, count, want, kind, qparams)
	}
	if emb := "et_vk.embedding_q4gsw.default"; (cfg.EmbeddingQ4Group > 0) != (count[emb] == 1) || count[emb]+count["aten.embedding.default"] != 1 {
		t.Fatalf("EmbeddingQ4Group %d: ops %v", cfg.EmbeddingQ4Group, count)
	}
	f, err := Encode(l.B, true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wgdelegate.Load(context.Background(), f.PTE, wgdelegate.WithData(f.PTD))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	checkQuantizedStats(t, cfg, m.MemoryStats())
	ref := l.NewReference()
	tokens, pos := []int32{1, 7, 23}, int64(0)
	for step := range 6 {
		_, want, logits := llamaStep(t, m, l, ref, step, tokens, pos)
		wantLogits := make([]float32, len(want.V))
		for i, v := range want.V {
			wantLogits[i] = float32(v)
		}
		next := Argmax(logits, int(cfg.Vocab))
		if w := Argmax(wantLogits, int(cfg.Vocab)); next != w {
			t.Fatalf("step %d: greedy token %d, reference %d", step, next, w)
		}
		pos += int64(len(tokens))
		tokens = []int32{next}
	}
}

// checkQuantizedStats checks MemoryStats' quantized-weight breakdown
// against the sizes the config implies: each linear's n·k/2 packed bytes,
// its [k/g, roundup(n, 4)] float scales and, with 8da4w, its
// [k/g, roundup(n, 8)] int32 sums; the 4-bit embedding's V·D/2 bytes and
// [V, D/g] scales.
func checkQuantizedStats(t *testing.T, cfg LlamaConfig, st wgdelegate.MemoryStats) {
	t.Helper()
	var n int
	var params, bytes int64
	linear := func(rows, k int64) {
		if cfg.Q4Group == 0 {
			return
		}
		n++
		params += rows * k
		bytes += rows*k/2 + k/cfg.Q4Group*((rows+3)/4*4)*4
		if cfg.Dynamic8 {
			bytes += k / cfg.Q4Group * ((rows + 7) / 8 * 8) * 4
		}
	}
	qd, kvd := cfg.Heads*cfg.HeadDim(), cfg.KVHeads*cfg.HeadDim()
	for range cfg.Layers {
		linear(qd, cfg.Dim)
		linear(kvd, cfg.Dim)
		linear(kvd, cfg.Dim)
		linear(cfg.Dim, qd)
		linear(cfg.Hidden, cfg.Dim)
		linear(cfg.Hidden, cfg.Dim)
		linear(cfg.Dim, cfg.Hidden)
	}
	linear(cfg.Vocab, cfg.Dim)
	if g := cfg.EmbeddingQ4Group; g > 0 {
		n++
		params += cfg.Vocab * cfg.Dim
		bytes += cfg.Vocab*cfg.Dim/2 + cfg.Vocab*(cfg.Dim/g)*4
	}
	if st.NumQuantizedWeights != n || st.QuantizedParams != params || st.QuantizedWeightBytes != bytes {
		t.Fatalf("MemoryStats: %d quantized weights, %d params, %d bytes; want %d, %d, %d",
			st.NumQuantizedWeights, st.QuantizedParams, st.QuantizedWeightBytes, n, params, bytes)
	}
	if bytes > 0 && st.QuantizedWeightBytes > st.TotalBytes() {
		t.Fatalf("quantized weights %d bytes exceed the total %d", st.QuantizedWeightBytes, st.TotalBytes())
	}
}

// TestQuantizeQ4GSW: the packed bytes put even k in the low nibble as
// q+8, the scales are transposed and padded, and dequantizing gives every
// weight back within half a step (exactly for the group's extreme).
func TestQuantizeQ4GSW(t *testing.T) {
	const n, k, g = 5, 24, 8
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%3)
	}
	packed, scales := QuantizeQ4GSW(w, n, k, g)
	if len(packed) != n*k/2 || len(scales) != (k/g)*8 {
		t.Fatalf("%d packed bytes and %d scales, want %d and %d", len(packed), len(scales), n*k/2, (k/g)*8)
	}
	for r := range n {
		for j := range k {
			b := packed[r*k/2+j/2]
			code := b & 15
			if j%2 == 1 {
				code = b >> 4
			}
			s := scales[(j/g)*8+r]
			got := float64(int(code)-8) * float64(s)
			if d := math.Abs(got - float64(w[r*k+j])); d > float64(s)/2+1e-6 {
				t.Fatalf("w[%d,%d] = %v dequantizes to %v (scale %v)", r, j, w[r*k+j], got, s)
			}
		}
	}
	for i := n; i < 8; i++ {
		if scales[i] != 0 {
			t.Errorf("padding scale %d = %v, want 0", i, scales[i])
		}
	}
}

// TestLlamaMatchesLlama2C checks the graph's semantics against an
// independent plain-Go forward pass written from llama2.c's description
// (one token at a time, interleaved-pair rope, shared or separate
// classifier): the reference replay of the graph must give the same
// logits at every position. This is what makes the GPU's tokens
// comparable with run.c's.
func TestLlamaMatchesLlama2C(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			cfg := testLlama
			cfg.MaxTokens = 1
			w := RandomLlamaWeights(cfg)
			if shared {
				w.Output = w.Embedding
			}
			l, err := NewLlama(cfg, w)
			if err != nil {
				t.Fatal(err)
			}
			ref, run := l.NewReference(), newLlama2CRun(cfg, w)
			tok := int32(1)
			for pos := range int64(8) {
				got, err := ref.Step([]int32{tok}, pos)
				if err != nil {
					t.Fatal(err)
				}
				want := run.forward(tok, pos)
				for i, v := range want {
					if d := math.Abs(got.V[i] - v); d > 1e-4+1e-4*math.Abs(v) {
						t.Fatalf("pos %d: logit %d: graph %g, llama2.c forward %g", pos, i, got.V[i], v)
					}
				}
				tok = int32(slices.Index(want, slices.Max(want)))
			}
		})
	}
}

// llama2cRun is a plain forward pass of a llama2.c model in float64,
// written for this test from the format's description.
type llama2cRun struct {
	cfg    LlamaConfig
	w      *LlamaWeights
	kc, vc [][]float64 // per layer, [MaxSeq, KVHeads·HeadDim]
}

func newLlama2CRun(cfg LlamaConfig, w *LlamaWeights) *llama2cRun {
	r := &llama2cRun{cfg: cfg, w: w}
	kvd := cfg.KVHeads * cfg.HeadDim()
	for range cfg.Layers {
		r.kc = append(r.kc, make([]float64, cfg.MaxSeq*kvd))
		r.vc = append(r.vc, make([]float64, cfg.MaxSeq*kvd))
	}
	return r
}

func matvec(w []float32, x []float64, out int) []float64 {
	y := make([]float64, out)
	for i := range y {
		for j, v := range x {
			y[i] += float64(w[i*len(x)+j]) * v
		}
	}
	return y
}

func rmsnorm(x []float64, w []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(w[i]) * v * s
	}
	return y
}

func (r *llama2cRun) forward(tok int32, pos int64) []float64 {
	c := r.cfg
	dim, hd := int(c.Dim), int(c.HeadDim())
	kvd, group := int(c.KVHeads)*hd, int(c.Heads/c.KVHeads)
	x := make([]float64, dim)
	for i := range x {
		x[i] = float64(r.w.Embedding[int(tok)*dim+i])
	}
	for l, lw := range r.w.Layers {
		xb := rmsnorm(x, lw.AttnNorm, c.Eps)
		q := matvec(lw.Wq, xb, dim)
		k := matvec(lw.Wk, xb, kvd)
		v := matvec(lw.Wv, xb, kvd)
		// Rotate each (even, odd) pair by pos·θ^(-i/hd), i the pair's even
		// index within its head.
		rot := func(vec []float64) {
			for i := 0; i < len(vec); i += 2 {
				a := float64(pos) * math.Pow(c.RopeTheta, -float64(i%hd)/float64(hd))
				c0, s0 := math.Cos(a), math.Sin(a)
				v0, v1 := vec[i], vec[i+1]
				vec[i], vec[i+1] = v0*c0-v1*s0, v0*s0+v1*c0
			}
		}
		rot(q)
		rot(k)
		copy(r.kc[l][int(pos)*kvd:], k)
		copy(r.vc[l][int(pos)*kvd:], v)
		att := make([]float64, dim)
		for h := range int(c.Heads) {
			kh := (h / group) * hd
			scores := make([]float64, pos+1)
			mx := math.Inf(-1)
			for t := range scores {
				for i := range hd {
					scores[t] += q[h*hd+i] * r.kc[l][t*kvd+kh+i]
				}
				scores[t] /= math.Sqrt(float64(hd))
				mx = max(mx, scores[t])
			}
			var sum float64
			for t := range scores {
				scores[t] = math.Exp(scores[t] - mx)
				sum += scores[t]
			}
			for t := range scores {
				for i := range hd {
					att[h*hd+i] += scores[t] / sum * r.vc[l][t*kvd+kh+i]
				}
			}
		}
		o := matvec(lw.Wo, att, dim)
		for i := range x {
			x[i] += o[i]
		}
		xb = rmsnorm(x, lw.FFNNorm, c.Eps)
		g := matvec(lw.W1, xb, int(c.Hidden))
		u := matvec(lw.W3, xb, int(c.Hidden))
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		d := matvec(lw.W2, g, dim)
		for i := range x {
			x[i] += d[i]
		}
	}
	return matvec(r.w.Output, rmsnorm(x, r.w.Norm, c.Eps), int(c.Vocab))
}

// TestLlama2CRoundTrip writes a checkpoint and reads it back, with a
// shared and a separate classifier, and checks the header run.c reads.
func TestLlama2CRoundTrip(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			cfg := testLlama
			cfg.MaxTokens = 1
			cfg.Seed = 0
			ckpt, w := checkpoint(t, cfg, shared)
			hdr := make([]int32, 7)
			if err := binary.Read(bytes.NewReader(ckpt), binary.LittleEndian, hdr); err != nil {
				t.Fatal(err)
			}
			vocab := int32(cfg.Vocab)
			if !shared {
				vocab = -vocab
			}
			if want := []int32{32, 48, 2, 4, 2, vocab, 16}; !slices.Equal(hdr, want) {
				t.Errorf("header %v, want %v", hdr, want)
			}
			gotCfg, got, err := ReadLlama2C(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			if gotCfg != cfg {
				t.Errorf("config %+v, want %+v", gotCfg, cfg)
			}
			if !reflect.DeepEqual(got, w) {
				t.Error("the weights read back differ from those written")
			}
			if shared && &got.Output[0] != &got.Embedding[0] {
				t.Error("a shared classifier was not read back as the embedding")
			}
		})
	}
}

// TestReadLlama2CRejects: one case per rejection path.
func TestReadLlama2CRejects(t *testing.T) {
	cfg := testLlama
	cfg.MaxTokens = 1
	good, _ := checkpoint(t, cfg, false)
	withHeader := func(field int, v int32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[4*field:], uint32(v))
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"short header", good[:20]},
		{"zero dim", withHeader(0, 0)},
		{"negative layers", withHeader(2, -2)},
		{"huge vocab", withHeader(5, -(1 << 30))},
		{"heads not dividing dim", withHeader(3, 5)},
		{"kv heads not dividing heads", withHeader(4, 3)},
		{"truncated weights", good[:len(good)-4]},
		{"trailing bytes", append(slices.Clone(good), 0, 0, 0, 0)},
		{"shared classifier but the file has one", withHeader(5, int32(cfg.Vocab))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ReadLlama2C(tc.data); !errors.Is(err, ErrLlama2C) {
				t.Errorf("error %v, want one wrapping ErrLlama2C", err)
			}
		})
	}
}

func TestParseLlama2CPieces(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []int32
	}{
		{"<5><0><31999>\n", []int32{5, 0, 31999}},
		{"", nil},
		{"<12", nil},
		{"<>x<3>", []int32{3}},
		{"<99999999999><4>", []int32{4}},
	} {
		if got := ParseLlama2CPieces(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("ParseLlama2CPieces(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestWriteLlama2CTokenizer(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteLlama2CTokenizer(&buf, 12); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if got := binary.LittleEndian.Uint32(b); got != 4 {
		t.Errorf("max_token_length %d, want 4", got)
	}
	var text []byte
	off := 4
	for range 12 {
		n := int(binary.LittleEndian.Uint32(b[off+4:]))
		text = append(text, b[off+8:off+8+n]...)
		off += 8 + n
	}
	if off != len(b) {
		t.Errorf("%d bytes, the pieces end at %d", len(b), off)
	}
	if got := ParseLlama2CPieces(string(text)); !slices.Equal(got, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Errorf("pieces read back as %v", got)
	}
}

// TestLlamaQ4GroupRejected: a group size that is not a multiple of 8 or
// does not divide Dim and Hidden is refused before any graph is written.
func TestLlamaQ4GroupRejected(t *testing.T) {
	for _, g := range []int64{-8, 12, 64} { // 64 does not divide Dim 32
		cfg := testLlama
		cfg.Q4Group = g
		if _, err := NewLlama(cfg, nil); err == nil {
			t.Errorf("Q4Group %d: no error", g)
		}
	}
	for _, g := range []int64{-8, 12, 64} {
		cfg := testLlama
		cfg.EmbeddingQ4Group = g
		if _, err := NewLlama(cfg, nil); err == nil {
			t.Errorf("EmbeddingQ4Group %d: no error", g)
		}
	}
	cfg := testLlama
	cfg.Dynamic8 = true
	if _, err := NewLlama(cfg, nil); err == nil {
		t.Error("Dynamic8 without Q4Group: no error")
	}
	cfg = testLlama
	cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.EmbeddingQ4Group = 48, 4, 2, 16 // Dim not a multiple of 32
	if _, err := NewLlama(cfg, nil); err == nil {
		t.Error("EmbeddingQ4Group with Dim 48: no error")
	}
}

// TestQ4GroupSums: the sums are of the signed 4-bit values per group and
// row, transposed to [groups, roundup(n, 8)] with zero padding.
func TestQ4GroupSums(t *testing.T) {
	// Two rows of k = 16 in groups of 8. Row 0's first group has max 7.5
	// (scale 1): 7.5 → 7 (clamped from 8), -7.5 → -8, 3.75 → 4, the rest
	// 0: sum 3. Its second group is all 0.3 (scale 0.04): 7 each, sum 56.
	// Row 1 is row 0 negated: -7.5 → -8, 7.5 → 7, -3.75 → -4: -5; and
	// -7.5 → -8 each (no clamp on that side): -64.
	w := make([]float32, 32)
	copy(w, []float32{7.5, -7.5, 3.75})
	for j := 8; j < 16; j++ {
		w[j] = 0.3
	}
	for j := range 16 {
		w[16+j] = -w[j]
	}
	packed, _ := QuantizeQ4GSW(w, 2, 16, 8)
	got := Q4GroupSums(packed, 2, 16, 8)
	want := make([]int32, 16)
	want[0], want[1], want[8], want[9] = 3, -5, 56, -64
	if !slices.Equal(got, want) {
		t.Fatalf("sums %v, want %v", got, want)
	}
}

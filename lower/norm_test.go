package lower

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// normGraph writes x = rms_norm(h) read by linears, as a llama export
// does: the q/k/v projections, or SwiGLU (gate, sigmoid, mul, up, mul),
// with the variations that stop the norm_linears pass.
type normGraph struct {
	swiglu  bool // linears 0 and 1 are SwiGLU's gate and up
	linears int  // how many linears read the norm's output (besides SwiGLU's)
	bias    bool // the first linear has a bias
	reader  bool // the norm's output has a reader that is no linear
	output  bool // the norm's output is a graph output
	q4      bool // the linears are et_vk.linear_q4gsw
	chunked bool // the first weight is held in chunks (see chunkedIDs)
	siluOut bool // SwiGLU's gate·sigmoid is a graph output
	greedy  bool // activations in the exporter's shared objects
	// between, when set, adds ops right after the norm.
	between func(b *serialization.Builder, h, x int32)
}

// chunkedIDs collects the weights a normGraph marks as held in chunks.
var chunkedIDs = map[int32]bool{}

func (s normGraph) build(b *serialization.Builder) {
	act := activations(b, s.greedy, 3)
	h := b.Tensor(f32, []uint32{1, 1, 64}, -1)
	b.Inputs(h)
	x := act(1, 1, 64)
	b.Op("et_vk.rms_norm.default", h, b.InlineConst(f32, []uint32{64}, make([]byte, 256)), b.Double(1e-5), x) // 0
	if s.output {
		b.Outputs(x)
	}
	if s.between != nil {
		s.between(b, h, x)
	}
	linear := func(n uint32, bias bool) int32 {
		out := act(1, 1, n)
		if s.q4 {
			w := b.InlineConst(serialization.Uint8, []uint32{n, 32}, make([]byte, n*32))
			sc := b.InlineConst(f32, []uint32{2, n}, make([]byte, 8*n))
			b.Op("et_vk.linear_q4gsw.default", x, w, sc, b.Int(32), b.Null(), out)
			return out
		}
		w := b.InlineConst(f32, []uint32{n, 64}, make([]byte, 256*n))
		if s.chunked && len(chunkedIDs) == 0 {
			chunkedIDs[w] = true
		}
		bi := b.Null()
		if bias {
			bi = b.InlineConst(f32, []uint32{n}, make([]byte, 4*n))
		}
		b.Op("aten.linear.default", x, w, bi, out)
		return out
	}
	if s.swiglu {
		g := linear(16, s.bias)
		sg := act(1, 1, 16)
		b.Op("aten.sigmoid.default", g, sg)
		silu := act(1, 1, 16)
		b.Op("aten.mul.Tensor", g, sg, silu)
		if s.siluOut {
			b.Outputs(silu)
		}
		u := linear(16, false)
		out := act(1, 1, 16)
		b.Op("aten.mul.Tensor", silu, u, out)
		b.Outputs(out)
	}
	for k := 0; k < s.linears; k++ {
		b.Outputs(linear(8, s.bias && k == 0 && !s.swiglu))
	}
	if s.reader {
		n := act(1, 1, 64)
		b.Op("aten.neg.default", x, n)
		b.Outputs(n)
	}
}

// TestNormLinearsPass: the norm_linears pass, and what stops it (the
// cases of ops/opstest's fuse_linear/ family, and more).
func TestNormLinearsPass(t *testing.T) {
	runPlanCases(t, []planCase{
		{name: "qkv", build: normGraph{linears: 3}.build,
			want: "norm_linears[0 1 2 3]{0 1 2 3}"},
		{name: "qkv/greedy_plan", build: normGraph{linears: 3, greedy: true}.build,
			want: "norm_linears[0 1 2 3]{0 1 2 3}"},
		{name: "classifier", build: normGraph{linears: 1}.build,
			want: "norm_linears[0 1]{0 1}"},
		{name: "q4_qkv", build: normGraph{linears: 3, q4: true}.build,
			want: "norm_linears[0 1 2 3]{0 1 2 3}"},
		// The fallback (more than one row): the gate linear with SiLU,
		// the up linear with the final mul.
		{name: "swiglu", build: normGraph{swiglu: true}.build,
			want: "norm_linears[0 1 2 3 4 5]{0 linear_epilogue[1 2 3]{1 elementwise[2 3]} linear_epilogue[4 5]{4 5}}"},
		{name: "swiglu/greedy_plan", build: normGraph{swiglu: true, greedy: true}.build,
			want: "norm_linears[0 1 2 3 4 5]{0 linear_epilogue[1 2 3]{1 elementwise[2 3]} linear_epilogue[4 5]{4 5}}"},
		{name: "swiglu_and_one", build: normGraph{swiglu: true, linears: 1}.build,
			want: "norm_linears[0 1 2 3 4 5 6]{0 linear_epilogue[1 2 3]{1 elementwise[2 3]} linear_epilogue[4 5]{4 5} 6}"},
		{name: "swiglu/silu_is_output", build: normGraph{swiglu: true, siluOut: true}.build,
			want: "norm_linears[0 1 4]{0 1 4} elementwise[2 3] 5"},
		{name: "fusion_off", opts: Options{NoElementwiseFusion: true}, build: normGraph{swiglu: true}.build,
			want: "0 1 2 3 4 5"},
		{name: "bias", build: normGraph{linears: 3, bias: true}.build,
			want: "0 1 2 3"},
		{name: "non_linear_reader", build: normGraph{linears: 2, reader: true}.build,
			want: "0 1 2 3"},
		{name: "norm_is_output", build: normGraph{linears: 2, output: true}.build,
			want: "0 1 2"},
		{name: "between_writes_the_input", build: normGraph{linears: 1, between: func(b *serialization.Builder, h, x int32) {
			n := b.Tensor(f32, []uint32{1, 1}, -1)
			b.Op("update_cache.default", b.Tensor(f32, []uint32{1, 1, 1, 64}, -1), h, b.Int(0), n)
		}}.build, want: "0 1 2"},
		{name: "between_unrelated", build: normGraph{linears: 1, between: func(b *serialization.Builder, h, x int32) {
			n := b.Tensor(f32, []uint32{1, 1, 64}, -1)
			b.Op("aten.neg.default", h, n)
			b.Outputs(n)
		}}.build, want: "norm_linears[0 2]{0 2} 1"},
	})
}

// TestNormLinearsChunked: a weight held in chunks is read one chunk a
// dispatch, so its linear stays out of the group (and with it the norm).
func TestNormLinearsChunked(t *testing.T) {
	clear(chunkedIDs)
	b := serialization.NewBuilder()
	normGraph{linears: 2, chunked: true}.build(b)
	in := inputOf(b, Options{})
	for id := range chunkedIDs {
		in.Tensors[id].Chunked = true
	}
	if got, want := Lower(in).String(), "0 1 2"; got != want {
		t.Errorf("plan %s, want %s", got, want)
	}
	in.Tensors[firstKey(chunkedIDs)].Chunked = false
	if got, want := Lower(in).String(), "norm_linears[0 1 2]{0 1 2}"; got != want {
		t.Errorf("without chunks: plan %s, want %s", got, want)
	}
}

func firstKey(m map[int32]bool) int32 {
	for k := range m {
		return k
	}
	return -1
}

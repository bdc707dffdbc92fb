package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// attnTol: scores are D-long dot products and outputs convex combinations
// of v, so float32 errors stay near a few ulps of the operands.
var attnTol = Tolerance{Abs: 1e-5, Rel: 1e-3}

// maskKind is how an attention case masks.
type maskKind int

const (
	maskNone  maskKind = iota
	maskFloat          // additive float32, some entries -Inf
	maskBool           // bool, true = attend
)

func (m maskKind) String() string { return [...]string{"nomask", "floatmask", "boolmask"}[m] }

// randMask returns a mask of shape; float masks are in [-2, 2) with about
// one entry in eight -Inf.
func randMask(r *rand.Rand, kind maskKind, shape []int64) *reference.Tensor {
	if kind == maskBool {
		t := reference.New(serialization.Bool, shape)
		for i := range t.V {
			if r.IntN(4) != 0 {
				t.V[i] = 1
			}
		}
		return t
	}
	t := RandTensor(r, serialization.Float32, shape, -2, 2)
	for i := range t.V {
		if r.IntN(8) == 0 {
			t.V[i] = math.Inf(-1)
		}
	}
	return t
}

// sdpaCase builds et_vk.sdpa (aten false) or aten.scaled_dot_product_attention.
func sdpaCase(aten bool, q, k, v []int64, mask maskKind, maskShape []int64, scale float64, causal, gqa bool) Case {
	op := "et_vk.sdpa"
	if aten {
		op = "sdpa"
	}
	name := fmt.Sprintf("%s/q%s_k%s_v%s/%s%s", op, shapeName(q), shapeName(k), shapeName(v), mask, shapeName(maskShape))
	if scale != 0 {
		name += fmt.Sprintf("/scale%g", scale)
	}
	if causal {
		name += "/causal"
	}
	if gqa {
		name += "/gqa"
	}
	return Case{
		Name: name,
		Tol:  attnTol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			var inputs []*reference.Tensor
			in := func(t *reference.Tensor) int32 {
				id := b.Tensor(t.DType, Dims(t.Shape), -1)
				b.Inputs(id)
				inputs = append(inputs, t)
				return id
			}
			qi := in(RandTensor(r, f, q, -1, 1))
			ki := in(RandTensor(r, f, k, -1, 1))
			vi := in(RandTensor(r, f, v, -1, 1))
			mi := b.Null()
			if mask != maskNone {
				mi = in(randMask(r, mask, maskShape))
			}
			si := b.Null()
			if scale != 0 {
				si = b.Double(scale)
			}
			outShape := append(append([]int64(nil), q[:len(q)-1]...), v[len(v)-1])
			out := b.Tensor(f, Dims(outShape), -1)
			if aten {
				b.Op("aten.scaled_dot_product_attention.default", qi, ki, vi, mi, b.Double(0), b.Bool(causal), si, b.Bool(gqa), out)
			} else {
				b.Op("et_vk.sdpa.default", qi, ki, vi, mi, si, out)
			}
			b.Outputs(out)
			return inputs
		},
	}
}

// cacheSrc adds a KV cache as a named constant copied by et_vk.prepack into
// a writable tensor, the form the cache ops update in place.
func cacheSrc(b *serialization.Builder, t *reference.Tensor) int32 {
	c, _ := b.NamedConst(t.DType, Dims(t.Shape), t.Encode())
	p := b.Tensor(t.DType, Dims(t.Shape), -1)
	b.Op("et_vk.prepack.default", c, p)
	return p
}

// kvCaseSpec describes a cache attention case: q is [B, S, Hq, D], the
// caches [B, maxS, Hkv, D].
type kvCaseSpec struct {
	b, s, hq, hkv, d, maxS, pos int64
	causal                      int // 0 Null (causal), 1 true, 2 false
	scale                       float64
	symPos                      bool // input_pos as a SymInt value
}

func (c kvCaseSpec) String() string {
	n := fmt.Sprintf("B%d_S%d_Hq%d_Hkv%d_D%d_max%d_pos%d", c.b, c.s, c.hq, c.hkv, c.d, c.maxS, c.pos)
	n += [...]string{"/causalnull", "/causal", "/noncausal"}[c.causal]
	if c.scale != 0 {
		n += fmt.Sprintf("/scale%g", c.scale)
	}
	if c.symPos {
		n += "/sympos"
	}
	return n
}

func (c kvCaseSpec) args(b *serialization.Builder) (pos, causal, scale int32) {
	pos = b.Int(c.pos)
	if c.symPos {
		pos = b.SymInt(int32(c.pos))
	}
	causal = b.Null()
	if c.causal > 0 {
		causal = b.Bool(c.causal == 1)
	}
	scale = b.Null()
	if c.scale != 0 {
		scale = b.Double(c.scale)
	}
	return
}

// kvGraph is what both cache attention cases start from: graph inputs q, k
// and v (random values in inputs), caches kc and vc (random, prepacked
// constants), and the input_pos, is_causal and scale values.
type kvGraph struct {
	q, k, v, kc, vc, pos, causal, scale int32
	inputs                              []*reference.Tensor
}

func (c kvCaseSpec) graph(b *serialization.Builder, r *rand.Rand) kvGraph {
	f := serialization.Float32
	qv := RandTensor(r, f, []int64{c.b, c.s, c.hq, c.d}, -1, 1)
	kv := RandTensor(r, f, []int64{c.b, c.s, c.hkv, c.d}, -1, 1)
	vv := RandTensor(r, f, []int64{c.b, c.s, c.hkv, c.d}, -1, 1)
	g := kvGraph{inputs: []*reference.Tensor{qv, kv, vv}}
	g.q, g.k, g.v = b.Tensor(f, Dims(qv.Shape), -1), b.Tensor(f, Dims(kv.Shape), -1), b.Tensor(f, Dims(vv.Shape), -1)
	b.Inputs(g.q, g.k, g.v)
	cs := []int64{c.b, c.maxS, c.hkv, c.d}
	g.kc = cacheSrc(b, RandTensor(r, f, cs, -1, 1))
	g.vc = cacheSrc(b, RandTensor(r, f, cs, -1, 1))
	g.pos, g.causal, g.scale = c.args(b)
	return g
}

// sdpaKVCase: sdpa_with_kv_cache, returning the output and both caches.
func sdpaKVCase(c kvCaseSpec) Case {
	return Case{
		Name: "sdpa_with_kv_cache/" + c.String(),
		Tol:  attnTol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			g := c.graph(b, r)
			out := b.Tensor(f, Dims(g.inputs[0].Shape), -1)
			b.Op("sdpa_with_kv_cache.default", g.q, g.k, g.v, g.kc, g.vc, g.pos, b.Int(c.s), b.Null(), b.Double(0), g.causal, g.scale, out)
			b.Outputs(out, g.kc, g.vc)
			return g.inputs
		},
	}
}

// customSDPACase: update_cache of k and v, then llama.custom_sdpa, the way
// the llama export lowers its KV-cache attention.
func customSDPACase(c kvCaseSpec) Case {
	return Case{
		Name: "custom_sdpa/" + c.String(),
		Tol:  attnTol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			g := c.graph(b, r)
			u1, u2 := b.Tensor(f, []uint32{1}, -1), b.Tensor(f, []uint32{1}, -1)
			b.Op("update_cache.default", g.k, g.kc, g.pos, u1)
			b.Op("update_cache.default", g.v, g.vc, g.pos, u2)
			out := b.Tensor(f, Dims(g.inputs[0].Shape), -1)
			b.Op("llama.custom_sdpa.default", g.q, g.kc, g.vc, g.pos, b.Null(), b.Double(0), g.causal, g.scale, out)
			b.Outputs(out, g.kc, u1)
			return g.inputs
		},
	}
}

func init() {
	Cases = append(Cases,
		sdpaCase(false, []int64{1, 2, 7, 8}, []int64{1, 2, 13, 8}, []int64{1, 2, 13, 8}, maskNone, nil, 0, false, false),
		sdpaCase(false, []int64{2, 3, 7, 5}, []int64{2, 3, 13, 5}, []int64{2, 3, 13, 3}, maskFloat, []int64{7, 13}, 0.3, false, false),
		sdpaCase(false, []int64{2, 4, 5, 16}, []int64{2, 2, 9, 16}, []int64{2, 2, 9, 16}, maskFloat, []int64{2, 1, 5, 9}, 0, false, false),
		// q/k head dim off vec4, v's on it: scalar stores of whole vec4s.
		sdpaCase(false, []int64{1, 2, 5, 6}, []int64{1, 2, 9, 6}, []int64{1, 2, 9, 8}, maskNone, nil, 0, false, false),
		sdpaCase(false, []int64{2, 4, 5, 16}, []int64{1, 1, 9, 16}, []int64{1, 1, 9, 16}, maskBool, []int64{1, 4, 5, 9}, 0, false, false),
		sdpaCase(false, []int64{1, 1, 1, 1}, []int64{1, 1, 1, 1}, []int64{1, 1, 1, 1}, maskNone, nil, 0, false, false),
		sdpaCase(false, []int64{1, 2, 3, 64}, []int64{1, 2, 33, 64}, []int64{1, 2, 33, 64}, maskFloat, []int64{33}, 0, false, false),
		// A key loop past 65535 trips if one invocation walked them all.
		sdpaCase(false, []int64{1, 1, 2, 4}, []int64{1, 1, 70000, 4}, []int64{1, 1, 70000, 4}, maskNone, nil, 0.05, false, false),
		// No keys: zeros, as torch's empty matmul.
		sdpaCase(false, []int64{1, 2, 3, 8}, []int64{1, 2, 0, 8}, []int64{1, 2, 0, 8}, maskNone, nil, 0, false, false),
		// More query rows than workgroups per grid dimension.
		sdpaCase(false, []int64{1, 1, 70000, 4}, []int64{1, 1, 3, 4}, []int64{1, 1, 3, 4}, maskNone, nil, 0, false, false),

		sdpaCase(true, []int64{3, 7, 8}, []int64{3, 7, 8}, []int64{3, 7, 8}, maskNone, nil, 0, true, false),
		sdpaCase(true, []int64{1, 2, 5, 8}, []int64{1, 2, 9, 8}, []int64{1, 2, 9, 8}, maskNone, nil, 0.5, true, false),
		sdpaCase(true, []int64{5, 8}, []int64{6, 8}, []int64{6, 7}, maskBool, []int64{5, 6}, 0, false, false),
		sdpaCase(true, []int64{1, 3, 6, 5}, []int64{1, 3, 6, 5}, []int64{1, 3, 6, 12}, maskNone, nil, 0, true, false),
		sdpaCase(true, []int64{2, 6, 4, 12}, []int64{2, 2, 4, 12}, []int64{2, 2, 4, 12}, maskFloat, []int64{1, 6, 4, 4}, 0, false, true),
		sdpaCase(true, []int64{2, 6, 4, 12}, []int64{2, 3, 7, 12}, []int64{2, 3, 7, 12}, maskNone, nil, 0, true, true),

		sdpaKVCase(kvCaseSpec{b: 1, s: 4, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 3, causal: 1}),
		sdpaKVCase(kvCaseSpec{b: 1, s: 1, hq: 2, hkv: 2, d: 8, maxS: 9, pos: 8, causal: 0}),
		sdpaKVCase(kvCaseSpec{b: 2, s: 3, hq: 6, hkv: 3, d: 5, maxS: 7, pos: 2, causal: 2, scale: 0.7}),
		sdpaKVCase(kvCaseSpec{b: 1, s: 7, hq: 1, hkv: 1, d: 13, maxS: 7, pos: 0, causal: 1, symPos: true}),
		customSDPACase(kvCaseSpec{b: 1, s: 3, hq: 4, hkv: 1, d: 8, maxS: 12, pos: 6, causal: 1}),
		customSDPACase(kvCaseSpec{b: 2, s: 2, hq: 2, hkv: 2, d: 7, maxS: 5, pos: 1, causal: 2, symPos: true}),
		customSDPACase(kvCaseSpec{b: 1, s: 1, hq: 8, hkv: 2, d: 64, maxS: 33, pos: 32, causal: 0, scale: 0.125}),
	)
}

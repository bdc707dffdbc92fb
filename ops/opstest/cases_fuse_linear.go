package opstest

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Cases for the linear-group fusion (ops/fuse_linear.go): an rms_norm read
// only by one-row linears is computed in their prologue, q/k/v-like
// linears run as one dispatch, SwiGLU (linear, sigmoid, mul, linear, mul)
// as one. fuseLinearDispatches says how many dispatches each records
// fused (TestLinearGroupFusion, both families); unfused (and with
// NoElementwiseFusion) every op records one.
var fuseLinearDispatches = map[string]int{}

// fuseLinearAt8 is the fused dispatch count of the cases that need more
// than 8 storage buffers a stage to fuse in one dispatch, on a device that
// binds only 8 (WebGPU's default; lavapipe binds more).
var fuseLinearAt8 = map[string]int{}

// fuseLinearSpec is one case: the norm's input [m, k], the linears' output
// columns ns reading its output (swiglu: the first two are SwiGLU's gate
// and up, ns[0] == ns[1]), the weights as halves, and the variations that
// must leave it unfused.
type fuseLinearSpec struct {
	name   string
	m, k   int64
	ns     []int64
	swiglu bool
	half   bool
	q4     int64 // linear_q4gsw weights in groups of q4
	noW    bool  // rms_norm without a weight
	bias   bool  // the first linear has a bias: no fusion
	reader bool  // the norm's output also has a non-linear reader: no fusion
	alias  bool  // the norm's input is a transient that dies at the norm, every output transient
	want   int   // dispatches fused
	at8    int   // dispatches fused with 8 storage buffers a stage (0: want)
	// near, with swiglu, writes a near miss of SwiGLU's tail, which must
	// not fuse as SwiGLU: "reordered" (g·u, then ·sigmoid(g): the same
	// value), "sigmoid_read" (sigmoid(g) read once more), "silu_squared"
	// (g·sigmoid(g) squared, the up linear an output of its own),
	// "up_read" (the up linear read once more).
	near string
}

func init() {
	for _, s := range []fuseLinearSpec{
		{name: "qkv", m: 1, k: 64, ns: []int64{16, 8, 8}, want: 1},
		{name: "qkv_noweight", m: 1, k: 64, ns: []int64{16, 8, 8}, noW: true, want: 1},
		{name: "qkv_long_k", m: 1, k: 1028, ns: []int64{33, 9, 17}, want: 1},
		{name: "classifier", m: 1, k: 64, ns: []int64{37}, want: 1},
		{name: "swiglu", m: 1, k: 64, ns: []int64{20, 20}, swiglu: true, want: 1},
		{name: "swiglu_long_k", m: 1, k: 1028, ns: []int64{43, 43}, swiglu: true, want: 1},
		{name: "swiglu_and_one", m: 1, k: 64, ns: []int64{12, 12, 5}, swiglu: true, want: 2},
		{name: "half_qkv", m: 1, k: 64, ns: []int64{16, 8, 8}, half: true, want: 1},
		{name: "half_swiglu", m: 1, k: 136, ns: []int64{9, 9}, swiglu: true, half: true, want: 1},
		// 4-bit weights: 3 linears a dispatch bind 11 storage buffers
		// (input, norm weight, 3 × weight, scales, output): 2 dispatches
		// on a device that binds 8.
		{name: "q4_qkv", m: 1, k: 64, ns: []int64{16, 8, 8}, q4: 32, want: 1, at8: 2},
		{name: "q4_swiglu", m: 1, k: 64, ns: []int64{24, 24}, swiglu: true, q4: 32, want: 1},
		{name: "q4_classifier_g64", m: 1, k: 128, ns: []int64{40}, q4: 64, want: 1},
		{name: "q4_long_k", m: 1, k: 1056, ns: []int64{9, 17}, q4: 32, want: 1},
		// The GPU family's weight-word GEMV (gemv_quant.wgsl) fused: column
		// blocks of 32 rows (N past one and not a multiple), group 64;
		// and K whose staged input leaves room for 2 and 1 rows a warp
		// in 32 KiB of workgroup memory (lavapipe's; 4 in 48 KiB).
		{name: "q4_swiglu_wide", m: 1, k: 256, ns: []int64{70, 70}, swiglu: true, q4: 64, want: 1},
		{name: "q4_qkv_wide", m: 1, k: 128, ns: []int64{33, 65, 7}, q4: 128, want: 1, at8: 2},
		{name: "q4_swiglu_k7168", m: 1, k: 7168, ns: []int64{9, 9}, swiglu: true, q4: 32, want: 1},
		{name: "q4_classifier_k7680", m: 1, k: 7680, ns: []int64{37}, q4: 256, want: 1},
		{name: "q4_swiglu_k7680", m: 1, k: 7680, ns: []int64{5, 5}, swiglu: true, q4: 64, want: 1},
		// More linears than one dispatch binds: two.
		{name: "four_linears", m: 1, k: 64, ns: []int64{16, 8, 8, 4}, want: 2},
		// Under the exporter's greedy plan the norm's input dies at the
		// norm: a linear's output may take its object, which the fused
		// kernel reads while writing those outputs (the graph binds
		// transients from the fused kernel's lifetimes).
		{name: "alias_greedy", m: 1, k: 64, ns: []int64{16, 8, 8}, alias: true, want: 1 + 1 + 3},
		{name: "alias_greedy_swiglu", m: 1, k: 64, ns: []int64{24, 24}, swiglu: true, alias: true, want: 1 + 1 + 1},
		// Left unfused.
		{name: "unfused_two_rows", m: 2, k: 64, ns: []int64{16, 8, 8}},
		{name: "unfused_k_odd", m: 1, k: 66, ns: []int64{16, 8}},
		{name: "unfused_bias", m: 1, k: 64, ns: []int64{16, 8}, bias: true},
		{name: "unfused_other_reader", m: 1, k: 64, ns: []int64{16, 8}, reader: true},
		// Near misses of SwiGLU: the linears fuse as a pair (one
		// dispatch); the tail runs as the elementwise pass leaves it.
		{name: "near_swiglu_reordered", m: 1, k: 64, ns: []int64{20, 20}, swiglu: true, near: "reordered", want: 1 + 2},
		{name: "near_swiglu_sigmoid_read", m: 1, k: 64, ns: []int64{20, 20}, swiglu: true, near: "sigmoid_read", want: 1 + 4},
		{name: "near_swiglu_silu_squared", m: 1, k: 64, ns: []int64{20, 20}, swiglu: true, near: "silu_squared", want: 1 + 2},
		{name: "near_swiglu_up_read", m: 1, k: 64, ns: []int64{20, 20}, swiglu: true, near: "up_read", want: 1 + 3},
	} {
		c := fuseLinearCase(s)
		fuseLinearDispatches[c.Name] = s.want
		if s.at8 > 0 {
			fuseLinearAt8[c.Name] = s.at8
		}
		Cases = append(Cases, c)
	}
}

// fuseLinearCase builds spec s's case.
func fuseLinearCase(s fuseLinearSpec) Case {
	name := fmt.Sprintf("fuse_linear/%s/M%d_K%d_N%v", s.name, s.m, s.k, s.ns)
	tol := matmulTol(s.k)
	if s.q4 > 0 {
		tol = quantTol(s.k)
	}
	return Case{
		Name: name,
		Tol:  tol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, []int64{s.m, s.k}, -2, 2)
			x, inputs := graphInput(b, xv)
			xdims := Dims(xv.Shape)
			h := x
			if s.alias {
				h = b.Tensor(f, xdims, -1)
				b.Op("aten.mul.Tensor", x, x, h)
			}
			w := b.Null()
			if !s.noW {
				w = addWeight(b, RandTensor(r, f, []int64{s.k}, 0.5, 1.5), weightNamed, &inputs)
			}
			y := b.Tensor(f, xdims, -1)
			b.Op("et_vk.rms_norm.default", h, w, b.Double(1e-5), y)
			var outs []int32
			var odims [][]uint32
			lin := func(n int64, bias bool) int32 {
				wv := RandTensor(r, f, []int64{n, s.k}, -1, 1)
				if s.q4 > 0 {
					w, sc, bv := q4gswWeights(b, r, n, s.k, s.q4, bias)
					o := b.Tensor(f, []uint32{uint32(s.m), uint32(n)}, -1)
					b.Op("et_vk.linear_q4gsw.default", y, w, sc, b.Int(s.q4), bv, o)
					return o
				}
				var wt int32
				if s.half {
					wt = halfConst(b, wv)
				} else {
					wt = addWeight(b, wv, weightNamed, &inputs)
				}
				bs := b.Null()
				if bias {
					bs = addWeight(b, RandTensor(r, f, []int64{n}, -1, 1), weightInline, &inputs)
				}
				o := b.Tensor(f, []uint32{uint32(s.m), uint32(n)}, -1)
				b.Op("aten.linear.default", y, wt, bs, o)
				return o
			}
			ns := s.ns
			if s.swiglu {
				n := ns[0]
				od := []uint32{uint32(s.m), uint32(n)}
				g := lin(n, false)
				sg, gs := b.Tensor(f, od, -1), b.Tensor(f, od, -1)
				b.Op("aten.sigmoid.default", g, sg)
				o := b.Tensor(f, od, -1)
				extra := func(id int32) { // one more reader of id, an output
					e := b.Tensor(f, od, -1)
					b.Op("aten.neg.default", id, e)
					outs, odims = append(outs, e), append(odims, od)
				}
				switch s.near {
				case "reordered":
					u := lin(n, false)
					b.Op("aten.mul.Tensor", g, u, gs)
					b.Op("aten.mul.Tensor", gs, sg, o)
				case "silu_squared":
					b.Op("aten.mul.Tensor", g, sg, gs)
					u := lin(n, false)
					b.Op("aten.mul.Tensor", gs, gs, o)
					outs, odims = append(outs, u), append(odims, od)
				default:
					b.Op("aten.mul.Tensor", g, sg, gs)
					u := lin(n, false)
					b.Op("aten.mul.Tensor", gs, u, o)
					switch s.near {
					case "sigmoid_read":
						extra(sg)
					case "up_read":
						extra(u)
					}
				}
				outs, odims = append(outs, o), append(odims, od)
				ns = ns[2:]
			}
			for i, n := range ns {
				outs, odims = append(outs, lin(n, s.bias && i == 0)), append(odims, []uint32{uint32(s.m), uint32(n)})
			}
			if s.reader {
				o := b.Tensor(f, xdims, -1)
				b.Op("aten.neg.default", y, o)
				outs, odims = append(outs, o), append(odims, xdims)
			}
			if s.alias {
				// Every output a transient read by one more op.
				for i, o := range outs {
					n := b.Tensor(f, odims[i], -1)
					b.Op("aten.neg.default", o, n)
					outs[i] = n
				}
			}
			b.Outputs(outs...)
			return inputs
		},
	}
}

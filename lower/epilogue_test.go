package lower

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// epiGraph writes h = linear(x, w) (or mm), then the ops of tail on it;
// ids names the values a tail may use.
type epiGraph struct {
	mm     bool // aten.mm instead of aten.linear
	q8ta   bool // et_vk.q8ta_linear (no epilogue kernel)
	greedy bool // activations in the exporter's shared objects
	tail   func(b *serialization.Builder, v *epiIDs)
	outs   []int // which of the tail's results are graph outputs (indices into epiIDs.res), besides the last
}

type epiIDs struct {
	x, h, other, later int32   // later: a tensor computed after the linear
	res                []int32 // the tail's results, in order
	act                func(dims ...uint32) int32
}

func (s epiGraph) build(b *serialization.Builder) {
	v := &epiIDs{act: activations(b, s.greedy, 2)}
	v.x = b.Tensor(f32, []uint32{2, 16}, -1)
	v.other = b.Tensor(f32, []uint32{2, 8}, -1)
	b.Inputs(v.x, v.other)
	v.h = v.act(2, 8)
	switch {
	case s.mm:
		b.Op("aten.mm.default", v.x, b.InlineConst(f32, []uint32{16, 8}, make([]byte, 512)), v.h) // 0
	case s.q8ta:
		w := b.InlineConst(serialization.Int8, []uint32{8, 16}, make([]byte, 128))
		b.Op("et_vk.q8ta_linear.default", v.x, b.Double(1), b.Int(0), w, b.InlineConst(f32, []uint32{8}, make([]byte, 32)),
			b.Null(), b.Double(1), b.Int(0), b.Null(), b.String("none"), v.h)
	default:
		b.Op("aten.linear.default", v.x, b.InlineConst(f32, []uint32{8, 16}, make([]byte, 512)), b.Null(), v.h) // 0
	}
	v.later = v.act(2, 8)
	s.tail(b, v)
	for _, o := range s.outs {
		b.Outputs(v.res[o])
	}
	b.Outputs(v.res[len(v.res)-1])
}

// op1 adds name(in, extra..., out) with a new [2, 8] output.
func (v *epiIDs) op1(b *serialization.Builder, name string, args ...int32) int32 {
	out := v.act(2, 8)
	b.Op(name, append(args, out)...)
	v.res = append(v.res, out)
	return out
}

func relu(b *serialization.Builder, v *epiIDs) { v.op1(b, "aten.relu.default", v.h) }

func silu(b *serialization.Builder, v *epiIDs) {
	s := v.op1(b, "aten.sigmoid.default", v.h)
	v.op1(b, "aten.mul.Tensor", v.h, s)
}

// TestLinearEpiloguePass: the linear_epilogue pass and what stops it (the
// cases of ops' epilogue tests and ops/opstest's matmul fusion family).
func TestLinearEpiloguePass(t *testing.T) {
	runPlanCases(t, []planCase{
		{name: "relu", build: epiGraph{tail: relu}.build, want: "linear_epilogue[0 1]{0 1}"},
		{name: "relu/mm", build: epiGraph{mm: true, tail: relu}.build, want: "linear_epilogue[0 1]{0 1}"},
		{name: "relu/greedy_plan", build: epiGraph{greedy: true, tail: relu}.build, want: "linear_epilogue[0 1]{0 1}"},
		{name: "relu/fusion_off", opts: Options{NoElementwiseFusion: true}, build: epiGraph{tail: relu}.build,
			want: "linear_epilogue[0 1]{0 1}"},
		{name: "gelu", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			v.op1(b, "aten.gelu.default", v.h, b.String("tanh"))
		}}.build, want: "linear_epilogue[0 1]{0 1}"},
		{name: "tanh", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			v.op1(b, "aten.tanh.default", v.h)
		}}.build, want: "0 1"},
		{name: "linear_is_output", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			relu(b, v)
			b.Outputs(v.h)
		}}.build, want: "0 1"},
		{name: "q8ta", build: epiGraph{q8ta: true, tail: relu}.build, want: "0 1"},
		{name: "silu", build: epiGraph{tail: silu}.build, want: "linear_epilogue[0 1 2]{0 elementwise[1 2]}"},
		{name: "silu/fusion_off", opts: Options{NoElementwiseFusion: true}, build: epiGraph{tail: silu}.build,
			want: "0 1 2"},
		{name: "silu/sigmoid_is_output", build: epiGraph{tail: silu, outs: []int{0}}.build, want: "0 1 2"},
		{name: "residual_add", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			v.op1(b, "aten.add.Tensor", v.other, v.h, b.Int(1))
		}}.build, want: "linear_epilogue[0 1]{0 1}"},
		{name: "residual_add/alpha_2", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			v.op1(b, "aten.add.Tensor", v.other, v.h, b.Double(2))
		}}.build, want: "0 1"},
		{name: "residual_add/fusion_off", opts: Options{NoElementwiseFusion: true}, build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			v.op1(b, "aten.add.Tensor", v.other, v.h, b.Int(1))
		}}.build, want: "0 1"},
		{name: "residual_add/other_broadcasts", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			bias := b.InlineConst(f32, []uint32{8}, make([]byte, 32))
			v.op1(b, "aten.add.Tensor", v.h, bias, b.Int(1))
		}}.build, want: "0 1"},
		{name: "residual_add/other_after_linear", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			b.Op("aten.neg.default", v.x, v.later)
			v.op1(b, "aten.add.Tensor", v.h, v.later, b.Int(1))
		}}.build, want: "0 elementwise[1 2]"},
		{name: "relu_then_residual_mul", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			r := v.op1(b, "aten.relu.default", v.h)
			v.op1(b, "aten.mul.Tensor", r, v.other)
		}}.build, want: "linear_epilogue[0 1 2]{0 elementwise[1 2]}"},
		{name: "silu_then_residual_mul", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			silu(b, v)
			v.op1(b, "aten.mul.Tensor", v.res[1], v.other)
		}}.build, want: "linear_epilogue[0 1 2 3]{0 elementwise[1 2 3]}"},
		{name: "residual/between_writes_other", build: epiGraph{tail: func(b *serialization.Builder, v *epiIDs) {
			r := v.op1(b, "aten.relu.default", v.h)
			n := b.Tensor(f32, []uint32{1}, -1)
			b.Op("update_cache.default", b.Tensor(f32, []uint32{1, 1, 1, 8}, -1), v.other, b.Int(0), n)
			v.op1(b, "aten.add.Tensor", r, v.other, b.Int(1))
		}}.build, want: "linear_epilogue[0 1]{0 1} 2 3"},
	})
}

// TestLinearEpilogueChunked: a linear reading a weight held in chunks
// runs once per chunk and takes no epilogue.
func TestLinearEpilogueChunked(t *testing.T) {
	b := serialization.NewBuilder()
	epiGraph{tail: relu}.build(b)
	in := inputOf(b, Options{})
	w := b.Graph().Chain[0].Args[1]
	in.Tensors[w].Chunked = true
	if got, want := Lower(in).String(), "0 1"; got != want {
		t.Errorf("plan %s, want %s", got, want)
	}
}

package lower

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// ewChain adds ops to b, each reading the previous result (cur) and
// writing a new [4, 8] tensor in mem_obj_id mem[k] (-1 past its end); it
// returns the results.
func ewChain(b *serialization.Builder, cur int32, mem []int32, steps ...func(b *serialization.Builder, cur, out int32)) []int32 {
	var outs []int32
	for k, st := range steps {
		m := int32(-1)
		if k < len(mem) {
			m = mem[k]
		}
		out := b.Tensor(f32, []uint32{4, 8}, m)
		st(b, cur, out)
		outs = append(outs, out)
		cur = out
	}
	return outs
}

func un(name string) func(b *serialization.Builder, cur, out int32) {
	return func(b *serialization.Builder, cur, out int32) { b.Op("aten."+name+".default", cur, out) }
}

func scal(name string, v float64) func(b *serialization.Builder, cur, out int32) {
	return func(b *serialization.Builder, cur, out int32) {
		args := []int32{cur, b.Double(v)}
		if name == "add" || name == "sub" || name == "rsub" {
			args = append(args, b.Int(1))
		}
		b.Op("aten."+name+".Scalar", append(args, out)...)
	}
}

func bin(name string, other int32, swap bool) func(b *serialization.Builder, cur, out int32) {
	return func(b *serialization.Builder, cur, out int32) {
		args := []int32{cur, other}
		if swap {
			args = []int32{other, cur}
		}
		if name == "aten.add.Tensor" || name == "aten.sub.Tensor" {
			args = append(args, b.Int(1))
		}
		b.Op(name, append(args, out)...)
	}
}

// TestElementwisePass: the elementwise pass and what stops it (the cases
// of ops/opstest's fuse/ family, the greedy-plan one among them).
func TestElementwisePass(t *testing.T) {
	x := func(b *serialization.Builder) int32 {
		id := b.Tensor(f32, []uint32{4, 8}, -1)
		b.Inputs(id)
		return id
	}
	last := func(b *serialization.Builder, outs []int32) { b.Outputs(outs[len(outs)-1]) }
	runPlanCases(t, []planCase{
		{name: "unary_chain", build: func(b *serialization.Builder) {
			last(b, ewChain(b, x(b), nil, un("relu"), un("sigmoid"), un("neg"), un("tanh")))
		}, want: "elementwise[0 1 2 3]"},
		{name: "scalar_ops", build: func(b *serialization.Builder) {
			last(b, ewChain(b, x(b), nil, scal("add", 1.5), scal("mul", -2), scal("rsub", 3), scal("div", 3), un("relu")))
		}, want: "elementwise[0 1 2 3 4]"},
		{name: "binary_operands", build: func(b *serialization.Builder) {
			in := x(b)
			bias := b.Tensor(f32, []uint32{8}, -1)
			y := b.Tensor(f32, []uint32{4, 8}, -1)
			b.Inputs(bias, y)
			last(b, ewChain(b, in, nil, bin("aten.add.Tensor", bias, false), un("relu"), bin("aten.minimum.default", y, true),
				bin("aten.sub.Tensor", y, true)))
		}, want: "elementwise[0 1 2 3]"},
		{name: "square_head", build: func(b *serialization.Builder) {
			in := x(b)
			last(b, ewChain(b, in, nil, bin("aten.mul.Tensor", in, false), scal("add", 1), un("sqrt")))
		}, want: "elementwise[0 1 2]"},
		{name: "square_step", build: func(b *serialization.Builder) {
			outs := ewChain(b, x(b), nil, un("relu"))
			last(b, ewChain(b, outs[0], nil, func(b *serialization.Builder, cur, out int32) { b.Op("aten.mul.Tensor", cur, cur, out) }, un("neg")))
		}, want: "0 elementwise[1 2]"},
		{name: "middle_is_output", build: func(b *serialization.Builder) {
			outs := ewChain(b, x(b), nil, un("relu"), un("sigmoid"), scal("mul", 2))
			b.Outputs(outs[0], outs[2])
		}, want: "0 elementwise[1 2]"},
		{name: "two_consumers", build: func(b *serialization.Builder) {
			outs := ewChain(b, x(b), nil, un("relu"), un("sigmoid"))
			s := b.Tensor(f32, []uint32{4, 8}, -1)
			b.Op("aten.add.Tensor", outs[0], outs[1], b.Int(1), s)
			b.Outputs(s)
		}, want: "0 elementwise[1 2]"},
		{name: "not_next", build: func(b *serialization.Builder) {
			in := x(b)
			r := ewChain(b, in, nil, un("relu"))
			e := ewChain(b, in, nil, un("exp")) // between relu and its reader
			last(b, ewChain(b, r[0], nil, un("neg")))
			b.Outputs(e[0])
		}, want: "0 1 2"},
		{name: "int_dtype", build: func(b *serialization.Builder) {
			in := b.Tensor(serialization.Int32, []uint32{4, 8}, -1)
			b.Inputs(in)
			h := b.Tensor(serialization.Int32, []uint32{4, 8}, -1)
			b.Op("aten.abs.default", in, h)
			o := b.Tensor(serialization.Int32, []uint32{4, 8}, -1)
			b.Op("aten.neg.default", h, o)
			b.Outputs(o)
		}, want: "0 1"},
		{name: "fusion_off", opts: Options{NoElementwiseFusion: true}, build: func(b *serialization.Builder) {
			last(b, ewChain(b, x(b), nil, un("relu"), un("sigmoid")))
		}, want: "0 1"},
		// t0 = clone(x) in mem 0; relu(t0) -> mem 1; sigmoid -> mem 0
		// (t0's object, dead for the unfused chain); exp -> mem 2; neg ->
		// mem 0: transients, re-bound after recording, so the chain
		// fuses.
		{name: "shared_buffer/greedy_plan", opts: Options{NoViewAliasing: true}, build: func(b *serialization.Builder) {
			in := x(b)
			t0 := b.Tensor(f32, []uint32{4, 8}, 0)
			b.Op("aten.clone.default", in, b.Null(), t0)
			last(b, ewChain(b, t0, []int32{1, 0, 2, 0}, un("relu"), un("sigmoid"), un("exp"), un("neg")))
		}, want: "0 elementwise[1 2 3 4]"},
		// A hostile graph whose last step writes a tensor the chain
		// reads first: the run starts after the read.
		{name: "writes_an_operand", build: func(b *serialization.Builder) {
			in := x(b)
			y := b.Tensor(f32, []uint32{4, 8}, -1)
			b.Inputs(y)
			outs := ewChain(b, in, nil, bin("aten.add.Tensor", y, false), un("relu"))
			b.Op("aten.neg.default", outs[1], y)
			b.Outputs(y)
		}, want: "0 elementwise[1 2]"},
	})
}

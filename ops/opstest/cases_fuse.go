package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// chain builds ops over dims from in, each output a new tensor (mem_obj_id
// from mem, -1 past its end), and returns the outputs.
func chain(b *serialization.Builder, in int32, dims []uint32, mem []int32, ops ...op) []int32 {
	var outs []int32
	cur := in
	for k, o := range ops {
		m := int32(-1)
		if k < len(mem) {
			m = mem[k]
		}
		out := b.Tensor(serialization.Float32, dims, m)
		b.Op(o.name, append(o.args(b, cur), out)...)
		outs = append(outs, out)
		cur = out
	}
	return outs
}

// op is one op of a chain: its name and its args (without the output)
// given the chain value.
type op struct {
	name string
	args func(b *serialization.Builder, cur int32) []int32
}

func u(name string) op {
	return op{"aten." + name + ".default", func(b *serialization.Builder, cur int32) []int32 { return []int32{cur} }}
}

func ud(name string, vs ...float64) op {
	return op{"aten." + name + ".default", func(b *serialization.Builder, cur int32) []int32 {
		args := []int32{cur}
		for _, v := range vs {
			if math.IsNaN(v) {
				args = append(args, b.Null())
			} else {
				args = append(args, b.Double(v))
			}
		}
		return args
	}}
}

func gelu(approx string) op {
	return op{"aten.gelu.default", func(b *serialization.Builder, cur int32) []int32 { return []int32{cur, b.String(approx)} }}
}

// sc is a binary .Scalar op (alpha is added for add/sub/rsub).
func sc(name string, v float64, alpha ...float64) op {
	return op{"aten." + name + ".Scalar", func(b *serialization.Builder, cur int32) []int32 {
		args := []int32{cur, b.Double(v)}
		if len(alpha) > 0 {
			args = append(args, b.Double(alpha[0]))
		} else if name == "add" || name == "sub" || name == "rsub" {
			args = append(args, b.Int(1))
		}
		return args
	}}
}

// tt is a binary op with tensor other t; swap puts the chain value second.
func tt(name string, t int32, swap bool, alpha ...float64) op {
	return op{name, func(b *serialization.Builder, cur int32) []int32 {
		args := []int32{cur, t}
		if swap {
			args = []int32{t, cur}
		}
		if len(alpha) > 0 {
			args = append(args, b.Double(alpha[0]))
		}
		return args
	}}
}

// edgeFill overwrites a few elements of t with NaN, ±Inf, ±0 and large
// and tiny magnitudes.
func edgeFill(t *reference.Tensor) *reference.Tensor {
	edge := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e30, -1e30, 1e-30, 3, -3, 6, -6}
	for i := 0; i < len(edge) && i < len(t.V); i++ {
		t.V[(i*7)%len(t.V)] = edge[i]
	}
	return t
}

// Fusion cases (ops/fuse.go): chains of float32 elementwise ops that the
// GPU graph records as one kernel, and the forms it must leave unfused.
// Each runs through the conformance suite like any other case; fuse_test.go
// checks the dispatch counts.
func init() {
	f := serialization.Float32
	in := func(b *serialization.Builder, dims ...uint32) int32 { return b.Tensor(f, dims, -1) }
	shape := func(dims []uint32) []int64 {
		s := make([]int64, len(dims))
		for i, d := range dims {
			s[i] = int64(d)
		}
		return s
	}
	// Transcendental steps are evaluated in float32 on lavapipe, and a
	// chain compounds their rounding: the unfused chain passes the same
	// bound (both run the same formulas).
	chainTol := Tolerance{Abs: 1e-5, Rel: 1e-4}
	Cases = append(Cases,
		Case{Name: "fuse/unary_chain_odd", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{7, 13}
			x := in(b, d...)
			outs := chain(b, x, d, nil, u("relu"), u("sigmoid"), u("neg"), u("tanh"), u("abs"), u("exp"), u("sqrt"), u("rsqrt"), u("log10"))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{edgeFill(RandTensor(r, f, shape(d), -4, 4))}
		}},
		Case{Name: "fuse/unary_chain_vec4", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{4, 33}
			x := in(b, d...)
			outs := chain(b, x, d, nil, gelu("none"), ud("leaky_relu", 0.1), ud("hardtanh", -0.5, 2), gelu("tanh"),
				u("hardswish"), ud("clamp", -0.2, math.NaN()), u("hardsigmoid"), u("relu6"), ud("hardshrink", 0.3), u("round"),
				ud("clamp", math.NaN(), 0.7), u("neg"))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{edgeFill(RandTensor(r, f, shape(d), -8, 8))}
		}},
		Case{Name: "fuse/scalar_ops", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{3, 5, 8}
			x := in(b, d...)
			outs := chain(b, x, d, nil, sc("add", 1.5), sc("mul", -2), sc("rsub", 3, 0.5), sc("sub", 0.25, 2), sc("div", 3), u("relu"), sc("add", -1, -1))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "fuse/broadcast_operands", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{3, 5, 8}
			x := in(b, d...)
			bias, scale, y, z, w := in(b, 8), in(b, 3, 1, 1), in(b, d...), in(b, 5, 1), in(b)
			outs := chain(b, x, d, nil,
				tt("aten.add.Tensor", bias, false, 1), u("relu"), tt("aten.mul.Tensor", scale, false),
				tt("aten.maximum.default", y, false), tt("aten.minimum.default", z, true),
				tt("aten.sub.Tensor", y, true, 0.5), tt("aten.div.Tensor", w, true), tt("aten.sub.Tensor", bias, false, 2))
			b.Inputs(x, bias, scale, y, z, w)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{
				edgeFill(RandTensor(r, f, shape(d), -3, 3)), RandTensor(r, f, []int64{8}, -1, 1), RandTensor(r, f, []int64{3, 1, 1}, -2, 2),
				edgeFill(RandTensor(r, f, shape(d), -3, 3)), RandTensor(r, f, []int64{5, 1}, -3, 3), RandTensor(r, f, []int64{}, 1, 2),
			}
		}},
		Case{Name: "fuse/binary_head_broadcast_self", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{5, 8}
			a, c := in(b, 1, 8), in(b, d...)
			h := b.Tensor(f, d, -1)
			b.Op("aten.add.Tensor", a, c, b.Int(1), h)
			outs := chain(b, h, d, nil, u("sigmoid"), tt("aten.mul.Tensor", a, true))
			b.Inputs(a, c)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, []int64{1, 8}, -3, 3), RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "fuse/square_head", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			// x*x binds one tensor twice; then a chain on it.
			d := []uint32{9}
			x := in(b, d...)
			h := b.Tensor(f, d, -1)
			b.Op("aten.mul.Tensor", x, x, h)
			outs := chain(b, h, d, nil, sc("add", 1), u("sqrt"))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "fuse/middle_is_output", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{6, 7}
			x := in(b, d...)
			outs := chain(b, x, d, nil, u("relu"), u("sigmoid"), sc("mul", 2))
			b.Inputs(x)
			b.Outputs(outs[0], outs[2])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "fuse/two_consumers", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{6, 7}
			x := in(b, d...)
			outs := chain(b, x, d, nil, u("relu"), u("sigmoid"))
			s := b.Tensor(f, d, -1)
			b.Op("aten.add.Tensor", outs[0], outs[1], b.Int(1), s)
			b.Inputs(x)
			b.Outputs(s)
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "fuse/shared_buffer", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			// t0 = clone(x) in mem 0; relu(t0) -> mem 1; sigmoid -> mem 0
			// (t0's buffer, dead for the unfused chain); exp -> mem 2;
			// neg -> mem 0. A fused kernel reading t0 may not write mem 0,
			// so relu..neg fuse and neg's output is bound to another
			// object (mem 1 or 2, both free by then).
			d := []uint32{4, 9}
			x := in(b, d...)
			t0 := b.Tensor(f, d, 0)
			b.Op("aten.clone.default", x, b.Null(), t0)
			outs := chain(b, t0, d, []int32{1, 0, 2, 0}, u("relu"), u("sigmoid"), u("exp"), u("neg"))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "fuse/rank0", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x, y := in(b), in(b)
			outs := chain(b, x, nil, nil, tt("aten.mul.Tensor", y, false), u("tanh"), sc("add", 1))
			b.Inputs(x, y)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, []int64{}, -3, 3), RandTensor(r, f, []int64{}, -3, 3)}
		}},
		Case{Name: "fuse/rank6_broadcast", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{2, 3, 1, 4, 5, 3}
			x := in(b, d...)
			y := in(b, 3, 1, 4, 1, 3)
			z := in(b, 2, 1, 1, 4, 1, 1)
			outs := chain(b, x, d, nil, tt("aten.add.Tensor", y, false, 1), u("sigmoid"), tt("aten.mul.Tensor", z, true))
			b.Inputs(x, y, z)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3), RandTensor(r, f, []int64{3, 1, 4, 1, 3}, -3, 3),
				RandTensor(r, f, []int64{2, 1, 1, 4, 1, 1}, -3, 3)}
		}},
		Case{Name: "fuse/row_vec4_walk", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			// The bias walks with an innermost run of 12: vec4 reads.
			d := []uint32{7, 12}
			x, bias := in(b, d...), in(b, 12)
			outs := chain(b, x, d, nil, u("neg"), tt("aten.add.Tensor", bias, false, 1), gelu("tanh"))
			b.Inputs(x, bias)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3), RandTensor(r, f, []int64{12}, -1, 1)}
		}},
		Case{Name: "fuse/empty", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			d := []uint32{0, 5}
			x := in(b, d...)
			outs := chain(b, x, d, nil, u("relu"), sc("add", 1))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, shape(d), -3, 3)}
		}},
		Case{Name: "dynamic/fuse_decision", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			// relu(x) * z + 1: fused while z broadcasts to relu's shape;
			// when z is the larger one (x has one row), mul grows the shape
			// and the chain splits. Each re-recording decides again.
			d := []uint32{4, 6}
			x, z := in(b, d...), in(b, d...)
			outs := chain(b, x, d, nil, u("relu"), tt("aten.mul.Tensor", z, false), sc("add", 1))
			b.Inputs(x, z)
			b.Outputs(outs[len(outs)-1])
			rows, cols := 1+r.Int64N(4), 1+r.Int64N(6)
			xr, zr := rows, rows
			switch r.IntN(3) {
			case 0:
				xr = 1
			case 1:
				zr = 1
			}
			return []*reference.Tensor{RandTensor(r, f, []int64{xr, cols}, -3, 3), RandTensor(r, f, []int64{zr, cols}, -3, 3)}
		}},
		Case{Name: "fuse/big_grid", Tol: chainTol, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			// An odd count: one element per invocation, more than 65535
			// workgroups of 256, so the grid folds into 2-D.
			n := uint32(256*65535 + 3)
			x := in(b, n)
			outs := chain(b, x, []uint32{n}, nil, sc("mul", 0.5), u("tanh"))
			b.Inputs(x)
			b.Outputs(outs[len(outs)-1])
			return []*reference.Tensor{RandTensor(r, f, []int64{int64(n)}, -3, 3)}
		}},
	)
}

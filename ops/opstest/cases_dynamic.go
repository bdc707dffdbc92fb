package opstest

import (
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Dynamic-shape cases: the serialized dims are upper bounds and every seed
// feeds inputs of other, smaller (sometimes empty) shapes, so each op must
// derive its output shapes from its inputs' live shapes, and the graph must
// re-record for each new shape. SymInts computed by sym_size.int and the
// symbolic int ops flow into view_copy sizes and slice bounds.
func init() {
	f := serialization.Float32
	dyn := func(r *rand.Rand, lo, hi int64) int64 { return lo + r.Int64N(hi-lo+1) }
	Cases = append(Cases,
		Case{Name: "dynamic/add_sum_softmax", Tol: Tolerance{Abs: 1e-5, Rel: 1e-4}, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(f, []uint32{8, 6}, -1)
			y := b.Tensor(f, []uint32{6}, -1)
			z := b.Tensor(f, []uint32{8, 6}, 0)
			b.Op("aten.add.Tensor", x, y, b.Int(1), z)
			s := b.Tensor(f, []uint32{8, 1}, -1)
			b.Op("aten.sum.dim_IntList", z, b.IntList(1), b.Bool(true), b.Null(), s)
			sm := b.Tensor(f, []uint32{8, 6}, 1)
			b.Op("aten._softmax.default", z, b.Int(-1), b.Bool(false), sm)
			b.Inputs(x, y)
			b.Outputs(s, sm)
			rows, cols := dyn(r, 0, 8), dyn(r, 1, 6)
			return []*reference.Tensor{
				RandTensor(r, f, []int64{rows, cols}, -3, 3),
				RandTensor(r, f, []int64{cols}, -3, 3),
			}
		}},
		Case{Name: "dynamic/view_slice_symint", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(f, []uint32{8, 4}, -1)
			s0, p, h := b.SymInt(0), b.SymInt(0), b.SymInt(0)
			b.Op("sym_size.int", x, b.Int(0), s0)
			b.Op("mul", s0, b.Int(4), p)
			b.Op("floordiv", p, b.Int(2), h)
			v := b.Tensor(f, []uint32{32}, -1)
			b.Op("aten.view_copy.default", x, b.ValueList(p), v)
			sl := b.Tensor(f, []uint32{16}, -1)
			b.Op("aten.slice_copy.Tensor", v, b.Int(0), b.Int(1), h, b.Int(2), sl)
			b.Inputs(x)
			b.Outputs(v, sl, p, h)
			return []*reference.Tensor{RandTensor(r, f, []int64{dyn(r, 1, 8), 4}, -1, 1)}
		}},
		Case{Name: "dynamic/cat_select", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(f, []uint32{5, 3}, -1)
			y := b.Tensor(f, []uint32{4, 3}, -1)
			c := b.Tensor(f, []uint32{9, 3}, -1)
			b.Op("aten.cat.default", b.ValueList(x, y), b.Int(0), c)
			sel := b.Tensor(f, []uint32{9}, -1)
			b.Op("aten.select_copy.int", c, b.Int(1), b.Int(-1), sel)
			b.Inputs(x, y)
			b.Outputs(c, sel)
			return []*reference.Tensor{
				RandTensor(r, f, []int64{dyn(r, 1, 5), 3}, -1, 1),
				RandTensor(r, f, []int64{dyn(r, 0, 4), 3}, -1, 1),
			}
		}},
		// A packed (inline) convolution weight: every new input shape re-records
		// the conv, which must find the weight packed at load.
		Case{Name: "dynamic/conv_packed", Tol: Tolerance{Abs: 1e-4, Rel: 1e-4}, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(f, []uint32{2, 3, 9, 11}, -1)
			b.Inputs(x)
			inputs := []*reference.Tensor{RandTensor(r, f, []int64{dyn(r, 1, 2), 3, dyn(r, 1, 9), dyn(r, 1, 11)}, -1, 1)}
			w := addWeight(b, RandTensor(r, f, []int64{16, 3, 3, 3}, -1, 1), weightInline, &inputs)
			y := b.Tensor(f, []uint32{2, 16, 9, 11}, -1)
			b.Op("aten.convolution.default", x, w, b.Null(), b.IntList(1), b.IntList(1), b.IntList(1), b.Bool(false),
				b.IntList(0), b.Int(1), y)
			b.Outputs(y)
			return inputs
		}},
		Case{Name: "dynamic/permute_mean", Tol: Tolerance{Abs: 1e-5, Rel: 1e-4}, Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(f, []uint32{4, 7, 3}, -1)
			p := b.Tensor(f, []uint32{3, 4, 7}, -1)
			b.Op("aten.permute_copy.default", x, b.IntList(2, 0, 1), p)
			m := b.Tensor(f, []uint32{3, 4}, -1)
			b.Op("aten.mean.dim", p, b.IntList(-1), b.Bool(false), b.Null(), m)
			b.Inputs(x)
			b.Outputs(p, m)
			return []*reference.Tensor{RandTensor(r, f, []int64{dyn(r, 1, 4), dyn(r, 1, 7), 3}, -1, 1)}
		}},
	)
}

// select_as_symint reads an input tensor's value on the host (a position
// given as a tensor), and the value sizes a slice: every seed changes it.
func init() {
	f, i32 := serialization.Float32, serialization.Int32
	Cases = append(Cases, Case{Name: "dynamic/select_as_symint", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
		x := b.Tensor(f, []uint32{9, 3}, -1)
		pos := b.Tensor(i32, []uint32{2}, -1)
		end := b.SymInt(0)
		b.Op("et_vk.select_as_symint.default", pos, b.Int(0), b.Int(-1), end)
		sl := b.Tensor(f, []uint32{9, 3}, -1)
		b.Op("aten.slice_copy.Tensor", x, b.Int(0), b.Int(0), end, b.Int(1), sl)
		b.Inputs(x, pos)
		b.Outputs(sl, end)
		p := reference.New(i32, []int64{2})
		p.V[0], p.V[1] = float64(r.Int64N(100)), float64(1+r.Int64N(9))
		return []*reference.Tensor{RandTensor(r, f, []int64{9, 3}, -1, 1), p}
	}})
}

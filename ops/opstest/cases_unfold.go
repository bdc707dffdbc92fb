package opstest

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// t_copy, unfold_copy and copy: strided views on the gather kernel. Outputs
// are declared larger than needed so each op must compute its own shape.
func init() {
	f, i32, bl := serialization.Float32, serialization.Int32, serialization.Bool
	rnd := func(r *rand.Rand, dt serialization.DataType, shape []int64) *reference.Tensor {
		if dt == bl {
			return RandTensor(r, dt, shape, 0, 2)
		}
		return RandTensor(r, dt, shape, -100, 100)
	}
	for _, c := range []struct {
		dt    serialization.DataType
		shape []int64
	}{{f, []int64{7, 13}}, {i32, []int64{1, 5}}, {f, []int64{9}}, {f, []int64{}}, {bl, []int64{5, 3}}, {f, []int64{0, 4}}} {
		Cases = append(Cases, Case{Name: fmt.Sprintf("t_copy/%v/%s", c.dt, shapeName(c.shape)), Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(c.dt, Dims(c.shape), -1)
			out := b.Tensor(c.dt, Dims(reverse(c.shape)), -1)
			b.Op("aten.t_copy.default", x, out)
			b.Inputs(x)
			b.Outputs(out)
			return []*reference.Tensor{rnd(r, c.dt, c.shape)}
		}})
	}
	for _, c := range []struct {
		dt              serialization.DataType
		shape           []int64
		dim, size, step int64
	}{
		{f, []int64{10}, 0, 3, 1}, {f, []int64{10}, 0, 3, 4}, {f, []int64{4, 11, 3}, 1, 5, 2}, {f, []int64{4, 11, 3}, -1, 3, 3},
		{i32, []int64{2, 9}, -1, 2, 2}, {bl, []int64{3, 13}, 1, 4, 3}, {f, []int64{6, 5}, 0, 0, 1}, {f, []int64{}, 0, 1, 1},
		{f, []int64{7, 7}, 0, 7, 2},
	} {
		Cases = append(Cases, Case{Name: fmt.Sprintf("unfold_copy/%v/%s/d%d_s%d_st%d", c.dt, shapeName(c.shape), c.dim, c.size, c.step),
			Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
				x := b.Tensor(c.dt, Dims(c.shape), -1)
				n := int64(1)
				for _, d := range c.shape {
					n *= d
				}
				rank := len(c.shape) + 1
				capDims := make([]int64, rank)
				for k := range capDims {
					capDims[k] = 1
				}
				capDims[0] = n*max(c.size, 1) + 1 // capacity only
				out := b.Tensor(c.dt, Dims(capDims), -1)
				b.Op("aten.unfold_copy.default", x, b.Int(c.dim), b.Int(c.size), b.Int(c.step), out)
				b.Inputs(x)
				b.Outputs(out)
				return []*reference.Tensor{rnd(r, c.dt, c.shape)}
			}})
	}
	for _, c := range []struct {
		dt        serialization.DataType
		self, src []int64
	}{{f, []int64{3, 5}, []int64{3, 5}}, {f, []int64{3, 5}, []int64{5}}, {i32, []int64{2, 3, 4}, []int64{3, 1}}, {bl, []int64{6, 7}, []int64{1, 7}}, {f, []int64{}, []int64{}}} {
		Cases = append(Cases, Case{Name: fmt.Sprintf("copy/%v/%s<-%s", c.dt, shapeName(c.self), shapeName(c.src)), Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			self := b.Tensor(c.dt, Dims(c.self), -1)
			src := b.Tensor(c.dt, Dims(c.src), -1)
			out := b.Tensor(c.dt, Dims(c.self), -1)
			b.Op("aten.copy.default", self, src, b.Bool(false), out)
			b.Inputs(self, src)
			b.Outputs(out)
			return []*reference.Tensor{rnd(r, c.dt, c.self), rnd(r, c.dt, c.src)}
		}})
	}
	// Symbolic comparisons produce 0/1 SymInts.
	Cases = append(Cases, Case{Name: "symint/compare", Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
		n := b.SymInt(0)
		var outs []int32
		for _, op := range []string{"lt", "le", "gt", "ge", "eq", "ne"} {
			o := b.SymInt(0)
			b.Op(op, n, b.Int(5), o)
			outs = append(outs, o)
		}
		b.Inputs(n)
		b.Outputs(outs...)
		v := reference.New(serialization.Int64, []int64{})
		v.V[0] = float64(r.Int64N(10))
		return []*reference.Tensor{v}
	}})
}

func reverse(s []int64) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// poolCase is one max_pool2d / max_pool2d_with_indices / avg_pool2d graph.
type poolCase struct {
	name       string
	op         string // max, maxidx, avg
	in         []int64
	k, s, p, d []int64 // s may be empty (= k); d is max only
	ceil       bool
	inclPad    bool   // avg
	divisor    *int64 // avg divisor_override, nil for Null
	values     []float64
	ties       bool // inputs from {0, 1, 2}: exercises first-maximum indices
	tol        Tolerance
}

func pairAt(l []int64, i int) int64 {
	if len(l) == 1 {
		return l[0]
	}
	return l[i]
}

// outSize is torch's pooling output size along spatial dim i.
func (c poolCase) outSize(i int) int64 {
	n := c.in[len(c.in)-2+i]
	k, p := pairAt(c.k, i), pairAt(c.p, i)
	s := k
	if len(c.s) > 0 {
		s = pairAt(c.s, i)
	}
	d := int64(1)
	if c.d != nil {
		d = pairAt(c.d, i)
	}
	num := n + 2*p - d*(k-1) - 1
	if c.ceil {
		num += s - 1
	}
	o := num/s + 1
	if c.ceil && (o-1)*s >= n+p {
		o--
	}
	return o
}

func (c poolCase) caseOf() Case {
	name := fmt.Sprintf("pool/%s/%s_k%v_s%v_p%v", c.op, shapeName(c.in), c.k, c.s, c.p)
	if c.op != "avg" {
		name += fmt.Sprintf("_d%v", c.d)
	}
	name += fmt.Sprintf("_ceil%v", c.ceil)
	if c.op == "avg" {
		name += fmt.Sprintf("_incl%v", c.inclPad)
		if c.divisor != nil {
			name += fmt.Sprintf("_div%d", *c.divisor)
		}
	}
	if c.name != "" {
		name += "/" + c.name
	}
	return Case{
		Name: name,
		Tol:  c.tol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			r0 := len(c.in)
			outShape := append(append([]int64(nil), c.in[:r0-2]...), c.outSize(0), c.outSize(1))
			x := b.Tensor(f, Dims(c.in), -1)
			b.Inputs(x)
			args := []int32{x, b.IntList(c.k...), b.IntList(c.s...), b.IntList(c.p...)}
			out := b.Tensor(f, Dims(outShape), -1)
			switch c.op {
			case "avg":
				div := b.Null()
				if c.divisor != nil {
					div = b.Int(*c.divisor)
				}
				args = append(args, b.Bool(c.ceil), b.Bool(c.inclPad), div, out)
				b.Op("aten.avg_pool2d.default", args...)
				b.Outputs(out)
			case "max":
				args = append(args, b.IntList(c.d...), b.Bool(c.ceil), out)
				b.Op("aten.max_pool2d.default", args...)
				b.Outputs(out)
			case "maxidx":
				idx := b.Tensor(serialization.Int32, Dims(outShape), -1)
				args = append(args, b.IntList(c.d...), b.Bool(c.ceil), b.ValueList(out, idx))
				b.Op("aten.max_pool2d_with_indices.default", args...)
				b.Outputs(out, idx)
			}
			xv := RandTensor(r, f, c.in, -4, 4)
			if c.ties {
				for i := range xv.V {
					xv.V[i] = float64(r.IntN(3))
				}
			}
			copy(xv.V, c.values)
			return []*reference.Tensor{xv}
		},
	}
}

func init() {
	l := func(v ...int64) []int64 { return v }
	five, neg3 := int64(5), int64(-3)
	inf, nan := math.Inf(1), math.NaN()
	var cs []poolCase
	// Every shape below has a dim where ceil_mode adds a window, and some
	// where the last ceil window is dropped (it would start in the right
	// padding).
	for _, ceil := range []bool{false, true} {
		for _, op := range []string{"max", "maxidx"} {
			cs = append(cs,
				poolCase{op: op, in: l(2, 3, 12, 11), k: l(3), s: l(2), p: l(1), d: l(1), ceil: ceil},
				poolCase{op: op, in: l(1, 2, 10, 10), k: l(3, 2), s: l(2, 1), p: l(1, 1), d: l(2, 2), ceil: ceil},
				poolCase{op: op, in: l(3, 7, 8), k: l(2), s: l(), p: l(0), d: l(1), ceil: ceil},
				poolCase{op: op, in: l(1, 4, 10, 10), k: l(4, 3), s: l(3, 3), p: l(2, 1), d: l(1, 2), ceil: ceil, ties: true, name: "ties"},
			)
		}
		for _, incl := range []bool{false, true} {
			cs = append(cs,
				poolCase{op: "avg", in: l(2, 3, 10, 13), k: l(3), s: l(2), p: l(1), ceil: ceil, inclPad: incl},
				poolCase{op: "avg", in: l(1, 2, 7, 10), k: l(2, 3), s: l(1, 2), p: l(1, 1), ceil: ceil, inclPad: incl},
				poolCase{op: "avg", in: l(3, 6, 5), k: l(2), s: l(), p: l(1), ceil: ceil, inclPad: incl},
				poolCase{op: "avg", in: l(1, 2, 11, 9), k: l(4), s: l(3), p: l(2), ceil: ceil, inclPad: incl, divisor: &five},
			)
		}
	}
	cs = append(cs,
		poolCase{op: "avg", in: l(1, 1, 6, 6), k: l(3), s: l(2), p: l(1), ceil: true, divisor: &neg3},
		poolCase{op: "avg", in: l(1, 1, 1, 1), k: l(1), s: l(1), p: l(0)},
		poolCase{op: "maxidx", in: l(1, 1, 1, 1), k: l(1), s: l(1), p: l(0), d: l(1)},
		// NaN propagates (the last NaN's index wins); -inf windows keep
		// the first in-bounds index.
		poolCase{op: "maxidx", in: l(1, 1, 4, 4), k: l(2), s: l(2), p: l(0), d: l(1), name: "special",
			values: []float64{nan, 1, -inf, -inf, 2, nan, -inf, -inf, 3, 3, inf, 0, 3, 4, 0, inf}},
		// 260·260 = 67600 window positions > 65535: five chunks.
		poolCase{op: "maxidx", in: l(1, 2, 260, 260), k: l(260), s: l(1), p: l(0), d: l(1), name: "long_window"},
		poolCase{op: "avg", in: l(1, 1, 261, 261), k: l(260), s: l(1), p: l(0), name: "long_window",
			tol: Tolerance{Abs: 1e-6, Rel: 1e-4}},
	)
	for _, c := range cs {
		Cases = append(Cases, c.caseOf())
	}
}

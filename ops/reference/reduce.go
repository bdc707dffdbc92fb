package reference

import (
	"fmt"
	"math"
	"strings"
)

// Reductions, as torch defines them:
//
//	aten.sum.dim_IntList / aten.mean.dim [self, dim, keepdim, dtype, out]
//	aten.amax.default / aten.amin.default [self, dim, keepdim, out]
//	aten.argmax.default / aten.argmin.default [self, dim(Int or Null), keepdim, out]
//	aten.var.dim [self, dim, unbiased, keepdim, out]
//	aten.var.correction [self, dim, correction, keepdim, out]
//
// A Null or empty dim list reduces every dim. Values are gathered per
// output element, in row-major order of the reduced coordinates, and folded
// in float64.
func init() {
	Register("aten.sum.dim_IntList", func(e *Env, a []int32) error { return reduceRef(e, "sum", a) })
	Register("aten.mean.dim", func(e *Env, a []int32) error { return reduceRef(e, "mean", a) })
	Register("aten.amax.default", func(e *Env, a []int32) error { return reduceRef(e, "amax", a) })
	Register("aten.amin.default", func(e *Env, a []int32) error { return reduceRef(e, "amin", a) })
	Register("aten.argmax.default", func(e *Env, a []int32) error { return reduceRef(e, "argmax", a) })
	Register("aten.argmin.default", func(e *Env, a []int32) error { return reduceRef(e, "argmin", a) })
	Register("aten.var.dim", func(e *Env, a []int32) error { return reduceRef(e, "var.dim", a) })
	Register("aten.var.correction", func(e *Env, a []int32) error { return reduceRef(e, "var.correction", a) })
}

func reduceRef(e *Env, op string, a []int32) error {
	want := 4
	if op == "sum" || op == "mean" || op == "var.dim" || op == "var.correction" {
		want = 5
	}
	if len(a) != want {
		return fmt.Errorf("%s: %d args, want %d", op, len(a), want)
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	rank := len(x.Shape)
	red := make([]bool, rank)
	all := true
	wrap := func(d int64) (int, error) {
		r := int64(max(rank, 1))
		if d < -r || d >= r {
			return 0, fmt.Errorf("%s: dim %d out of range for rank %d", op, d, rank)
		}
		return int((d + r) % r), nil
	}
	switch {
	case e.IsNull(a[1]):
	case op == "argmax" || op == "argmin":
		d, err := e.Int(a[1])
		if err != nil {
			return err
		}
		n, err := wrap(d)
		if err != nil {
			return err
		}
		all = false
		if rank > 0 {
			red[n] = true
		}
	default:
		dims, err := e.IntList(a[1])
		if err != nil {
			return err
		}
		for _, d := range dims {
			n, err := wrap(d)
			if err != nil {
				return err
			}
			all = false
			if rank > 0 {
				if red[n] {
					return fmt.Errorf("%s: dim %d repeats", op, n)
				}
				red[n] = true
			}
		}
	}
	if all {
		for i := range red {
			red[i] = true
		}
	}
	keepArg := 2
	if op == "var.dim" || op == "var.correction" {
		keepArg = 3
	}
	keep, err := e.Bool(a[keepArg])
	if err != nil {
		return err
	}
	corr := 1.0
	switch op {
	case "var.dim":
		unb, err := e.Bool(a[2])
		if err != nil {
			return err
		}
		if !unb {
			corr = 0
		}
	case "var.correction":
		if !e.IsNull(a[2]) {
			if corr, err = e.Float(a[2]); err != nil {
				return err
			}
		}
	}

	outShape := []int64{}
	for i, d := range x.Shape {
		if !red[i] {
			outShape = append(outShape, d)
		} else if keep {
			outShape = append(outShape, 1)
		}
	}
	out, err := e.NewOut(a[len(a)-1], outShape)
	if err != nil {
		return err
	}
	// groups[o] lists the values of output o in reduced row-major order.
	groups := make([][]float64, len(out.V))
	for i, v := range x.V {
		coord := shCoords(int64(i), x.Shape)
		o := int64(0)
		for d := 0; d < rank; d++ {
			if !red[d] {
				o = o*x.Shape[d] + coord[d]
			}
		}
		groups[o] = append(groups[o], v)
	}
	for o, g := range groups {
		n := float64(len(g))
		switch op {
		case "sum", "mean":
			s := 0.0
			for _, v := range g {
				s += v
			}
			if op == "mean" {
				s /= n
			}
			out.V[o] = s
		case "amax", "amin", "argmax", "argmin":
			if len(g) == 0 {
				return fmt.Errorf("%s: empty reduction", op)
			}
			isMax := strings.HasSuffix(op, "max")
			best := 0
			for i, v := range g {
				if math.IsNaN(g[best]) {
					break
				}
				if math.IsNaN(v) || isMax && v > g[best] || !isMax && v < g[best] {
					best = i
				}
			}
			if strings.HasPrefix(op, "arg") {
				out.V[o] = float64(best)
			} else {
				out.V[o] = g[best]
			}
		default: // var
			m := 0.0
			for _, v := range g {
				m += v
			}
			m /= n
			ss := 0.0
			for _, v := range g {
				ss += (v - m) * (v - m)
			}
			out.V[o] = ss / math.Max(0, n-corr)
		}
	}
	e.Set(a[len(a)-1], out)
	return nil
}

// aten._softmax.default / aten._log_softmax.default [self, dim, half_to_float, out]:
// along dim, softmax = exp(x - max) / sum(exp(x - max)) and log_softmax =
// x - max - log(sum(exp(x - max))).
func init() {
	Register("aten._softmax.default", func(e *Env, a []int32) error { return softmaxRef(e, false, a) })
	Register("aten._log_softmax.default", func(e *Env, a []int32) error { return softmaxRef(e, true, a) })
}

func softmaxRef(e *Env, log bool, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("softmax: %d args, want 4", len(a))
	}
	x, d, err := e.inInt(a[0], a[1])
	if err != nil {
		return err
	}
	rank := int64(len(x.Shape))
	r := max(rank, 1)
	if d < -r || d >= r {
		return fmt.Errorf("softmax: dim %d out of range for rank %d", d, rank)
	}
	d = (d + r) % r
	out, err := e.NewOut(a[3], x.Shape)
	if err != nil {
		return err
	}
	n, inner := int64(1), int64(1)
	if rank > 0 {
		n = x.Shape[d]
		for _, s := range x.Shape[d+1:] {
			inner *= s
		}
	}
	for start := range x.V {
		// start is the first element of a row when its coordinate along
		// dim is 0.
		if (int64(start)/inner)%n != 0 {
			continue
		}
		m := math.Inf(-1)
		for k := int64(0); k < n; k++ {
			v := x.V[int64(start)+k*inner]
			if math.IsNaN(v) || v > m {
				m = v
			}
			if math.IsNaN(m) {
				break
			}
		}
		s := 0.0
		for k := int64(0); k < n; k++ {
			s += math.Exp(x.V[int64(start)+k*inner] - m)
		}
		for k := int64(0); k < n; k++ {
			i := int64(start) + k*inner
			if log {
				out.V[i] = x.V[i] - m - math.Log(s)
			} else {
				out.V[i] = math.Exp(x.V[i]-m) / s
			}
		}
	}
	e.Set(a[3], out)
	return nil
}

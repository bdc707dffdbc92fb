package reference

import "fmt"

// aten.mm.default [self (M×K), mat2 (K×N), out (M×N)]
// aten.linear.default [input (…×K), weight (N×K), bias (N) or Null, out (…×N)]
//
// Naive triple loops in float64; linear is input·weightᵀ + bias with the
// input's leading dims taken as rows.
func init() {
	Register("aten.mm.default", mmRef)
	Register("aten.linear.default", linearRef)
}

func mmRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("mm: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	y, err := e.In(a[1])
	if err != nil {
		return err
	}
	out, err := e.Out(a[2])
	if err != nil {
		return err
	}
	if len(x.Shape) != 2 || len(y.Shape) != 2 || x.Shape[1] != y.Shape[0] {
		return fmt.Errorf("mm: shapes %v and %v", x.Shape, y.Shape)
	}
	m, k, n := x.Shape[0], x.Shape[1], y.Shape[1]
	if out.Numel() != m*n {
		return fmt.Errorf("mm: out shape %v for %dx%d", out.Shape, m, n)
	}
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			s := 0.0
			for p := int64(0); p < k; p++ {
				s += x.V[i*k+p] * y.V[p*n+j]
			}
			out.V[i*n+j] = s
		}
	}
	e.Set(a[2], out)
	return nil
}

func linearRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("linear: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	w, err := e.In(a[1])
	if err != nil {
		return err
	}
	out, err := e.Out(a[3])
	if err != nil {
		return err
	}
	if len(x.Shape) == 0 || len(w.Shape) != 2 {
		return fmt.Errorf("linear: shapes %v and %v", x.Shape, w.Shape)
	}
	k := x.Shape[len(x.Shape)-1]
	n := w.Shape[0]
	if w.Shape[1] != k {
		return fmt.Errorf("linear: weight %v for input %v", w.Shape, x.Shape)
	}
	m := int64(1)
	for _, d := range x.Shape[:len(x.Shape)-1] {
		m *= d
	}
	if out.Numel() != m*n {
		return fmt.Errorf("linear: out shape %v for %dx%d", out.Shape, m, n)
	}
	var bias *Tensor
	if !e.IsNull(a[2]) {
		if bias, err = e.In(a[2]); err != nil {
			return err
		}
		if bias.Numel() != n {
			return fmt.Errorf("linear: bias shape %v for %d outputs", bias.Shape, n)
		}
	}
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			s := 0.0
			if bias != nil {
				s = bias.V[j]
			}
			for p := int64(0); p < k; p++ {
				s += x.V[i*k+p] * w.V[j*k+p]
			}
			out.V[i*n+j] = s
		}
	}
	e.Set(a[3], out)
	return nil
}

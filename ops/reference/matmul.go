package reference

import "fmt"

// aten.mm.default [self (M×K), mat2 (K×N), out (M×N)]
// aten.bmm.default [self (B×M×K), mat2 (B×K×N), out]
// aten.addmm.default [self (bias), mat1, mat2, beta, alpha, out]
// aten.matmul.default [self, other, out]
// aten.linear.default [input (…×K), weight (N×K), bias (N) or Null, out (…×N)]
//
// Naive loops in float64. matmul follows torch.matmul: 1-D operands are
// promoted to a row (self) or a column (other) that the result drops, and
// batch dims broadcast.
func init() {
	Register("aten.mm.default", mmRef)
	Register("aten.bmm.default", bmmRef)
	Register("aten.addmm.default", addmmRef)
	Register("aten.matmul.default", matmulRef)
	Register("aten.linear.default", linearRef)
}

// gemm returns the m×n product of x (m×k) and y (k×n), both row-major
// slices.
func gemm(x, y []float64, m, k, n int64) []float64 {
	out := make([]float64, m*n)
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			s := 0.0
			for p := int64(0); p < k; p++ {
				s += x[i*k+p] * y[p*n+j]
			}
			out[i*n+j] = s
		}
	}
	return out
}

func mmRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("mm: %d args", len(a))
	}
	x, y, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	if len(x.Shape) != 2 || len(y.Shape) != 2 || x.Shape[1] != y.Shape[0] {
		return fmt.Errorf("mm: shapes %v and %v", x.Shape, y.Shape)
	}
	m, k, n := x.Shape[0], x.Shape[1], y.Shape[1]
	out, err := e.NewOut(a[2], []int64{m, n})
	if err != nil {
		return err
	}
	out.V = gemm(x.V, y.V, m, k, n)
	e.Set(a[2], out)
	return nil
}

func bmmRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("bmm: %d args", len(a))
	}
	x, y, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	if len(x.Shape) != 3 || len(y.Shape) != 3 || x.Shape[0] != y.Shape[0] || x.Shape[2] != y.Shape[1] {
		return fmt.Errorf("bmm: shapes %v and %v", x.Shape, y.Shape)
	}
	bs, m, k, n := x.Shape[0], x.Shape[1], x.Shape[2], y.Shape[2]
	out, err := e.NewOut(a[2], []int64{bs, m, n})
	if err != nil {
		return err
	}
	for i := int64(0); i < bs; i++ {
		copy(out.V[i*m*n:], gemm(x.V[i*m*k:(i+1)*m*k], y.V[i*k*n:(i+1)*k*n], m, k, n))
	}
	e.Set(a[2], out)
	return nil
}

func addmmRef(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("addmm: %d args", len(a))
	}
	bias, err := e.In(a[0])
	if err != nil {
		return err
	}
	x, err := e.In(a[1])
	if err != nil {
		return err
	}
	y, err := e.In(a[2])
	if err != nil {
		return err
	}
	beta, err := e.Float(a[3])
	if err != nil {
		return err
	}
	alpha, err := e.Float(a[4])
	if err != nil {
		return err
	}
	if len(x.Shape) != 2 || len(y.Shape) != 2 || x.Shape[1] != y.Shape[0] {
		return fmt.Errorf("addmm: shapes %v and %v", x.Shape, y.Shape)
	}
	m, k, n := x.Shape[0], x.Shape[1], y.Shape[1]
	// Bias as [rows, cols], each 1 or the full size.
	br, bc := int64(1), int64(1)
	switch len(bias.Shape) {
	case 0:
	case 1:
		bc = bias.Shape[0]
	case 2:
		br, bc = bias.Shape[0], bias.Shape[1]
	default:
		return fmt.Errorf("addmm: bias shape %v", bias.Shape)
	}
	if (br != 1 && br != m) || (bc != 1 && bc != n) {
		return fmt.Errorf("addmm: bias shape %v for %dx%d", bias.Shape, m, n)
	}
	out, err := e.NewOut(a[5], []int64{m, n})
	if err != nil {
		return err
	}
	p := gemm(x.V, y.V, m, k, n)
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			v := alpha * p[i*n+j]
			if beta != 0 {
				v += beta * bias.V[(i%br)*bc+j%bc]
			}
			out.V[i*n+j] = v
		}
	}
	e.Set(a[5], out)
	return nil
}

func matmulRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("matmul: %d args", len(a))
	}
	x, y, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	if len(x.Shape) == 0 || len(y.Shape) == 0 {
		return fmt.Errorf("matmul: shapes %v and %v", x.Shape, y.Shape)
	}
	xs, ys := x.Shape, y.Shape
	if len(xs) == 1 {
		xs = []int64{1, xs[0]}
	}
	if len(ys) == 1 {
		ys = []int64{ys[0], 1}
	}
	m, k, n := xs[len(xs)-2], xs[len(xs)-1], ys[len(ys)-1]
	if ys[len(ys)-2] != k {
		return fmt.Errorf("matmul: shapes %v and %v", x.Shape, y.Shape)
	}
	xb, yb := xs[:len(xs)-2], ys[:len(ys)-2]
	rank := max(len(xb), len(yb))
	bdims := make([]int64, rank)
	pad := func(d []int64) []int64 {
		p := make([]int64, rank)
		for i := range p {
			p[i] = 1
		}
		copy(p[rank-len(d):], d)
		return p
	}
	xp, yp := pad(xb), pad(yb)
	for i := range bdims {
		switch {
		case xp[i] == yp[i] || yp[i] == 1:
			bdims[i] = xp[i]
		case xp[i] == 1:
			bdims[i] = yp[i]
		default:
			return fmt.Errorf("matmul: batch dims of %v and %v", x.Shape, y.Shape)
		}
	}
	shape := append([]int64(nil), bdims...)
	if len(x.Shape) > 1 {
		shape = append(shape, m)
	}
	if len(y.Shape) > 1 {
		shape = append(shape, n)
	}
	out, err := e.NewOut(a[2], shape)
	if err != nil {
		return err
	}
	nb := int64(1)
	for _, d := range bdims {
		nb *= d
	}
	idx := make([]int64, rank)
	for bi := int64(0); bi < nb; bi++ {
		// Decode bi over bdims, then find each operand's batch.
		r := bi
		for i := rank - 1; i >= 0; i-- {
			idx[i] = r % bdims[i]
			r /= bdims[i]
		}
		xo, yo := int64(0), int64(0)
		for i := 0; i < rank; i++ {
			xo = xo*xp[i] + idx[i]%xp[i]
			yo = yo*yp[i] + idx[i]%yp[i]
		}
		p := gemm(x.V[xo*m*k:(xo+1)*m*k], y.V[yo*k*n:(yo+1)*k*n], m, k, n)
		copy(out.V[bi*m*n:], p)
	}
	e.Set(a[2], out)
	return nil
}

func linearRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("linear: %d args", len(a))
	}
	x, w, err := e.in2(a[0], a[1])
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
	out, err := e.NewOut(a[3], append(append([]int64(nil), x.Shape[:len(x.Shape)-1]...), n))
	if err != nil {
		return err
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

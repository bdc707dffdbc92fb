package reference

import "fmt"

// et_vk.linear_q4gsw.default [x (…×K), weight UINT8 [N, roundup(K,8)/2] (even k low nibble), scales [G, Np4], group_size, bias|Null, out]
// et_vk.linear_qcs4w.default [x, weight UINT8 [N, ceil(K/2)] (even k high nibble), scales [N], out]
// aten._weight_int8pack_mm.default [x, mat2 INT8 [N, K], scales [N], out]
// et_vk.embedding_q4gsw.default [weight UINT8 [V, D/2], scales [V, D/g] or [V], group_size, indices, is_linear_weight, out]
//
// The weights are unpacked to a float64 [N, K] (or [V, D]) matrix,
// W[n, k] = (code − 8)·scale (int8: value·scale), and the op is then the
// plain product (or row gather), in float64.
func init() {
	Register("et_vk.linear_q4gsw.default", linearQ4gswRef)
	Register("et_vk.linear_qcs4w.default", linearQcs4wRef)
	Register("aten._weight_int8pack_mm.default", weightInt8packMMRef)
	Register("et_vk.embedding_q4gsw.default", embeddingQ4gswRef)
}

// nibble returns the signed int4 value of element j of a row of packed
// bytes: code − 8, the even element in the low nibble unless highEven.
func nibble(row []float64, j int64, highEven bool) float64 {
	b := int(row[j/2])
	lo := j%2 == 0
	if highEven {
		lo = !lo
	}
	if lo {
		return float64(b&15) - 8
	}
	return float64(b>>4) - 8
}

// quantLinearOut computes out = x·Wᵀ (+ bias) for W [n, k] and stores it
// in id with the output's declared rank (x's leading dims, or [M, N]).
func quantLinearOut(e *Env, x *Tensor, wm []float64, n int64, bias []float64, id int32) error {
	k := x.Shape[len(x.Shape)-1]
	m := int64(1)
	for _, d := range x.Shape[:len(x.Shape)-1] {
		m *= d
	}
	_, decl, err := e.Decl(id)
	if err != nil {
		return err
	}
	shape := append(append([]int64(nil), x.Shape[:len(x.Shape)-1]...), n)
	if len(decl) == 2 && len(shape) != 2 {
		shape = []int64{m, n}
	}
	for len(shape) < len(decl) {
		shape = append([]int64{1}, shape...)
	}
	out, err := e.NewOut(id, shape)
	if err != nil {
		return err
	}
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			acc := 0.0
			for p := int64(0); p < k; p++ {
				acc += x.V[i*k+p] * wm[j*k+p]
			}
			if bias != nil {
				acc += bias[j]
			}
			out.V[i*n+j] = acc
		}
	}
	e.Set(id, out)
	return nil
}

func linearQ4gswRef(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("linear_q4gsw: %d args", len(a))
	}
	x, w, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	s, err := e.In(a[2])
	if err != nil {
		return err
	}
	g, err := e.Int(a[3])
	if err != nil {
		return err
	}
	k := x.Shape[len(x.Shape)-1]
	if len(w.Shape) != 2 || len(s.Shape) != 2 || g <= 0 || w.Shape[1]*2 < k {
		return fmt.Errorf("linear_q4gsw: weight %v scales %v group %d for K %d", w.Shape, s.Shape, g, k)
	}
	n, rb, ld := w.Shape[0], w.Shape[1], s.Shape[1]
	if s.Shape[0] < (k+g-1)/g || ld < n {
		return fmt.Errorf("linear_q4gsw: scales %v too small", s.Shape)
	}
	wm := make([]float64, n*k)
	for j := int64(0); j < n; j++ {
		row := w.V[j*rb : (j+1)*rb]
		for p := int64(0); p < k; p++ {
			wm[j*k+p] = nibble(row, p, false) * s.V[(p/g)*ld+j]
		}
	}
	var bias []float64
	if !e.IsNull(a[4]) {
		bt, err := e.In(a[4])
		if err != nil {
			return err
		}
		if bt.Numel() < n {
			return fmt.Errorf("linear_q4gsw: bias %v for N %d", bt.Shape, n)
		}
		bias = bt.V
	}
	return quantLinearOut(e, x, wm, n, bias, a[5])
}

// perChannelRef reads [x, weight, scales [N], out] and unpacks the weight
// with elem(row, k).
func perChannelRef(e *Env, a []int32, name string, elem func(row []float64, k int64) float64, rowLen func(k int64) int64) error {
	if len(a) != 4 {
		return fmt.Errorf("%s: %d args", name, len(a))
	}
	x, w, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	s, err := e.In(a[2])
	if err != nil {
		return err
	}
	k := x.Shape[len(x.Shape)-1]
	if len(w.Shape) != 2 || w.Shape[1] != rowLen(k) || len(s.Shape) != 1 || s.Shape[0] != w.Shape[0] {
		return fmt.Errorf("%s: weight %v scales %v for K %d", name, w.Shape, s.Shape, k)
	}
	n, rb := w.Shape[0], w.Shape[1]
	wm := make([]float64, n*k)
	for j := int64(0); j < n; j++ {
		for p := int64(0); p < k; p++ {
			wm[j*k+p] = elem(w.V[j*rb:(j+1)*rb], p) * s.V[j]
		}
	}
	return quantLinearOut(e, x, wm, n, nil, a[3])
}

func linearQcs4wRef(e *Env, a []int32) error {
	return perChannelRef(e, a, "linear_qcs4w",
		func(row []float64, k int64) float64 { return nibble(row, k, true) },
		func(k int64) int64 { return (k + 1) / 2 })
}

func weightInt8packMMRef(e *Env, a []int32) error {
	return perChannelRef(e, a, "_weight_int8pack_mm",
		func(row []float64, k int64) float64 { return row[k] },
		func(k int64) int64 { return k })
}

func embeddingQ4gswRef(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("embedding_q4gsw: %d args", len(a))
	}
	w, s, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	g, err := e.Int(a[2])
	if err != nil {
		return err
	}
	ix, err := e.In(a[3])
	if err != nil {
		return err
	}
	var linear bool
	if v, err := e.Bool(a[4]); err == nil {
		linear = v
	} else if iv, err2 := e.Int(a[4]); err2 == nil {
		linear = iv != 0
	} else {
		return err
	}
	if len(w.Shape) != 2 || g <= 0 {
		return fmt.Errorf("embedding_q4gsw: weight %v group %d", w.Shape, g)
	}
	v, rb := w.Shape[0], w.Shape[1]
	d := rb * 2
	perRow := int64(1)
	switch {
	case len(s.Shape) == 2 && s.Shape[0] == v:
		perRow = s.Shape[1]
	case len(s.Shape) == 1 && s.Shape[0] == v:
	default:
		return fmt.Errorf("embedding_q4gsw: scales %v for weight %v", s.Shape, w.Shape)
	}
	if perRow*g < d {
		return fmt.Errorf("embedding_q4gsw: %d groups of %d for D %d", perRow, g, d)
	}
	out, err := e.NewOut(a[5], append(append([]int64(nil), ix.Shape...), d))
	if err != nil {
		return err
	}
	for i, fv := range ix.V {
		r := int64(fv)
		if r < 0 || r >= v {
			return fmt.Errorf("embedding_q4gsw: index %d out of [0, %d)", r, v)
		}
		row := w.V[r*rb : (r+1)*rb]
		for p := int64(0); p < d; p++ {
			out.V[int64(i)*d+p] = nibble(row, p, !linear) * s.V[r*perRow+p/g]
		}
	}
	e.Set(a[5], out)
	return nil
}

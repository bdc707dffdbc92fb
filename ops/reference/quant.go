package reference

import (
	"fmt"
	"math"
)

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

// newLinearOut makes a quantized linear's output for x [..., K] with n
// columns (m rows in all) in the rank the graph declares for id: x's
// leading dims then n, [m, n] when declared 2-D, or with leading 1s
// added up to the declared rank.
func (e *Env) newLinearOut(id int32, x *Tensor, m, n int64) (*Tensor, error) {
	_, decl, err := e.Decl(id)
	if err != nil {
		return nil, err
	}
	shape := append(append([]int64(nil), x.Shape[:len(x.Shape)-1]...), n)
	if len(decl) == 2 && len(shape) != 2 {
		shape = []int64{m, n}
	}
	for len(shape) < len(decl) {
		shape = append([]int64{1}, shape...)
	}
	return e.NewOut(id, shape)
}

// quantLinearOut computes out = x·Wᵀ (+ bias) for W [n, k] and stores it
// in id with the output's declared rank (x's leading dims, or [M, N]).
func quantLinearOut(e *Env, x *Tensor, wm []float64, n int64, bias []float64, id int32) error {
	k := x.Shape[len(x.Shape)-1]
	m := int64(1)
	for _, d := range x.Shape[:len(x.Shape)-1] {
		m *= d
	}
	out, err := e.newLinearOut(id, x, m, n)
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
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	return q4gswRef(e, x, a[1:])
}

// q4gswRef is linear_q4gsw of activation x with a = [weight, scales,
// group_size, bias, out].
func q4gswRef(e *Env, x *Tensor, a []int32) error {
	w, s, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	g, err := e.Int(a[2])
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
	if !e.IsNull(a[3]) {
		bt, err := e.In(a[3])
		if err != nil {
			return err
		}
		if bt.Numel() < n {
			return fmt.Errorf("linear_q4gsw: bias %v for N %d", bt.Shape, n)
		}
		bias = bt.V
	}
	return quantLinearOut(e, x, wm, n, bias, a[4])
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

// torchao.choose_qparams_affine.default [input, mapping_type, block_size, …, out ValueList [scale, zp]]
// (ASYMMETRIC, per row: the Vulkan/WebGPU rule, in float32 arithmetic)
// et_vk.linear_weight_int4.default [x, mat2 UINT8 [N, K/2] (even k high nibble), group_size, qScaleAndZeros [K/g, N, 2], inner_k_tiles, out]
// (W = (code − 8)·scale + zero)
// et_vk.linear_dq8ca_q4gsw.default [x, x_scale, x_zp, weight, weight_sums, weight_scales, group_size, bias|Null, out]
func init() {
	Register("torchao.choose_qparams_affine.default", chooseQParamsRef)
	Register("et_vk.linear_dq8ca_q4gsw.default", linearDq8caQ4gswRef)
	Register("et_vk.linear_weight_int4.default", linearWeightInt4Ref)
}

// rowQParams returns the scale and zero point of one row by the runtimes'
// rule: range widened to hold 0, scale = range/(qmax−qmin) (0 or an
// infinite reciprocal → 0.1, under 6.1e-5 raised to it with the range
// stretched), zero point from whichever end has the smaller error test,
// clamped to [qmin, qmax] or rounded half to even.
func rowQParams(row []float64, qmin, qmax int64) (float32, int64) {
	var lo, hi float32
	for _, v := range row {
		lo = min(lo, float32(v))
		hi = max(hi, float32(v))
	}
	fmin, fmax := float32(qmin), float32(qmax)
	s := (hi - lo) / (fmax - fmin)
	if s == 0 || math.IsInf(float64(1/s), 0) {
		s = 0.1
	}
	const small = float32(6.1e-5)
	if s < small {
		org := s
		s = small
		switch {
		case lo == 0:
			hi = small * (fmax - fmin)
		case hi == 0:
			lo = -small * (fmax - fmin)
		default:
			lo *= small / org
			hi *= small / org
		}
	}
	fromMin, fromMax := fmin-lo/s, fmax-hi/s
	errMin := float32(math.Abs(float64(fmin))) - float32(math.Abs(float64(lo/s)))
	errMax := float32(math.Abs(float64(fmax))) - float32(math.Abs(float64(hi/s)))
	z0 := fromMax
	if errMin < errMax {
		z0 = fromMin
	}
	switch {
	case z0 < fmin:
		return s, qmin
	case z0 > fmax:
		return s, qmax
	}
	return s, int64(math.RoundToEven(float64(z0)))
}

func chooseQParamsRef(e *Env, a []int32) error {
	if n := len(a); n != 10 && n != 11 && n != 14 {
		return fmt.Errorf("choose_qparams_affine: %d args", n)
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	if mt, err := e.String(a[1]); err != nil || mt != "ASYMMETRIC" {
		return fmt.Errorf("choose_qparams_affine: mapping_type %q (%v)", mt, err)
	}
	bs, err := e.IntList(a[2])
	if err != nil {
		return err
	}
	r := len(x.Shape)
	k := x.Shape[r-1]
	if len(bs) != r || bs[r-1] != k {
		return fmt.Errorf("choose_qparams_affine: block_size %v for %v", bs, x.Shape)
	}
	for _, v := range bs[:r-1] {
		if v != 1 {
			return fmt.Errorf("choose_qparams_affine: block_size %v is not per row", bs)
		}
	}
	qmin, qmax := int64(-128), int64(127)
	if !e.IsNull(a[4]) {
		if qmin, err = e.Int(a[4]); err != nil {
			return err
		}
	}
	if !e.IsNull(a[5]) {
		if qmax, err = e.Int(a[5]); err != nil {
			return err
		}
	}
	outs, err := e.ValueList(a[len(a)-1])
	if err != nil || len(outs) != 2 {
		return fmt.Errorf("choose_qparams_affine: outputs %v (%v)", outs, err)
	}
	rows := x.Numel() / max(k, 1)
	var res [2]*Tensor
	for i, id := range outs {
		_, decl, err := e.Decl(id)
		if err != nil {
			return err
		}
		shape := append([]int64(nil), x.Shape[:r-1]...)
		if len(decl) == r {
			shape = append(shape, 1)
		}
		if res[i], err = e.NewOut(id, shape); err != nil {
			return err
		}
	}
	for m := int64(0); m < rows; m++ {
		s, z := rowQParams(x.V[m*k:(m+1)*k], qmin, qmax)
		res[0].V[m], res[1].V[m] = float64(s), float64(z)
	}
	e.Set(outs[0], res[0])
	e.Set(outs[1], res[1])
	return nil
}

func linearDq8caQ4gswRef(e *Env, a []int32) error {
	if len(a) != 9 {
		return fmt.Errorf("linear_dq8ca_q4gsw: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	xs, xz, err := e.in2(a[1], a[2])
	if err != nil {
		return err
	}
	k := x.Shape[len(x.Shape)-1]
	rows := x.Numel() / max(k, 1)
	if xs.Numel() != rows || xz.Numel() != rows {
		return fmt.Errorf("linear_dq8ca_q4gsw: qparams %v %v for %d rows", xs.Shape, xz.Shape, rows)
	}
	// The activation each row's dot product sees: (xq − z)·s, quantized in
	// float32 as the runtimes do; the linear itself is linear_q4gsw's.
	xd := &Tensor{DType: x.DType, Shape: x.Shape, V: make([]float64, len(x.V))}
	for m := int64(0); m < rows; m++ {
		s, z := float32(xs.V[m]), xz.V[m]
		for j := m * k; j < (m+1)*k; j++ {
			q := math.RoundToEven(float64(float32(x.V[j])/s)) + z
			q = math.Max(-128, math.Min(127, q))
			xd.V[j] = (q - z) * float64(s)
		}
	}
	return q4gswRef(e, xd, []int32{a[3], a[5], a[6], a[7], a[8]})
}

func linearWeightInt4Ref(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("linear_weight_int4: %d args", len(a))
	}
	x, w, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	g, err := e.Int(a[2])
	if err != nil {
		return err
	}
	sz, err := e.In(a[3])
	if err != nil {
		return err
	}
	k := x.Shape[len(x.Shape)-1]
	if len(w.Shape) != 2 || g <= 0 || k%g != 0 || w.Shape[1]*2 != k {
		return fmt.Errorf("linear_weight_int4: mat2 %v group %d for K %d", w.Shape, g, k)
	}
	n := w.Shape[0]
	if len(sz.Shape) != 3 || sz.Shape[0] != k/g || sz.Shape[1] != n || sz.Shape[2] != 2 {
		return fmt.Errorf("linear_weight_int4: qScaleAndZeros %v", sz.Shape)
	}
	wm := make([]float64, n*k)
	for j := int64(0); j < n; j++ {
		row := w.V[j*k/2 : (j+1)*k/2]
		for p := int64(0); p < k; p++ {
			at := ((p/g)*n + j) * 2
			wm[j*k+p] = nibble(row, p, true)*sz.V[at] + sz.V[at+1]
		}
	}
	return quantLinearOut(e, x, wm, n, nil, a[5])
}

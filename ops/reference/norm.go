package reference

import (
	"fmt"
	"math"
	"slices"
)

// Normalizations, as torch defines them (biased variance, rstd =
// 1/sqrt(var + eps)):
//
//	aten.native_layer_norm.default [input, normalized_shape, weight, bias, eps, [out, mean, rstd]]
//	et_vk.rms_norm.default [x, weight, eps, out]
//	aten.native_group_norm.default [input, weight, bias, N, C, HxW, group, eps, [out, mean, rstd]]
//	aten._native_batch_norm_legit_no_training.default [input, weight, bias, running_mean, running_var, momentum, eps, [out, save_mean, save_invstd]]
func init() {
	Register("aten.native_layer_norm.default", layerNormRef)
	Register("et_vk.rms_norm.default", rmsNormRef)
	Register("aten.native_group_norm.default", groupNormRef)
	Register("aten._native_batch_norm_legit_no_training.default", batchNormRef)
}

// normOptIn returns tensor id, or nil for a Null.
func (e *Env) normOptIn(id int32) (*Tensor, error) {
	if e.IsNull(id) {
		return nil, nil
	}
	return e.In(id)
}

// normStats returns mean and biased variance of v.
func normStats(v []float64) (mean, variance float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(v))
}

// normSetOuts stores out and, when the list's other entries are tensors, the
// two statistics tensors.
func (e *Env) normSetOuts(list int32, out *Tensor, statShape []int64, a, b []float64) error {
	l, err := e.ValueList(list)
	if err != nil {
		return err
	}
	if len(l) != 3 {
		return fmt.Errorf("%d outputs, want 3", len(l))
	}
	o, err := e.NewOut(l[0], out.Shape)
	if err != nil {
		return err
	}
	copy(o.V, out.V)
	e.Set(l[0], o)
	for i, vals := range [][]float64{a, b} {
		if _, _, err := e.Decl(l[1+i]); err != nil {
			continue
		}
		t, err := e.NewOut(l[1+i], statShape)
		if err != nil {
			return err
		}
		copy(t.V, vals)
		e.Set(l[1+i], t)
	}
	return nil
}

func layerNormRef(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("layer_norm: %d args", len(a))
	}
	x, ns, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	r := len(x.Shape)
	if len(ns) == 0 || len(ns) > r || !slices.Equal(ns, x.Shape[r-len(ns):]) {
		return fmt.Errorf("layer_norm: normalized_shape %v for %v", ns, x.Shape)
	}
	w, err := e.normOptIn(a[2])
	if err != nil {
		return err
	}
	b, err := e.normOptIn(a[3])
	if err != nil {
		return err
	}
	eps, err := e.Float(a[4])
	if err != nil {
		return err
	}
	n := 1
	for _, d := range ns {
		n *= int(d)
	}
	out := New(x.DType, x.Shape)
	rows := len(x.V) / n
	means, rstds := make([]float64, rows), make([]float64, rows)
	for row := 0; row < rows; row++ {
		v := x.V[row*n : (row+1)*n]
		m, vr := normStats(v)
		rs := 1 / math.Sqrt(vr+eps)
		means[row], rstds[row] = m, rs
		for i, xv := range v {
			y := (xv - m) * rs
			if w != nil {
				y *= w.V[i]
			}
			if b != nil {
				y += b.V[i]
			}
			out.V[row*n+i] = y
		}
	}
	statShape := slices.Clone(x.Shape)
	for i := r - len(ns); i < r; i++ {
		statShape[i] = 1
	}
	return e.normSetOuts(a[5], out, statShape, means, rstds)
}

func rmsNormRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("rms_norm: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	w, err := e.normOptIn(a[1])
	if err != nil {
		return err
	}
	eps, err := e.Float(a[2])
	if err != nil {
		return err
	}
	out, err := e.NewOut(a[3], x.Shape)
	if err != nil {
		return err
	}
	n := int(x.Shape[len(x.Shape)-1])
	for row := 0; row*n < len(x.V); row++ {
		v := x.V[row*n : (row+1)*n]
		ms := 0.0
		for _, xv := range v {
			ms += xv * xv
		}
		rs := 1 / math.Sqrt(ms/float64(n)+eps)
		for i, xv := range v {
			y := xv * rs
			if w != nil {
				y *= w.V[i]
			}
			out.V[row*n+i] = y
		}
	}
	e.Set(a[3], out)
	return nil
}

func groupNormRef(e *Env, a []int32) error {
	if len(a) != 9 {
		return fmt.Errorf("group_norm: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	w, err := e.normOptIn(a[1])
	if err != nil {
		return err
	}
	b, err := e.normOptIn(a[2])
	if err != nil {
		return err
	}
	var iv [4]int64
	for i := range iv {
		if iv[i], err = e.Int(a[3+i]); err != nil {
			return err
		}
	}
	nN, c, hw, g := int(iv[0]), int(iv[1]), int(iv[2]), int(iv[3])
	if nN*c*hw != len(x.V) || c%g != 0 {
		return fmt.Errorf("group_norm: N=%d C=%d HxW=%d group=%d for %v", nN, c, hw, g, x.Shape)
	}
	eps, err := e.Float(a[7])
	if err != nil {
		return err
	}
	out := New(x.DType, x.Shape)
	means, rstds := make([]float64, nN*g), make([]float64, nN*g)
	for n := 0; n < nN; n++ {
		for gi := 0; gi < g; gi++ {
			lo := (n*c + gi*(c/g)) * hw
			v := x.V[lo : lo+c/g*hw]
			m, vr := normStats(v)
			rs := 1 / math.Sqrt(vr+eps)
			means[n*g+gi], rstds[n*g+gi] = m, rs
			for i, xv := range v {
				ch := gi*(c/g) + i/hw
				y := (xv - m) * rs
				if w != nil {
					y *= w.V[ch]
				}
				if b != nil {
					y += b.V[ch]
				}
				out.V[lo+i] = y
			}
		}
	}
	return e.normSetOuts(a[8], out, []int64{int64(nN), int64(g)}, means, rstds)
}

func batchNormRef(e *Env, a []int32) error {
	if len(a) != 8 {
		return fmt.Errorf("batch_norm: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	var ts [4]*Tensor // weight, bias, running_mean, running_var
	for i := range ts {
		if ts[i], err = e.normOptIn(a[1+i]); err != nil {
			return err
		}
	}
	w, b, rm, rv := ts[0], ts[1], ts[2], ts[3]
	if rm == nil || rv == nil {
		return fmt.Errorf("batch_norm: running stats are required")
	}
	eps, err := e.Float(a[6])
	if err != nil {
		return err
	}
	c := int(x.Shape[1])
	inner := len(x.V) / max(int(x.Shape[0])*c, 1)
	out := New(x.DType, x.Shape)
	for i, xv := range x.V {
		ch := (i / inner) % c
		y := (xv - rm.V[ch]) / math.Sqrt(rv.V[ch]+eps)
		if w != nil {
			y *= w.V[ch]
		}
		if b != nil {
			y += b.V[ch]
		}
		out.V[i] = y
	}
	// torch on CPU returns empty save_mean / save_invstd; other devices
	// return running_mean and 1/sqrt(running_var + eps), and a graph that
	// declares them with C elements gets those.
	l, err := e.ValueList(a[7])
	if err != nil || len(l) != 3 {
		return fmt.Errorf("batch_norm: outputs")
	}
	statShape := []int64{0}
	full := true
	for _, id := range l[1:] {
		if _, d, err := e.Decl(id); err != nil || !slices.Equal(d, []int64{int64(c)}) {
			full = false
		}
	}
	var sm, si []float64
	if full {
		statShape = []int64{int64(c)}
		for ch := 0; ch < c; ch++ {
			sm = append(sm, rm.V[ch])
			si = append(si, 1/math.Sqrt(rv.V[ch]+eps))
		}
	}
	return e.normSetOuts(a[7], out, statShape, sm, si)
}

package reference

import (
	"fmt"
	"math"
)

// aten.convolution.default [input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups, out] and conv_with_clamp (the same
// plus output_min, output_max before out).
//
// Written as the textbook sums: a forward convolution gathers, for every
// output element, input[n, g·ICg+icl, oh·s-p+kh·d, ow·s-p+kw·d] ×
// weight[oc, icl, kh, kw]; a transposed one scatters every input element
// into out[n, g·OCg+ocl, ih·s-p+kh·d, iw·s-p+kw·d] with weight[ic, ocl, kh,
// kw]. 3-D inputs are conv1d. Sums are float64.
func init() {
	Register("aten.convolution.default", func(e *Env, a []int32) error { return convRef(e, a, false) })
	Register("et_vk.conv_with_clamp.default", func(e *Env, a []int32) error { return convRef(e, a, true) })
	Register("conv_with_clamp.default", func(e *Env, a []int32) error { return convRef(e, a, true) })
}

func spatialList(e *Env, id int32, n int) ([]int64, error) {
	l, err := e.IntList(id)
	if err != nil {
		return nil, err
	}
	if len(l) == 1 {
		for len(l) < n {
			l = append(l, l[0])
		}
	}
	if len(l) != n {
		return nil, fmt.Errorf("list %v for %d spatial dims", l, n)
	}
	return l, nil
}

func convRef(e *Env, a []int32, clamp bool) error {
	want := 10
	if clamp {
		want = 12
	}
	if len(a) != want {
		return fmt.Errorf("%d args, want %d", len(a), want)
	}
	x, w, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	sp := len(x.Shape) - 2
	if sp != 1 && sp != 2 || len(w.Shape) != len(x.Shape) {
		return fmt.Errorf("input %v, weight %v", x.Shape, w.Shape)
	}
	stride, err := spatialList(e, a[3], sp)
	if err != nil {
		return err
	}
	pad, err := spatialList(e, a[4], sp)
	if err != nil {
		return err
	}
	dil, err := spatialList(e, a[5], sp)
	if err != nil {
		return err
	}
	transposed, err := e.Bool(a[6])
	if err != nil {
		return err
	}
	outPad := make([]int64, sp)
	if transposed {
		if outPad, err = spatialList(e, a[7], sp); err != nil {
			return err
		}
	}
	groups, err := e.Int(a[8])
	if err != nil {
		return err
	}
	// Work in 2-D: a conv1d is a conv2d of height 1.
	xs, ws := x.Shape, w.Shape
	if sp == 1 {
		xs = []int64{xs[0], xs[1], 1, xs[2]}
		ws = []int64{ws[0], ws[1], 1, ws[2]}
		stride = []int64{1, stride[0]}
		pad = []int64{0, pad[0]}
		dil = []int64{1, dil[0]}
		outPad = []int64{0, outPad[0]}
	}
	n, ic, ih, iw := xs[0], xs[1], xs[2], xs[3]
	kh, kw := ws[2], ws[3]
	var oc, oh, ow int64
	if transposed {
		oc = ws[1] * groups
		oh = (ih-1)*stride[0] - 2*pad[0] + dil[0]*(kh-1) + outPad[0] + 1
		ow = (iw-1)*stride[1] - 2*pad[1] + dil[1]*(kw-1) + outPad[1] + 1
	} else {
		oc = ws[0]
		oh = (ih+2*pad[0]-dil[0]*(kh-1)-1)/stride[0] + 1
		ow = (iw+2*pad[1]-dil[1]*(kw-1)-1)/stride[1] + 1
	}
	icg, ocg := ic/groups, oc/groups
	shape := []int64{n, oc, oh, ow}
	if sp == 1 {
		shape = []int64{n, oc, ow}
	}
	outID := a[want-1]
	out, err := e.NewOut(outID, shape)
	if err != nil {
		return err
	}
	xat := func(b, c, y, xx int64) float64 { return x.V[((b*ic+c)*ih+y)*iw+xx] }
	wat := func(o, i, y, xx int64) float64 { return w.V[((o*ws[1]+i)*kh+y)*kw+xx] }
	oidx := func(b, c, y, xx int64) int64 { return ((b*oc+c)*oh+y)*ow + xx }
	if !transposed {
		for b := int64(0); b < n; b++ {
			for o := int64(0); o < oc; o++ {
				g := o / ocg
				for y := int64(0); y < oh; y++ {
					for xx := int64(0); xx < ow; xx++ {
						s := 0.0
						for i := int64(0); i < icg; i++ {
							for p := int64(0); p < kh; p++ {
								for q := int64(0); q < kw; q++ {
									iy := y*stride[0] - pad[0] + p*dil[0]
									ix := xx*stride[1] - pad[1] + q*dil[1]
									if iy < 0 || iy >= ih || ix < 0 || ix >= iw {
										continue
									}
									s += xat(b, g*icg+i, iy, ix) * wat(o, i, p, q)
								}
							}
						}
						out.V[oidx(b, o, y, xx)] = s
					}
				}
			}
		}
	} else {
		for b := int64(0); b < n; b++ {
			for c := int64(0); c < ic; c++ {
				g := c / icg
				for y := int64(0); y < ih; y++ {
					for xx := int64(0); xx < iw; xx++ {
						v := xat(b, c, y, xx)
						for o := int64(0); o < ocg; o++ {
							for p := int64(0); p < kh; p++ {
								for q := int64(0); q < kw; q++ {
									oy := y*stride[0] - pad[0] + p*dil[0]
									ox := xx*stride[1] - pad[1] + q*dil[1]
									if oy < 0 || oy >= oh || ox < 0 || ox >= ow {
										continue
									}
									out.V[oidx(b, g*ocg+o, oy, ox)] += v * wat(c, o, p, q)
								}
							}
						}
					}
				}
			}
		}
	}
	if !e.IsNull(a[2]) {
		bias, err := e.In(a[2])
		if err != nil {
			return err
		}
		for i := range out.V {
			out.V[i] += bias.V[(int64(i)/(oh*ow))%oc]
		}
	}
	if clamp {
		lo, hi := math.Inf(-1), math.Inf(1)
		if !e.IsNull(a[9]) {
			if lo, err = e.Float(a[9]); err != nil {
				return err
			}
		}
		if !e.IsNull(a[10]) {
			if hi, err = e.Float(a[10]); err != nil {
				return err
			}
		}
		for i, v := range out.V {
			if v < lo {
				v = lo
			}
			if v > hi {
				v = hi
			}
			out.V[i] = v
		}
	}
	e.Set(outID, out)
	return nil
}

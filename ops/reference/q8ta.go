package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Statically quantized int8 graphs (PT2E; quantized-format.md §12):
//
//	quantized_decomposed.quantize_per_tensor.default   [x, scale, zp, qmin, qmax, dtype, out]
//	quantized_decomposed.dequantize_per_tensor.default [q, scale, zp, qmin, qmax, dtype, out_dtype, out]
//	et_vk.linear_q8ta_q8csw.default [x, s_in, zp_in, w INT8 [N, K], w_sums, w_scales, bias|Null, out f32]
//	et_vk.q8ta_linear[_gemv].default [x, s_in, zp_in, w, w_sums, w_scales, s_out, zp_out, bias|Null, activation, out]
//	et_vk.q8ta_conv2d{,_pw,_dw}.default [x, s_in, zp_in, w, w_sums, w_scales, s_out, zp_out, bias|Null,
//	                                     kernel_size, stride, padding, dilation, groups, activation, out]
//	et_vk.q8ta_conv2d_transposed.default [… padding, output_padding, dilation, groups, activation, out]
//	et_vk.q8ta_add.default [a, b, s_a, zp_a, s_b, zp_b, s_out, zp_out, alpha, out] (broadcasting; alpha String/Null = 1)
//	et_vk.q8ta_relu.default [x, s_in, zp_in, s_out, zp_out, out]
//	et_vk.q8ta_pixel_shuffle.default [x, s_in, zp_in, inv_out, zp_out, r, out]
//
// Written from the formulas, not from the GPU kernels: the weights are
// unpacked from the exporter's layouts into torch's [OC, IC_pg, KH, KW]
// (or ConvTranspose2d's [IC, OC_pg, KH, KW]) order, the convolution is the
// textbook one (the transposed one in its scatter form), and the
// accumulator is Σ (xq − zp_in)·w over in-range taps, ignoring the
// exporter's weight sums. The float epilogue follows the fp32 operation
// order of quantized-format.md §12.4 with each step rounded to float32
// (f32), so that the int8 results can be compared exactly:
//
//	v = f32(f32(f32(acc)·s_in)·s_w[oc]) (+ bias[oc], rounded), relu after the bias,
//	q = clamp(roundHalfEven(f32(v·inv_out)) + zp_out, −128, 127), inv_out = f32(1/s_out).
func init() {
	Register("quantized_decomposed.quantize_per_tensor.default", quantizePerTensorRef)
	Register("quantized_decomposed.dequantize_per_tensor.default", dequantizePerTensorRef)
	Register("et_vk.linear_q8ta_q8csw.default", linearQ8taQ8cswRef)
	Register("et_vk.q8ta_linear.default", q8taLinearRef)
	Register("et_vk.q8ta_linear_gemv.default", q8taLinearRef)
	Register("et_vk.q8ta_conv2d.default", q8taConvRef(false, false))
	Register("et_vk.q8ta_conv2d_pw.default", q8taConvRef(false, false))
	Register("et_vk.q8ta_conv2d_dw.default", q8taConvRef(true, false))
	Register("et_vk.q8ta_conv2d_transposed.default", q8taConvRef(false, true))
	Register("et_vk.q8ta_add.default", q8taAddRef)
	Register("et_vk.q8ta_relu.default", q8taReluRef)
	Register("et_vk.q8ta_pixel_shuffle.default", q8taPixelShuffleRef)
}

// f32 rounds v to float32.
func f32(v float64) float64 { return float64(float32(v)) }

// quantize returns clamp(roundHalfEven(f32(v·inv)) + zp, lo, hi).
func quantize(v, inv float64, zp, lo, hi int64) float64 {
	q := math.RoundToEven(f32(v*inv)) + float64(zp)
	return math.Max(float64(lo), math.Min(float64(hi), q))
}

// invScale is f32(1/scale), the reciprocal the quantizers multiply by.
func invScale(s float64) float64 { return f32(1 / s) }

// qparams reads a (scale, zero point) pair of Double/Int values.
func (e *Env) qparams(sID, zID int32) (float64, int64, error) {
	s, err := e.Float(sID)
	if err != nil {
		return 0, 0, err
	}
	z, err := e.Int(zID)
	if err != nil {
		return 0, 0, err
	}
	return s, z, nil
}

func quantizePerTensorRef(e *Env, a []int32) error {
	if len(a) != 7 {
		return fmt.Errorf("quantize_per_tensor: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	s, zp, err := e.qparams(a[1], a[2])
	if err != nil {
		return err
	}
	lo, hi, err := e.qrange(a[3], a[4])
	if err != nil {
		return err
	}
	out, err := e.NewOut(a[6], x.Shape)
	if err != nil {
		return err
	}
	inv := invScale(s)
	for i, v := range x.V {
		out.V[i] = quantize(v, inv, zp, lo, hi)
	}
	e.Set(a[6], out)
	return nil
}

// qrange reads quant_min and quant_max.
func (e *Env) qrange(loID, hiID int32) (int64, int64, error) {
	lo, err := e.Int(loID)
	if err != nil {
		return 0, 0, err
	}
	hi, err := e.Int(hiID)
	if err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

func dequantizePerTensorRef(e *Env, a []int32) error {
	if len(a) != 8 {
		return fmt.Errorf("dequantize_per_tensor: %d args", len(a))
	}
	q, err := e.In(a[0])
	if err != nil {
		return err
	}
	s, zp, err := e.qparams(a[1], a[2])
	if err != nil {
		return err
	}
	out, err := e.NewOut(a[7], q.Shape)
	if err != nil {
		return err
	}
	sf := f32(s)
	for i, v := range q.V {
		out.V[i] = f32((v - float64(zp)) * sf)
	}
	e.Set(a[7], out)
	return nil
}

// epilogue is the fp32 requantization of an int32 accumulator.
type epilogue struct {
	sIn, invOut float64
	zpOut       int64
	scales      []float64
	bias        []float64 // nil: no bias
	relu        bool
	float       bool // fp32 output (linear_q8ta_q8csw): no requantization
}

func (ep *epilogue) apply(acc int64, oc int64) float64 {
	v := f32(f32(float64(acc)) * ep.sIn)
	v = f32(v * ep.scales[oc])
	if ep.bias != nil {
		v = f32(v + ep.bias[oc])
	}
	if ep.relu {
		v = math.Max(v, 0)
	}
	if ep.float {
		return v
	}
	return quantize(v, ep.invOut, ep.zpOut, -128, 127)
}

// readEpilogue reads the weight scales and bias (at least n of each) and,
// unless float, the output qparams and activation at sOut, zOut, act.
func (e *Env) readEpilogue(sIn float64, scID, biasID int32, n int64, float bool, sOut, zOut, act int32) (*epilogue, error) {
	sc, err := e.In(scID)
	if err != nil {
		return nil, err
	}
	if sc.Numel() < n {
		return nil, fmt.Errorf("%d weight scales for %d channels", sc.Numel(), n)
	}
	ep := &epilogue{sIn: f32(sIn), scales: sc.V, float: float}
	if !e.IsNull(biasID) {
		b, err := e.In(biasID)
		if err != nil {
			return nil, err
		}
		if b.Numel() < n {
			return nil, fmt.Errorf("%d biases for %d channels", b.Numel(), n)
		}
		ep.bias = b.V
	}
	if float {
		return ep, nil
	}
	so, zo, err := e.qparams(sOut, zOut)
	if err != nil {
		return nil, err
	}
	ep.invOut, ep.zpOut = invScale(so), zo
	s, err := e.String(act)
	if err != nil {
		return nil, err
	}
	switch s {
	case "none":
	case "relu":
		ep.relu = true
	default:
		return nil, fmt.Errorf("activation %q", s)
	}
	return ep, nil
}

// q8Linear is out[m, n] = epilogue(Σ_k (xq[m,k] − zp)·w[n,k]); a float x
// is first quantized with (s_in, zp_in) to [-128, 127].
func q8Linear(e *Env, a []int32, x *Tensor, sIn float64, zp int64, ep *epilogue, outID int32) error {
	w, err := e.In(a[3])
	if err != nil {
		return err
	}
	k := x.Shape[len(x.Shape)-1]
	if len(w.Shape) != 2 || w.Shape[1] < k {
		return fmt.Errorf("weights %v for K %d", w.Shape, k)
	}
	n, ld := w.Shape[0], w.Shape[1]
	m := x.Numel() / max(k, 1)
	xq := x.V
	if x.DType == serialization.Float32 {
		inv := invScale(sIn)
		xq = make([]float64, len(x.V))
		for i, v := range x.V {
			xq[i] = quantize(v, inv, zp, -128, 127)
		}
	}
	out, err := e.newLinearOut(outID, x, m, n)
	if err != nil {
		return err
	}
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			var acc int64
			for p := int64(0); p < k; p++ {
				acc += (int64(xq[i*k+p]) - zp) * int64(w.V[j*ld+p])
			}
			out.V[i*n+j] = ep.apply(acc, j)
		}
	}
	e.Set(outID, out)
	return nil
}

func linearQ8taQ8cswRef(e *Env, a []int32) error {
	if len(a) != 8 {
		return fmt.Errorf("linear_q8ta_q8csw: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	sIn, zp, err := e.qparams(a[1], a[2])
	if err != nil {
		return err
	}
	w, err := e.In(a[3])
	if err != nil {
		return err
	}
	ep, err := e.readEpilogue(sIn, a[5], a[6], w.Shape[0], true, -1, -1, -1)
	if err != nil {
		return err
	}
	return q8Linear(e, a, x, sIn, zp, ep, a[7])
}

func q8taLinearRef(e *Env, a []int32) error {
	if len(a) != 11 {
		return fmt.Errorf("q8ta_linear: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	sIn, zp, err := e.qparams(a[1], a[2])
	if err != nil {
		return err
	}
	w, err := e.In(a[3])
	if err != nil {
		return err
	}
	ep, err := e.readEpilogue(sIn, a[5], a[8], w.Shape[0], false, a[6], a[7], a[9])
	if err != nil {
		return err
	}
	return q8Linear(e, a, x, sIn, zp, ep, a[10])
}

// q8taConvRef returns the reference of the q8ta convolutions: dw reads the
// [KH, KW, C] depthwise layout, transposed the ConvTranspose2d one.
func q8taConvRef(dw, transposed bool) Func {
	return func(e *Env, a []int32) error {
		want := 16
		if transposed {
			want = 17
		}
		if len(a) != want {
			return fmt.Errorf("q8ta conv: %d args", len(a))
		}
		x, err := e.In(a[0])
		if err != nil {
			return err
		}
		if len(x.Shape) != 4 {
			return fmt.Errorf("q8ta conv: input %v", x.Shape)
		}
		sIn, zp, err := e.qparams(a[1], a[2])
		if err != nil {
			return err
		}
		w, err := e.In(a[3])
		if err != nil {
			return err
		}
		ks, err := e.IntList(a[9])
		if err != nil {
			return err
		}
		var lists [4][]int64 // stride, padding, output_padding, dilation
		ids := []int32{a[10], a[11], -1, a[12]}
		gi, act := a[13], a[14]
		if transposed {
			ids = []int32{a[10], a[11], a[12], a[13]}
			gi, act = a[14], a[15]
		}
		for i, id := range ids {
			if id < 0 {
				lists[i] = []int64{0, 0}
				continue
			}
			if lists[i], err = e.IntList(id); err != nil {
				return err
			}
		}
		stride, pad, opad, dil := lists[0], lists[1], lists[2], lists[3]
		groups, err := e.Int(gi)
		if err != nil {
			return err
		}
		n, ic, h, wd := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		kh, kw := ks[0], ks[1]
		icPG := ic / groups
		outID := a[len(a)-1]
		_, decl, err := e.Decl(outID)
		if err != nil {
			return err
		}
		oc := decl[1]
		if dw {
			oc = ic
		}
		ocPG := oc / groups
		ep, err := e.readEpilogue(sIn, a[5], a[8], oc, false, a[6], a[7], act)
		if err != nil {
			return err
		}
		// wt[o][i][y][x]: torch's [OC, IC_pg, KH, KW] (transposed: the
		// weight of output channel o from input i of its group).
		wt := make([]int64, oc*icPG*kh*kw)
		for o := int64(0); o < oc; o++ {
			for i := int64(0); i < icPG; i++ {
				for y := int64(0); y < kh; y++ {
					for xx := int64(0); xx < kw; xx++ {
						var idx int64
						if dw {
							idx = (y*kw+xx)*w.Shape[2] + o
						} else {
							idx = o*w.Shape[1] + (y*kw+xx)*icPG + i
						}
						wt[((o*icPG+i)*kh+y)*kw+xx] = int64(w.V[idx])
					}
				}
			}
		}
		var oh, ow int64
		if transposed {
			oh = (h-1)*stride[0] - 2*pad[0] + dil[0]*(kh-1) + opad[0] + 1
			ow = (wd-1)*stride[1] - 2*pad[1] + dil[1]*(kw-1) + opad[1] + 1
		} else {
			oh = (h+2*pad[0]-dil[0]*(kh-1)-1)/stride[0] + 1
			ow = (wd+2*pad[1]-dil[1]*(kw-1)-1)/stride[1] + 1
		}
		out, err := e.NewOut(outID, []int64{n, oc, oh, ow})
		if err != nil {
			return err
		}
		acc := make([]int64, n*oc*oh*ow)
		xv := func(b, c, y, xx int64) int64 { return int64(x.V[((b*ic+c)*h+y)*wd+xx]) - zp }
		for b := int64(0); b < n; b++ {
			for o := int64(0); o < oc; o++ {
				g := o / ocPG
				for i := int64(0); i < icPG; i++ {
					c := g*icPG + i
					for y := int64(0); y < kh; y++ {
						for xx := int64(0); xx < kw; xx++ {
							wv := wt[((o*icPG+i)*kh+y)*kw+xx]
							if transposed {
								// Scatter every input pixel through this tap.
								for iy := int64(0); iy < h; iy++ {
									py := iy*stride[0] - pad[0] + y*dil[0]
									if py < 0 || py >= oh {
										continue
									}
									for ix := int64(0); ix < wd; ix++ {
										px := ix*stride[1] - pad[1] + xx*dil[1]
										if px < 0 || px >= ow {
											continue
										}
										acc[((b*oc+o)*oh+py)*ow+px] += xv(b, c, iy, ix) * wv
									}
								}
								continue
							}
							for py := int64(0); py < oh; py++ {
								iy := py*stride[0] - pad[0] + y*dil[0]
								if iy < 0 || iy >= h {
									continue
								}
								for px := int64(0); px < ow; px++ {
									ix := px*stride[1] - pad[1] + xx*dil[1]
									if ix < 0 || ix >= wd {
										continue
									}
									acc[((b*oc+o)*oh+py)*ow+px] += xv(b, c, iy, ix) * wv
								}
							}
						}
					}
				}
			}
		}
		for i, v := range acc {
			out.V[i] = ep.apply(v, int64(i)/(oh*ow)%oc)
		}
		e.Set(outID, out)
		return nil
	}
}

func q8taAddRef(e *Env, a []int32) error {
	if len(a) != 10 {
		return fmt.Errorf("q8ta_add: %d args", len(a))
	}
	x, y, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	sa, za, err := e.qparams(a[2], a[3])
	if err != nil {
		return err
	}
	sb, zb, err := e.qparams(a[4], a[5])
	if err != nil {
		return err
	}
	so, zo, err := e.qparams(a[6], a[7])
	if err != nil {
		return err
	}
	// alpha: Double or Int; a String or Null stands for 1.
	alpha := 1.0
	if e.Kind(a[8]) != serialization.KindString && !e.IsNull(a[8]) {
		if alpha, err = e.Float(a[8]); err != nil {
			return err
		}
	}
	shape, ok := broadcastShapes(x.Shape, y.Shape)
	if !ok {
		return fmt.Errorf("q8ta_add: shapes %v and %v do not broadcast", x.Shape, y.Shape)
	}
	out, err := e.NewOut(a[9], shape)
	if err != nil {
		return err
	}
	ia, ib := broadcastIndex(x.Shape, shape), broadcastIndex(y.Shape, shape)
	inv := invScale(so)
	for i := range out.V {
		fa := f32((x.V[ia(i)] - float64(za)) * f32(sa))
		fb := f32((y.V[ib(i)] - float64(zb)) * f32(sb))
		v := f32(fa + f32(f32(alpha)*fb))
		out.V[i] = quantize(v, inv, zo, -128, 127)
	}
	e.Set(a[9], out)
	return nil
}

func q8taReluRef(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("q8ta_relu: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	si, zi, err := e.qparams(a[1], a[2])
	if err != nil {
		return err
	}
	so, zo, err := e.qparams(a[3], a[4])
	if err != nil {
		return err
	}
	out, err := e.NewOut(a[5], x.Shape)
	if err != nil {
		return err
	}
	inv := invScale(so)
	for i, v := range x.V {
		out.V[i] = quantize(math.Max(f32((v-float64(zi))*f32(si)), 0), inv, zo, -128, 127)
	}
	e.Set(a[5], out)
	return nil
}

// q8taPixelShuffleRef: out[n, c, h·r+i, w·r+j] = requant(in[n, c·r²+i·r+j, h, w]),
// requant(q) = clamp(roundHalfEven(f32(f32((q − zp_in)·s_in)·inv_out)) + zp_out), arg 3
// being the multiplier inv_out itself.
func q8taPixelShuffleRef(e *Env, a []int32) error {
	if len(a) != 7 {
		return fmt.Errorf("q8ta_pixel_shuffle: %d args", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	si, zi, err := e.qparams(a[1], a[2])
	if err != nil {
		return err
	}
	inv, zo, err := e.qparams(a[3], a[4])
	if err != nil {
		return err
	}
	r, err := e.Int(a[5])
	if err != nil {
		return err
	}
	rk := len(x.Shape)
	if rk < 3 || r <= 0 || x.Shape[rk-3]%(r*r) != 0 {
		return fmt.Errorf("q8ta_pixel_shuffle: input %v, r %d", x.Shape, r)
	}
	c, h, w := x.Shape[rk-3]/(r*r), x.Shape[rk-2], x.Shape[rk-1]
	shape := append(append([]int64(nil), x.Shape[:rk-3]...), c, h*r, w*r)
	out, err := e.NewOut(a[6], shape)
	if err != nil {
		return err
	}
	outer := x.Numel() / (c * r * r * h * w)
	for o := int64(0); o < outer; o++ {
		for ci := int64(0); ci < c; ci++ {
			for y := int64(0); y < h*r; y++ {
				for xx := int64(0); xx < w*r; xx++ {
					src := (((o*c+ci)*r*r+(y%r)*r+xx%r)*h+y/r)*w + xx/r
					v := f32((x.V[src] - float64(zi)) * f32(si))
					out.V[((o*c+ci)*h*r+y)*w*r+xx] = quantize(v, f32(inv), zo, -128, 127)
				}
			}
		}
	}
	e.Set(a[6], out)
	return nil
}

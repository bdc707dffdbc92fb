package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten.upsample_nearest2d.vec [input, output_size, scale_factors, out],
// aten.upsample_bilinear2d.vec [input, output_size, align_corners,
// scale_factors, out], aten.pixel_shuffle.default [self, upscale_factor,
// out], aten.constant_pad_nd.default [self, pad, value, out],
// aten.grid_sampler_2d.default [input, grid, interpolation_mode,
// padding_mode, align_corners, out] and et_vk.grid_priors.default [self,
// stride, offset, out].
//
// Upsampling source indices are computed as torch's CPU kernels compute
// them, in float32 (a float64 ratio would pick different pixels for
// nearest); the blends themselves are float64. grid_sampler follows
// torch's grid_sampler_2d: unnormalize, clip for border, then nearest
// (round half to even) or a four-corner bilinear blend with zeros outside.
func init() {
	Register("aten.upsample_nearest2d.vec", func(e *Env, a []int32) error { return upsampleRef(e, a, false) })
	Register("aten.upsample_bilinear2d.vec", func(e *Env, a []int32) error { return upsampleRef(e, a, true) })
	Register("aten.pixel_shuffle.default", pixelShuffleRef)
	Register("aten.constant_pad_nd.default", constantPadRef)
	Register("aten.grid_sampler_2d.default", gridSamplerRef)
	Register("et_vk.grid_priors.default", gridPriorsRef)
}

func upsampleRef(e *Env, a []int32, bilinear bool) error {
	n, scaleArg := 4, 2
	if bilinear {
		n, scaleArg = 5, 3
	}
	if len(a) != n {
		return fmt.Errorf("%d args, want %d", len(a), n)
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	if len(x.Shape) != 4 {
		return fmt.Errorf("input shape %v", x.Shape)
	}
	align := false
	if bilinear {
		if align, err = e.Bool(a[2]); err != nil {
			return err
		}
	}
	in := x.Shape[2:]
	var size []int64
	var scales []float64
	if !e.IsNull(a[1]) {
		if size, err = e.IntList(a[1]); err != nil {
			return err
		}
	}
	if !e.IsNull(a[scaleArg]) {
		if scales, err = e.DoubleList(a[scaleArg]); err != nil {
			return err
		}
		size = []int64{int64(math.Floor(float64(in[0]) * scales[0])), int64(math.Floor(float64(in[1]) * scales[1]))}
	}
	out, err := e.NewOut(a[n-1], []int64{x.Shape[0], x.Shape[1], size[0], size[1]})
	if err != nil {
		return err
	}
	// ratio is torch's float32 compute_scales_value.
	ratio := func(d int) float32 {
		if scales != nil && scales[d] > 0 {
			return float32(1 / scales[d])
		}
		return float32(in[d]) / float32(size[d])
	}
	nearest := func(d int, o int64) int64 {
		if size[d] == in[d] {
			return o
		}
		if size[d] == 2*in[d] {
			return o / 2
		}
		s := float32(float32(o) * ratio(d))
		return min(int64(math.Floor(float64(s))), in[d]-1)
	}
	// linear returns the two source indices and their weights.
	linear := func(d int, o int64) (int64, int64, float64, float64) {
		if size[d] == in[d] {
			return o, o, 1, 0
		}
		var src float32
		if align {
			r := float32(0)
			if size[d] > 1 {
				r = float32(in[d]-1) / float32(size[d]-1)
			}
			src = r * float32(o)
		} else {
			src = ratio(d)*(float32(o)+0.5) - 0.5
			if src < 0 {
				src = 0
			}
		}
		i0 := min(int64(math.Floor(float64(src))), in[d]-1)
		l1 := math.Min(math.Max(float64(src)-float64(i0), 0), 1)
		i1 := i0
		if i0 < in[d]-1 {
			i1++
		}
		return i0, i1, 1 - l1, l1
	}
	planes := x.Shape[0] * x.Shape[1]
	for p := int64(0); p < planes; p++ {
		src := x.V[p*in[0]*in[1] : (p+1)*in[0]*in[1]]
		for oy := int64(0); oy < size[0]; oy++ {
			for ox := int64(0); ox < size[1]; ox++ {
				o := (p*size[0]+oy)*size[1] + ox
				if !bilinear {
					out.V[o] = src[nearest(0, oy)*in[1]+nearest(1, ox)]
					continue
				}
				y0, y1, wy0, wy1 := linear(0, oy)
				x0, x1, wx0, wx1 := linear(1, ox)
				out.V[o] = wy0*(wx0*src[y0*in[1]+x0]+wx1*src[y0*in[1]+x1]) +
					wy1*(wx0*src[y1*in[1]+x0]+wx1*src[y1*in[1]+x1])
			}
		}
	}
	e.Set(a[n-1], out)
	return nil
}

func pixelShuffleRef(e *Env, a []int32) error {
	if len(a) != 3 {
		return fmt.Errorf("%d args, want 3", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	r, err := e.Int(a[1])
	if err != nil {
		return err
	}
	rk := len(x.Shape)
	if rk < 3 {
		return fmt.Errorf("shape %v", x.Shape)
	}
	c, h, w := x.Shape[rk-3], x.Shape[rk-2], x.Shape[rk-1]
	oc := c / (r * r)
	shape := append(append([]int64(nil), x.Shape[:rk-3]...), oc, h*r, w*r)
	out, err := e.NewOut(a[2], shape)
	if err != nil {
		return err
	}
	outer := x.Numel() / (c * h * w)
	for b := int64(0); b < outer; b++ {
		for ci := int64(0); ci < c; ci++ {
			k, i, j := ci/(r*r), (ci%(r*r))/r, ci%r
			for y := int64(0); y < h; y++ {
				for xx := int64(0); xx < w; xx++ {
					out.V[((b*oc+k)*h*r+y*r+i)*w*r+xx*r+j] = x.V[((b*c+ci)*h+y)*w+xx]
				}
			}
		}
	}
	e.Set(a[2], out)
	return nil
}

func constantPadRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("%d args, want 4", len(a))
	}
	x, pad, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	value, err := e.Float(a[2])
	if err != nil {
		return err
	}
	if !isFloat(x.DType) && x.DType != serialization.Bool {
		value = math.Trunc(value) // torch's fill_ on an integer tensor
	}
	rk := len(x.Shape)
	if len(pad)%2 != 0 || len(pad) > 2*rk {
		return fmt.Errorf("pad %v for rank %d", pad, rk)
	}
	before := make([]int64, rk)
	shape := append([]int64(nil), x.Shape...)
	for i := 0; i+1 < len(pad); i += 2 {
		d := rk - 1 - i/2
		before[d] = pad[i]
		shape[d] += pad[i] + pad[i+1]
	}
	out, err := e.NewOut(a[3], shape)
	if err != nil {
		return err
	}
	coord := make([]int64, rk)
	for o := range out.V {
		rest := int64(o)
		for d := rk - 1; d >= 0; d-- {
			coord[d] = rest % shape[d]
			rest /= shape[d]
		}
		src, inside := int64(0), true
		for d := 0; d < rk; d++ {
			c := coord[d] - before[d]
			if c < 0 || c >= x.Shape[d] {
				inside = false
				break
			}
			src = src*x.Shape[d] + c
		}
		if inside {
			out.V[o] = x.V[src]
		} else {
			out.V[o] = value
		}
	}
	e.Set(a[3], out)
	return nil
}

func gridSamplerRef(e *Env, a []int32) error {
	if len(a) != 6 {
		return fmt.Errorf("%d args, want 6", len(a))
	}
	x, g, err := e.in2(a[0], a[1])
	if err != nil {
		return err
	}
	mode, err := e.Int(a[2])
	if err != nil {
		return err
	}
	padMode, err := e.Int(a[3])
	if err != nil {
		return err
	}
	align, err := e.Bool(a[4])
	if err != nil {
		return err
	}
	if mode > 1 || padMode > 1 {
		return fmt.Errorf("modes %d/%d unsupported", mode, padMode)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	Ho, Wo := g.Shape[1], g.Shape[2]
	out, err := e.NewOut(a[5], []int64{N, C, Ho, Wo})
	if err != nil {
		return err
	}
	coord := func(v float64, size int64) float64 {
		if align {
			v = (v + 1) * float64(size-1) / 2
		} else {
			v = (v+1)*float64(size)/2 - 0.5
		}
		if padMode == 1 {
			v = math.Min(float64(size-1), math.Max(v, 0))
		}
		return v
	}
	for n := int64(0); n < N; n++ {
		for c := int64(0); c < C; c++ {
			plane := x.V[(n*C+c)*H*W : (n*C+c+1)*H*W]
			pix := func(y, xx float64) float64 {
				if y < 0 || xx < 0 || y >= float64(H) || xx >= float64(W) {
					return 0
				}
				return plane[int64(y)*W+int64(xx)]
			}
			for i := int64(0); i < Ho*Wo; i++ {
				gi := (n*Ho*Wo + i) * 2
				ix, iy := coord(g.V[gi], W), coord(g.V[gi+1], H)
				var v float64
				if mode == 1 {
					v = pix(math.RoundToEven(iy), math.RoundToEven(ix))
				} else {
					x0, y0 := math.Floor(ix), math.Floor(iy)
					x1, y1 := x0+1, y0+1
					v = pix(y0, x0)*(x1-ix)*(y1-iy) + pix(y0, x1)*(ix-x0)*(y1-iy) +
						pix(y1, x0)*(x1-ix)*(iy-y0) + pix(y1, x1)*(ix-x0)*(iy-y0)
				}
				out.V[(n*C+c)*Ho*Wo+i] = v
			}
		}
	}
	e.Set(a[5], out)
	return nil
}

func gridPriorsRef(e *Env, a []int32) error {
	if len(a) != 4 {
		return fmt.Errorf("%d args, want 4", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	shape := x.Shape
	stride, err := e.Int(a[1])
	if err != nil {
		return err
	}
	offset, err := e.Float(a[2])
	if err != nil {
		return err
	}
	h, w := shape[len(shape)-2], shape[len(shape)-1]
	out, err := e.NewOut(a[3], []int64{h * w, 2})
	if err != nil {
		return err
	}
	if !isFloat(out.DType) {
		return fmt.Errorf("out is %v", out.DType)
	}
	for y := int64(0); y < h; y++ {
		for xx := int64(0); xx < w; xx++ {
			out.V[(y*w+xx)*2] = (float64(xx) + offset) * float64(stride)
			out.V[(y*w+xx)*2+1] = (float64(y) + offset) * float64(stride)
		}
	}
	e.Set(a[3], out)
	return nil
}

package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// oneOpCase builds a case with one input x (random in [lo, hi)), a list of
// argument builders between x and out, and out of outShape.
func oneOpCase(name, op string, dt serialization.DataType, in, outShape []int64, lo, hi float64,
	args func(b *serialization.Builder) []int32) Case {
	return Case{
		Name: name,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(dt, Dims(in), -1)
			b.Inputs(x)
			odt := dt
			if op == "et_vk.grid_priors.default" {
				odt = serialization.Float32 // whatever self's dtype
			}
			out := b.Tensor(odt, Dims(outShape), -1)
			b.Op(op, append(append([]int32{x}, args(b)...), out)...)
			b.Outputs(out)
			// 1-byte types take their whole range.
			switch dt {
			case serialization.Uint8:
				lo, hi = 0, 256
			case serialization.Int8:
				lo, hi = -128, 128
			case serialization.Bool:
				lo, hi = 0, 2
			}
			return []*reference.Tensor{RandTensor(r, dt, in, lo, hi)}
		},
	}
}

// upsampleCase is one upsample_nearest2d / upsample_bilinear2d graph;
// exactly one of size and scales is set.
func upsampleCase(bilinear, align bool, in, size []int64, scales []float64) Case {
	out := []int64{in[0], in[1], 0, 0}
	for i := 0; i < 2; i++ {
		if size != nil {
			out[2+i] = size[i]
		} else {
			out[2+i] = int64(math.Floor(float64(in[2+i]) * scales[i]))
		}
	}
	op, kind := "aten.upsample_nearest2d.vec", "nearest"
	if bilinear {
		op, kind = "aten.upsample_bilinear2d.vec", fmt.Sprintf("bilinear/align%v", align)
	}
	name := fmt.Sprintf("spatial/upsample_%s/%s_size%v_scales%v", kind, shapeName(in), size, scales)
	return oneOpCase(name, op, serialization.Float32, in, out, -2, 2, func(b *serialization.Builder) []int32 {
		sz, sc := b.Null(), b.Null()
		if size != nil {
			sz = b.IntList(size...)
		}
		if scales != nil {
			sc = b.DoubleList(scales...)
		}
		if bilinear {
			return []int32{sz, b.Bool(align), sc}
		}
		return []int32{sz, sc}
	})
}

func padCase(dt serialization.DataType, in, pad []int64, value float64) Case {
	out := append([]int64(nil), in...)
	for i := 0; i+1 < len(pad); i += 2 {
		out[len(in)-1-i/2] += pad[i] + pad[i+1]
	}
	name := fmt.Sprintf("spatial/constant_pad_nd/%v/%s_pad%v_v%v", dt, shapeName(in), pad, value)
	return oneOpCase(name, "aten.constant_pad_nd.default", dt, in, out, -100, 100, func(b *serialization.Builder) []int32 {
		return []int32{b.IntList(pad...), b.Double(value)}
	})
}

func pixelShuffleCase(dt serialization.DataType, in []int64, r int64) Case {
	rk := len(in)
	out := append(append([]int64(nil), in[:rk-3]...), in[rk-3]/(r*r), in[rk-2]*r, in[rk-1]*r)
	name := fmt.Sprintf("spatial/pixel_shuffle/%v/%s_r%d", dt, shapeName(in), r)
	return oneOpCase(name, "aten.pixel_shuffle.default", dt, in, out, -1000, 1000, func(b *serialization.Builder) []int32 {
		return []int32{b.Int(r)}
	})
}

func gridSampleCase(in []int64, ho, wo int64, mode, padMode int64, align bool) Case {
	name := fmt.Sprintf("spatial/grid_sampler_2d/%s_to%dx%d/mode%d_pad%d_align%v", shapeName(in), ho, wo, mode, padMode, align)
	return Case{
		Name: name,
		Tol:  Tolerance{Abs: 1e-5, Rel: 1e-4},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			gshape := []int64{in[0], ho, wo, 2}
			x := b.Tensor(f, Dims(in), -1)
			g := b.Tensor(f, Dims(gshape), -1)
			b.Inputs(x, g)
			out := b.Tensor(f, Dims([]int64{in[0], in[1], ho, wo}), -1)
			b.Op("aten.grid_sampler_2d.default", x, g, b.Int(mode), b.Int(padMode), b.Bool(align), out)
			b.Outputs(out)
			// Grid points reach past [-1, 1] so the padding modes matter.
			return []*reference.Tensor{RandTensor(r, f, in, -2, 2), RandTensor(r, f, gshape, -1.25, 1.25)}
		},
	}
}

func init() {
	l := func(v ...int64) []int64 { return v }
	d := func(v ...float64) []float64 { return v }
	f, i32 := serialization.Float32, serialization.Int32
	u8, i8, bl := serialization.Uint8, serialization.Int8, serialization.Bool
	for _, bil := range []bool{false, true} {
		for _, align := range []bool{false, true} {
			if !bil && align {
				continue
			}
			Cases = append(Cases,
				upsampleCase(bil, align, l(1, 2, 3, 4), l(7, 5), nil),
				upsampleCase(bil, align, l(2, 3, 5, 7), l(2, 3), nil),
				upsampleCase(bil, align, l(1, 1, 4, 4), l(1, 1), nil),
				upsampleCase(bil, align, l(1, 2, 5, 6), l(5, 13), nil),
				upsampleCase(bil, align, l(2, 2, 3, 5), nil, d(2, 2)),
				upsampleCase(bil, align, l(1, 3, 6, 7), nil, d(1.5, 0.75)),
				upsampleCase(bil, align, l(1, 1, 5, 3), nil, d(3, 1.7)),
				upsampleCase(bil, align, l(1, 2, 7, 4), nil, d(1, 2.5)),
				// 1/1.7 and 5/8 pick different source pixels.
				upsampleCase(bil, align, l(1, 1, 4, 5), nil, d(1.3, 1.7)),
			)
		}
	}
	// 2048·2060 outputs need more than 65535 workgroups of 64: a 2-D grid.
	Cases = append(Cases, upsampleCase(false, false, l(1, 1, 1024, 1030), nil, d(2, 2)))

	Cases = append(Cases,
		pixelShuffleCase(f, l(1, 8, 3, 5), 2),
		pixelShuffleCase(f, l(2, 18, 2, 3), 3),
		pixelShuffleCase(f, l(2, 1, 4, 3, 3), 2),
		pixelShuffleCase(f, l(4, 3, 5), 2),
		pixelShuffleCase(f, l(1, 3, 2, 2), 1),
		pixelShuffleCase(i32, l(1, 9, 2, 3), 3),
		// 1-byte elements: 4 per word; 45 and 75 elements end mid-word.
		pixelShuffleCase(u8, l(1, 9, 1, 5), 3),
		pixelShuffleCase(i8, l(3, 4, 5, 1), 2),
		pixelShuffleCase(bl, l(1, 4, 3, 5), 2),
	)
	Cases = append(Cases,
		padCase(f, l(2, 3, 5, 7), l(1, 2), 0),
		padCase(f, l(2, 3, 5, 7), l(1, 1, 2, 0), 1.5),
		padCase(f, l(1, 3, 6, 7), l(-1, 2, 0, -2), -3.25),
		padCase(f, l(1, 3, 6, 7), l(-1, -2, -3, -1, 1, 0), 0.5),
		padCase(f, l(13), l(3, 4), math.Inf(-1)),
		padCase(f, l(2, 1, 3, 2, 3), l(1, 0, 0, 1, 1, 1, 2, 0, 0, 1), 2),
		padCase(f, l(), l(), 0),
		padCase(f, l(3, 4), l(-4, 0), 1),
		padCase(f, l(3, 4), l(), 1),
		padCase(i32, l(3, 5), l(2, -1, 1, 1), 7),
		padCase(i32, l(2, 3), l(1, 1), -2.75),
		padCase(u8, l(3, 5), l(1, 2, -1, 1), 200.9),
		padCase(i8, l(2, 3, 3), l(-1, 2, 1, 0), -128),
		padCase(i8, l(7), l(0, 2), -3.5),
		padCase(bl, l(3, 3), l(1, 0, 0, 1), 1),
		padCase(bl, l(2, 5), l(-2, 1), 0),
	)
	for _, mode := range []int64{0, 1} {
		for _, padMode := range []int64{0, 1} {
			for _, align := range []bool{false, true} {
				Cases = append(Cases, gridSampleCase(l(2, 3, 7, 9), 5, 6, mode, padMode, align))
			}
		}
	}
	Cases = append(Cases, gridSampleCase(l(1, 2, 1, 1), 3, 2, 0, 1, false))
	// Nearest at exact half-pixel ties: torch rounds half to even. With
	// align_corners false and size 4, g = -0.5, 0, 0.5 land on 0.5, 1.5, 2.5
	// (→ 0, 2, 2); with align_corners true and size 6, g = 0 lands on 2.5
	// (→ 2).
	for _, align := range []bool{false, true} {
		n := map[bool]int64{false: 4, true: 6}[align]
		c := gridSampleCase(l(1, 1, n, n), 3, 3, 1, 0, align)
		c.Name += "/ties"
		build := c.Build
		c.Build = func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			in := build(b, r)
			vals := []float64{-0.5, 0, 0.5}
			for i := range in[1].V {
				in[1].V[i] = vals[(i/2+i%2)%3]
			}
			return in
		}
		Cases = append(Cases, c)
	}
	for _, c := range []struct {
		in     []int64
		stride int64
		offset float64
	}{{l(1, 3, 7, 5), 8, 0.5}, {l(4, 6), 16, 0}, {l(2, 1, 1, 13), 32, 0.25}} {
		name := fmt.Sprintf("spatial/grid_priors/%s_s%d_o%v", shapeName(c.in), c.stride, c.offset)
		Cases = append(Cases, oneOpCase(name, "et_vk.grid_priors.default", f, c.in,
			l(c.in[len(c.in)-2]*c.in[len(c.in)-1], 2), -1, 1, func(b *serialization.Builder) []int32 {
				return []int32{b.Int(c.stride), b.Double(c.offset)}
			}))
	}
}

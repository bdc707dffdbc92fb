package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// convCase is one aten.convolution (or conv_with_clamp) graph. Lists hold
// one entry per spatial dim (or one for all of them).
type convCase struct {
	name                  string
	in, w                 []int64
	stride, pad, dil, opd []int64
	transposed            bool
	groups                int64
	bias                  bool
	weight                weightSrc
	clamp                 string   // "" (plain convolution), "et_vk" or "bare" op name
	lo, hi                *float64 // clamp bounds, nil for Null
}

func convAt(l []int64, i int) int64 {
	if len(l) == 1 {
		return l[0]
	}
	return l[i]
}

// outShape is torch's convolution output shape.
func (c convCase) outShape() []int64 {
	sp := len(c.in) - 2
	var oc int64
	if c.transposed {
		oc = c.w[1] * c.groups
	} else {
		oc = c.w[0]
	}
	out := []int64{c.in[0], oc}
	for i := 0; i < sp; i++ {
		n, k := c.in[2+i], c.w[2+i]
		s, p, d := convAt(c.stride, i), convAt(c.pad, i), convAt(c.dil, i)
		if c.transposed {
			out = append(out, (n-1)*s-2*p+d*(k-1)+convAt(c.opd, i)+1)
		} else {
			out = append(out, (n+2*p-d*(k-1)-1)/s+1)
		}
	}
	return out
}

func (c convCase) caseOf() Case {
	kind := "conv"
	if c.transposed {
		kind = "conv_transpose"
	}
	if len(c.in) == 3 {
		kind += "1d"
	} else {
		kind += "2d"
	}
	name := fmt.Sprintf("conv/%s/%s_w%s_s%v_p%v_d%v_g%d/%s", kind, shapeName(c.in), shapeName(c.w),
		c.stride, c.pad, c.dil, c.groups, c.weight)
	if c.transposed {
		name += fmt.Sprintf("_op%v", c.opd)
	}
	if c.bias {
		name += "_bias"
	}
	if c.clamp != "" {
		name += "/clamp_" + c.clamp
	}
	if c.name != "" {
		name += "/" + c.name
	}
	// The reduction has ICg·KH·KW terms of inputs in [-1, 1].
	k := c.w[1]
	if c.transposed {
		k = c.w[0] / c.groups
	}
	for _, d := range c.w[2:] {
		k *= d
	}
	return Case{
		Name: name,
		Tol:  Tolerance{Abs: 1e-5 * math.Sqrt(float64(k)), Rel: 1e-4},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, c.in, -1, 1)
			x := b.Tensor(f, Dims(c.in), -1)
			b.Inputs(x)
			inputs := []*reference.Tensor{xv}
			w := addWeight(b, RandTensor(r, f, c.w, -1, 1), c.weight, &inputs)
			bias := b.Null()
			if c.bias {
				n := c.outShape()[1]
				o := weightNamed
				if c.weight == weightInline {
					o = weightInline
				}
				bias = addWeight(b, RandTensor(r, f, []int64{n}, -1, 1), o, &inputs)
			}
			opd := c.opd
			if opd == nil {
				opd = []int64{0}
			}
			out := b.Tensor(f, Dims(c.outShape()), -1)
			args := []int32{x, w, bias, b.IntList(c.stride...), b.IntList(c.pad...), b.IntList(c.dil...),
				b.Bool(c.transposed), b.IntList(opd...), b.Int(c.groups)}
			op := "aten.convolution.default"
			if c.clamp != "" {
				op = "conv_with_clamp.default"
				if c.clamp == "et_vk" {
					op = "et_vk.conv_with_clamp.default"
				}
				bound := func(v *float64) int32 {
					if v == nil {
						return b.Null()
					}
					return b.Double(*v)
				}
				args = append(args, bound(c.lo), bound(c.hi))
			}
			b.Op(op, append(args, out)...)
			b.Outputs(out)
			return inputs
		},
	}
}

func init() {
	l := func(v ...int64) []int64 { return v }
	zero, six, neg := 0.0, 6.0, -0.25
	cs := []convCase{
		{in: l(1, 3, 7, 9), w: l(5, 3, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 1, bias: true, weight: weightNamed},
		{in: l(2, 4, 13, 11), w: l(6, 4, 3, 5), stride: l(2, 3), pad: l(1, 2), dil: l(1, 1), groups: 1, weight: weightPrepack},
		{in: l(1, 2, 13, 13), w: l(4, 2, 3, 3), stride: l(1, 1), pad: l(2, 2), dil: l(2, 2), groups: 1, bias: true, weight: weightInline},
		{in: l(1, 3, 15, 12), w: l(2, 3, 4, 3), stride: l(3, 2), pad: l(0, 3), dil: l(3, 1), groups: 1, weight: weightInput},
		{in: l(2, 4, 9, 7), w: l(6, 2, 3, 3), stride: l(1, 2), pad: l(1, 1), dil: l(1, 1), groups: 2, bias: true, weight: weightNamed},
		{in: l(1, 8, 11, 11), w: l(8, 1, 3, 3), stride: l(2, 2), pad: l(1, 1), dil: l(1, 1), groups: 8, bias: true, weight: weightPrepack},
		{in: l(2, 4, 7, 7), w: l(8, 1, 5, 5), stride: l(1, 1), pad: l(2, 2), dil: l(1, 1), groups: 4, weight: weightNamed},
		{in: l(1, 6, 10, 9), w: l(6, 1, 3, 3), stride: l(1, 1), pad: l(2, 2), dil: l(2, 2), groups: 6, bias: true, weight: weightNamed},
		{in: l(2, 16, 5, 5), w: l(7, 16, 1, 1), stride: l(1, 1), pad: l(0, 0), dil: l(1, 1), groups: 1, bias: true, weight: weightNamed},
		{in: l(1, 1, 1, 1), w: l(3, 1, 1, 1), stride: l(1, 1), pad: l(0, 0), dil: l(1, 1), groups: 1, bias: true, weight: weightNamed},
		{in: l(1, 2, 3, 3), w: l(2, 2, 3, 3), stride: l(1, 1), pad: l(0, 0), dil: l(1, 1), groups: 1, weight: weightNamed},
		// Grouped with 4 and 8 channels per group (wider register tiles).
		{in: l(1, 4, 7, 9), w: l(8, 2, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 2, bias: true, weight: weightNamed},
		{in: l(2, 6, 7, 5), w: l(16, 3, 2, 3), stride: l(1, 2), pad: l(1, 0), dil: l(2, 1), groups: 2, weight: weightNamed},
		{in: l(1, 3, 5, 11), w: l(24, 3, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 1, bias: true, weight: weightPrepack},
		// Packed weights (ops.ConvBlockSpec): 16-channel blocks (OC per
		// group a multiple of 16), 4-channel blocks (20 per group), grouped,
		// strided and dilated, conv1d, clamp, a prepacked and an inline
		// weight, a computed weight (read unpacked) and a chunked reduction.
		{name: "packed", in: l(1, 5, 9, 11), w: l(32, 5, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 1, bias: true, weight: weightNamed},
		{name: "packed", in: l(2, 6, 7, 10), w: l(48, 2, 3, 3), stride: l(2, 1), pad: l(1), dil: l(1, 2), groups: 3, weight: weightPrepack},
		{name: "packed", in: l(1, 3, 5, 6), w: l(20, 3, 3, 3), stride: l(1), pad: l(0), dil: l(1), groups: 1, bias: true, weight: weightInline},
		{name: "packed", in: l(1, 7, 19), w: l(16, 7, 5), stride: l(1), pad: l(2), dil: l(1), groups: 1, bias: true, weight: weightNamed},
		{name: "packed", in: l(1, 3, 6, 13), w: l(16, 3, 1, 1), stride: l(1), pad: l(0), dil: l(1), groups: 1, bias: true, weight: weightNamed, clamp: "et_vk", lo: &zero, hi: &six},
		{name: "packed", in: l(1, 4, 6, 6), w: l(16, 4, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 1, weight: weightInput},
		{name: "packed", in: l(1, 5, 7, 10), w: l(32, 5, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 1, bias: true, weight: weightNamed, clamp: "bare", hi: &zero},
		{name: "packed_long_reduction", in: l(1, 1100, 8, 9), w: l(16, 1100, 8, 8), stride: l(1), pad: l(0), dil: l(1), groups: 1, bias: true, weight: weightNamed, clamp: "bare", lo: &neg},
		// conv1d.
		{in: l(2, 3, 17), w: l(4, 3, 5), stride: l(2), pad: l(1), dil: l(1), groups: 1, bias: true, weight: weightNamed},
		{in: l(1, 6, 13), w: l(6, 2, 3), stride: l(1), pad: l(2), dil: l(2), groups: 3, weight: weightPrepack},
		{in: l(2, 4, 9), w: l(4, 1, 3), stride: l(1), pad: l(1), dil: l(1), groups: 4, bias: true, weight: weightNamed},
		// Transposed, with output_padding, stride 2, groups and dilation.
		{in: l(1, 4, 5, 7), w: l(4, 3, 3, 3), stride: l(2), pad: l(1), dil: l(1), opd: l(1), transposed: true, groups: 1, bias: true, weight: weightNamed},
		{in: l(2, 4, 6, 5), w: l(4, 3, 3, 2), stride: l(2, 3), pad: l(0, 1), dil: l(1, 2), opd: l(1, 2), transposed: true, groups: 2, weight: weightPrepack},
		{in: l(1, 3, 4, 4), w: l(3, 1, 4, 4), stride: l(2, 2), pad: l(1, 1), dil: l(1, 1), opd: l(0, 0), transposed: true, groups: 3, bias: true, weight: weightInline},
		{in: l(2, 2, 7, 3), w: l(2, 5, 2, 3), stride: l(1, 1), pad: l(0, 0), dil: l(1, 1), opd: l(0, 0), transposed: true, groups: 1, weight: weightNamed},
		{in: l(1, 3, 6, 5), w: l(3, 2, 3, 2), stride: l(2, 3), pad: l(2, 1), dil: l(3, 4), opd: l(2, 1), transposed: true, groups: 1, bias: true, weight: weightNamed},
		{in: l(1, 4, 5, 6), w: l(4, 8, 3, 3), stride: l(2), pad: l(1), dil: l(1), opd: l(1), transposed: true, groups: 1, bias: true, weight: weightNamed},
		{in: l(2, 4, 3, 5), w: l(4, 4, 2, 2), stride: l(2), pad: l(0), dil: l(1), opd: l(0), transposed: true, groups: 2, weight: weightNamed, clamp: "et_vk", lo: &neg, hi: &zero},
		{in: l(1, 2, 9), w: l(2, 3, 4), stride: l(3), pad: l(1), dil: l(1), opd: l(2), transposed: true, groups: 1, bias: true, weight: weightNamed},
		// conv_with_clamp under both names, with Null bounds.
		{in: l(1, 3, 9, 9), w: l(4, 3, 3, 3), stride: l(1), pad: l(1), dil: l(1), groups: 1, bias: true, weight: weightPrepack, clamp: "et_vk", lo: &zero, hi: &six},
		{in: l(2, 4, 7, 5), w: l(4, 1, 3, 3), stride: l(2), pad: l(1), dil: l(1), groups: 4, bias: true, weight: weightNamed, clamp: "bare", lo: &neg},
		{in: l(1, 2, 6, 6), w: l(3, 2, 3, 3), stride: l(1), pad: l(0), dil: l(1), groups: 1, weight: weightNamed, clamp: "et_vk", hi: &zero},
		{in: l(1, 2, 6, 6), w: l(3, 2, 3, 3), stride: l(1), pad: l(0), dil: l(1), groups: 1, weight: weightNamed, clamp: "bare"},
		// ICg·KH·KW = 1100·64 = 70400 > 65535: five accumulating dispatches.
		{name: "long_reduction", in: l(1, 1100, 10, 9), w: l(8, 1100, 8, 8), stride: l(1), pad: l(0), dil: l(1), groups: 1, bias: true, weight: weightNamed, clamp: "bare", hi: &zero},
		{name: "long_reduction", in: l(1, 1100, 8, 8), w: l(2, 1100, 8, 8), stride: l(1), pad: l(0), dil: l(1), groups: 1, bias: true, weight: weightNamed},
		// 1340·49 = 65660 trips: chunks start in the middle of a kernel window.
		{name: "long_reduction", in: l(1, 1340, 7, 9), w: l(8, 1340, 7, 7), stride: l(1), pad: l(0), dil: l(1), groups: 1, bias: true, weight: weightNamed},
		{name: "long_reduction", in: l(1, 1340, 4, 5), w: l(1340, 1, 7, 7), stride: l(2), pad: l(1), dil: l(1), opd: l(1), transposed: true, groups: 1, bias: true, weight: weightNamed},
		{name: "long_reduction", in: l(1, 1100, 8, 8), w: l(1100, 1, 8, 8), stride: l(1), pad: l(0), dil: l(1), opd: l(0), transposed: true, groups: 1, weight: weightNamed, clamp: "et_vk", lo: &neg},
	}
	for _, c := range cs {
		Cases = append(Cases, c.caseOf())
	}
}

package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// ropeTol: two products and a sum per element.
var ropeTol = Tolerance{Abs: 1e-6, Rel: 1e-5}

// ropeTables returns cos and sin tables of shape [rows, w] for angles
// pos·θ^(−2j/w), as llama precomputes them.
func ropeTables(rows, w int64) (*reference.Tensor, *reference.Tensor) {
	c := reference.New(serialization.Float32, []int64{rows, w})
	s := reference.New(serialization.Float32, []int64{rows, w})
	for p := int64(0); p < rows; p++ {
		for j := int64(0); j < w; j++ {
			a := float64(p) * math.Pow(10000, -float64(2*(j%max(w/2, 1)))/float64(w))
			c.V[p*w+j] = reference.Round(serialization.Float32, math.Cos(a))
			s.V[p*w+j] = reference.Round(serialization.Float32, math.Sin(a))
		}
	}
	return c, s
}

// ropeCase: llama (rd 0) or HF rope (rd = rotary dim, table rows T, start
// pos) of xq [B,S,Hq,D] and xk [B,S,Hk,D]; tables come as named constants
// (named) or graph inputs.
func ropeCase(bs, s, hq, hk, d, rd, rows, start int64, named bool) Case {
	op := "rope"
	if rd > 0 {
		op = fmt.Sprintf("rope_hf/rd%d_T%d_start%d", rd, rows, start)
	}
	return Case{
		Name: fmt.Sprintf("%s/B%d_S%d_Hq%d_Hk%d_D%d/named%v", op, bs, s, hq, hk, d, named),
		Tol:  ropeTol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xq := RandTensor(r, f, []int64{bs, s, hq, d}, -2, 2)
			xk := RandTensor(r, f, []int64{bs, s, hk, d}, -2, 2)
			qi, ki := b.Tensor(f, Dims(xq.Shape), -1), b.Tensor(f, Dims(xk.Shape), -1)
			b.Inputs(qi, ki)
			inputs := []*reference.Tensor{xq, xk}
			var fc, fs *reference.Tensor
			if rd > 0 {
				fc, fs = ropeTables(rows, rd)
			} else {
				fc, fs = ropeTables(s, d/2)
			}
			src := weightInput
			if named {
				src = weightNamed
			}
			ci := addWeight(b, fc, src, &inputs)
			si := addWeight(b, fs, src, &inputs)
			qo, ko := b.Tensor(f, Dims(xq.Shape), -1), b.Tensor(f, Dims(xk.Shape), -1)
			if rd > 0 {
				b.Op("et_vk.apply_rotary_emb_hf.default", qi, ki, ci, si, b.Int(start), b.ValueList(qo, ko))
			} else {
				b.Op("et_vk.apply_rotary_emb.default", qi, ki, ci, si, b.ValueList(qo, ko))
			}
			b.Outputs(qo, ko)
			return inputs
		},
	}
}

func ropeInterleavedCase(bs, n, c int64, fshape []int64) Case {
	return Case{
		Name: fmt.Sprintf("rope_interleaved/B%d_N%d_C%d/freqs%s", bs, n, c, shapeName(fshape)),
		Tol:  ropeTol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			x := RandTensor(r, f, []int64{bs, n, c}, -2, 2)
			xi := b.Tensor(f, Dims(x.Shape), -1)
			b.Inputs(xi)
			cs, sn := ropeTables(n, c/2)
			fc := reference.New(f, fshape)
			for i := int64(0); i < n*c/2; i++ {
				fc.V[2*i], fc.V[2*i+1] = cs.V[i], sn.V[i]
			}
			var inputs []*reference.Tensor
			inputs = append(inputs, x)
			fi := addWeight(b, fc, weightNamed, &inputs)
			out := b.Tensor(f, Dims(x.Shape), -1)
			b.Op("et_vk.apply_rotary_emb_interleaved.default", xi, fi, out)
			b.Outputs(out)
			return inputs
		},
	}
}

func init() {
	Cases = append(Cases,
		ropeCase(1, 1, 4, 2, 32, 0, 0, 0, true),
		ropeCase(1, 7, 4, 2, 32, 0, 0, 0, false),
		ropeCase(2, 5, 3, 1, 6, 0, 0, 0, true),
		ropeCase(1, 1, 1, 1, 2, 0, 0, 0, false),
		// More than 65535 workgroups of 64 (4.2M elements in xq).
		ropeCase(1, 1025, 32, 1, 128, 0, 0, 0, true),
		ropeCase(1, 1, 4, 2, 32, 32, 16, 9, true),
		ropeCase(1, 5, 4, 2, 32, 24, 16, 3, false),
		ropeCase(2, 3, 2, 2, 13, 6, 5, 2, true),
		ropeCase(1, 4, 6, 3, 8, 8, 4, 0, false),
		ropeInterleavedCase(1, 7, 8, []int64{7, 8}),
		ropeInterleavedCase(2, 5, 6, []int64{1, 5, 3, 2}),
		ropeInterleavedCase(3, 33, 2, []int64{33, 2}),
	)
}

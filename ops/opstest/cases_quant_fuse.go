package opstest

import (
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// q4gswLinear is et_vk.linear_q4gsw with groups of g (named weights, a
// bias) as the linear of a residual or epilogue case. Its path is the
// one-row kernel (qgemv.wgsl: M = 1, K and g multiples of 32) or the tiled
// one (qlinear.wgsl).
func q4gswLinear(g int64) residualLinear {
	return residualLinear{
		name: "linear_q4gsw",
		path: func(m, k, n int64) string {
			if m == 1 && k%32 == 0 && g%32 == 0 {
				return "qgemv"
			}
			return "qlinear"
		},
		tol: quantTol,
		build: func(b *serialization.Builder, r *rand.Rand, x int32, m, k, n int64, _ *[]*reference.Tensor) int32 {
			w, s, bv := q4gswWeights(b, r, n, k, g, true)
			h := b.Tensor(serialization.Float32, []uint32{uint32(m), uint32(n)}, -1)
			b.Op("et_vk.linear_q4gsw.default", x, w, s, b.Int(g), bv, h)
			return h
		},
	}
}

// dq8caLinear is torchao.choose_qparams_affine (per row) then
// et_vk.linear_dq8ca_q4gsw with groups of g (named weights, a bias) as
// the linear of a residual or epilogue case.
func dq8caLinear(g int64) residualLinear {
	return residualLinear{
		name: "linear_dq8ca_q4gsw",
		path: q4gswLinear(g).path,
		tol:  func(k int64) Tolerance { return Tolerance{Abs: quantTol(k).Abs * 4, Rel: 1e-5} },
		build: func(b *serialization.Builder, r *rand.Rand, x int32, m, k, n int64, _ *[]*reference.Tensor) int32 {
			f := serialization.Float32
			scale := b.Tensor(f, []uint32{uint32(m)}, -1)
			zp := b.Tensor(serialization.Int8, []uint32{uint32(m)}, -1)
			b.Op("torchao.choose_qparams_affine.default", x, b.String("ASYMMETRIC"), b.IntList(1, k), b.Null(),
				b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null(), b.Bool(false), b.ValueList(scale, zp))
			w, ws, s, bv := dq8caWeights(b, r, n, k, g, true)
			h := b.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
			b.Op("et_vk.linear_dq8ca_q4gsw.default", x, scale, zp, w, ws, s, b.Int(g), bv, h)
			return h
		},
	}
}

// The matmul epilogues on the quantized linear, both kernels: the residual
// add (either operand order), SwiGLU's product, SiLU and other activations
// alone and before an add, K split over dispatches, and the forms that must
// not fuse.
func init() {
	q32, q64 := q4gswLinear(32), q4gswLinear(64)
	Cases = append(Cases,
		residualCaseWith(q64, 1, 128, 36, "none", "add", false, false),
		residualCaseWith(q32, 1, 64, 13, "none", "add_swapped", false, false),
		residualCaseWith(q32, 5, 64, 13, "none", "add", false, false),
		residualCaseWith(q32, 7, 40, 9, "none", "add_swapped", false, false),
		residualCaseWith(q64, 1, 128, 36, "none", "mul", false, false),
		residualCaseWith(q32, 3, 64, 10, "none", "mul", false, false),
		residualCaseWith(q32, 1, 64, 20, "silu", "none", false, false),
		residualCaseWith(q32, 6, 64, 20, "silu", "none", false, false),
		residualCaseWith(q64, 1, 128, 36, "silu", "mul", false, false),
		residualCaseWith(q32, 5, 96, 11, "silu", "mul", false, false),
		residualCaseWith(q32, 1, 64, 9, "silu", "add", false, false),
		residualCaseWith(q32, 1, 64, 36, "silu", "mul", true, false), // SwiGLU gate: its up comes later
		residualCaseWith(q32, 1, 64, 12, "gelu", "add", false, false),
		residualCaseWith(q32, 9, 64, 12, "relu", "none", false, false),
		residualCaseWith(q32, 1, 64, 12, "clamp", "none", false, false),
		residualCaseWith(q32, 17, 64, 12, "sigmoid", "mul", false, false),
		// K over one dispatch: 8193 groups of 32 (one-row kernel), 16388
		// steps of 8 (tiled kernel); the epilogue applies to the final sums.
		residualCaseWith(q32, 1, 262176, 3, "silu", "add", false, false),
		residualCaseWith(q32, 2, 131104, 3, "silu", "add", false, false),
		// Not fused: the other operand is made after the linear, it
		// broadcasts, or alpha is not 1.
		residualCaseWith(q32, 1, 64, 36, "none", "add", true, false),
		residualCaseWith(q32, 7, 64, 36, "none", "mul", true, false),
		residualCaseWith(q32, 1, 64, 36, "none", "add", false, true),
		residualCaseWith(q32, 3, 64, 36, "none", "add_alpha2", false, false),
		// The dynamically quantized linear shares both kernels' epilogues.
		residualCaseWith(dq8caLinear(32), 1, 64, 20, "silu", "add", false, false),
		residualCaseWith(dq8caLinear(32), 4, 64, 20, "none", "mul", false, false),
	)
}

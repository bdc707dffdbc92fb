package opstest

// Cases for the GPU family's linear kernels (ops/linear_gpu.go), run by
// both families like every linear case: shapes at the edges of
// gemv_gpu.wgsl (32 lanes along K of 16-byte units, two units in flight, 8
// columns a workgroup, up to 16 rows) and matmul_gpu.wgsl (64×64 tiles,
// 16-deep K steps): K past one and two lanes' sweeps and not a multiple
// of the sweep, of the unit or of 4 (the scalar form), N not a multiple of
// 8 or 64, every M from 1 to 17 (17 is the first M the GPU GEMV leaves to
// the tiled kernel), group sizes 32, 64 and 128, NaN and ±Inf inputs, and
// the epilogues on both kernels.
func init() {
	// Every M from 1 to 17, K = 260 (65 vec4 units: one unrolled sweep of
	// 64 and one more), N = 9 (two workgroups, the second with one column).
	for m := int64(1); m <= 17; m++ {
		Cases = append(Cases, linearCase([]int64{m, 260}, 9, m%2 == 1, weightSrc(m%4)))
	}
	Cases = append(Cases,
		// Scalar units (K % 4 != 0) past one sweep of 64; vec4 units
		// past two unrolled sweeps, 3-D input; one column.
		linearCase([]int64{3, 1030}, 17, true, weightNamed),
		linearCase([]int64{2, 3, 4100}, 1, false, weightPrepack),
		// The GPU GEMV's K chunks: 550001 vec4 units, over one
		// dispatch's 16384 trips of 32 lanes.
		linearCase([]int64{1, 2200004}, 2, true, weightNamed),
		// The tiled kernel: partial 64×64 tiles and 16-deep K steps.
		linearCase([]int64{70, 37}, 65, true, weightNamed),
		linearCase([]int64{130, 64}, 129, false, weightInput),
		mmCase(65, 33, 70, weightNamed),
		// Its K chunks (2048 tiles of 16 a dispatch): 32768 + 232, on
		// one tile (the Heavy cases with longer K run in the long
		// sweeps).
		mmCase(20, 33000, 5, weightNamed),
		mmCase(18, 7, 3, weightInput),
		bmmCase(3, 70, 17, 65, weightInput),
		// NaN, ±Inf, ±0, big and tiny values through both GPU kernels.
		edgeMatmulCase("linear", 1, 260, 9),
		edgeMatmulCase("linear", 3, 1030, 7),
		edgeMatmulCase("linear", 20, 70, 33),
		edgeMatmulCase("mm", 20, 37, 70),
	)
	// Epilogues (activation, SiLU, residual add, SwiGLU mul) on the GPU
	// GEMV (K = 260) and on the tiled kernel (M = 20).
	for _, m := range []int64{1, 5, 20} {
		Cases = append(Cases,
			residualCase(m, 260, 9, "none", "add", false, false),
			residualCase(m, 260, 9, "silu", "mul", false, false),
			residualCase(m, 260, 9, "gelu", "add_swapped", false, false),
			epilogueCase("linear", m, 260, 9, weightNamed, "relu", epiFused, true),
		)
	}
	// 4-bit weights on the GPU GEMV: every group size, K past one sweep
	// of 32 lanes × 32 k (K = 1152: 36 units), N not a multiple of 8,
	// M from 1 to 16; and the 8da4w form.
	for i, g := range []int64{32, 64, 128} {
		for _, m := range []int64{1, 7, 16} {
			Cases = append(Cases, q4gswCase([]int64{m, 1152}, 9+int64(i), g, m != 7, false))
		}
		Cases = append(Cases, dq8caCase([]int64{[]int64{1, 5, 16}[i], 1152}, 11, g, i != 1, 11))
	}
	// int8 per-channel weights: u32 units (K % 16 != 0) and vec4<u32>
	// units, past one sweep.
	Cases = append(Cases,
		perChannelCase([]int64{1, 20}, 9, true, false),
		perChannelCase([]int64{4, 2052}, 9, true, true),
		perChannelCase([]int64{16, 1024}, 3, true, false),
	)
	// The tiled kernel's "q" form (codes dequantized into B's tile) for
	// M > 16 and the weights the GPU GEMV cannot read, beside the cases
	// of cases_quant.go that have such M (q4gsw 33 and 17 rows, qcs4w 19,
	// dq8ca 19, weight_int4 21): partial 64×64 tiles, int8 per-channel
	// weights with unaligned rows, a group size not a multiple of 32 at
	// M = 1, 8da4w at 70 rows, and K past one dispatch's 2048 tiles of 16
	// (32800 = 32768 + 32; 4 s on lavapipe, so in the long sweeps).
	Cases = append(Cases,
		q4gswCase([]int64{70, 96}, 65, 32, true, false),
		perChannelCase([]int64{20, 36}, 7, true, true),
		q4gswCase([]int64{1, 96}, 9, 48, true, false),
		dq8caCase([]int64{70, 128}, 66, 64, true, 11),
		heavy(q4gswCase([]int64{18, 32800}, 5, 32, false, false)),
	)
}

package opstest

// Cases for issue 33's GPU kernels (ops/linear_gpu_quant.go), run by both
// families like every linear case, at the shapes their indexing is
// sensitive to.
//
// The weight-word GEMV (gemv_quant.wgsl: one 32-bit word a lane, 32 lanes
// a row, 2 words in flight, 8 warps of 4, 2 or 1 rows, up to 8 input
// rows): K of one word (lanes 1..31 idle) and not a multiple of the 64
// words of an unrolled sweep, group sizes that are multiples of 8 but not
// of 32 (a lane's group index is no multiple of its sweep), N not a
// multiple of a workgroup's 32 (16, 8) rows, M = 2, 4, 5 and 8 (input
// rows 2, 4, 8, 8: 2, 1, 1, 1 rows a warp), the per-channel 4-bit and
// int8 forms, 8da4w, and K chunks (16384 trips of 32 lanes a dispatch).
func init() {
	Cases = append(Cases,
		q4gswCase([]int64{1, 8}, 33, 8, true, false),
		q4gswCase([]int64{2, 520}, 65, 40, true, false),
		q4gswCase([]int64{4, 2056}, 17, 8, false, false),
		q4gswCase([]int64{8, 136}, 40, 136, true, false),
		q4gswCase([]int64{5, 4, 264}, 70, 24, false, true),
		dq8caCase([]int64{2, 520}, 9, 40, true, 11),
		dq8caCase([]int64{8, 2048}, 33, 64, false, 11),
		perChannelCase([]int64{5, 1032}, 37, false, false),
		perChannelCase([]int64{8, 64}, 70, false, true),
		perChannelCase([]int64{8, 260}, 33, true, false),
		perChannelCase([]int64{2, 4}, 5, true, false),
		// Two K chunks: 524296 words of 4-bit codes, 524292 of int8.
		q4gswCase([]int64{1, 4194368}, 2, 64, true, false),
		perChannelCase([]int64{1, 2097168}, 3, true, false),
	)
}

// The 128×128 tiled matmul (matmul_tiled128.wgsl: 8×8 an invocation, K
// tiles of 8, M > 64): M, N and K not multiples of 128, 8 or 4 (scalar
// loads) and multiples of 4 (vec4 loads), 3 row and column tiles, batches
// (bmm, matmul's broadcast batches, a 3-D linear input), addmm's alpha,
// beta and broadcast bias, the epilogues (activation, SiLU and residual
// add/mul), NaN and ±Inf through it, and K chunks (2048 tiles of 8 a
// dispatch: 16400 is 2050).
func init() {
	Cases = append(Cases,
		mmCase(257, 37, 131, weightNamed),
		mmCase(130, 16, 260, weightInput),
		mmCase(65, 1, 1, weightNamed),
		linearCase([]int64{200, 100}, 300, true, weightNamed),
		linearCase([]int64{2, 70, 36}, 129, false, weightPrepack),
		linearCase([]int64{66, 7}, 5, true, weightInput),
		bmmCase(2, 129, 20, 130, weightInput),
		matmulCase([]int64{2, 1, 70, 12}, []int64{3, 12, 9}, weightNamed),
		addmmCase([]int64{131}, 129, 24, 131, 0.5, 2, false),
		addmmCase([]int64{129, 1}, 129, 13, 7, 1, 1, false),
		edgeMatmulCase("mm", 130, 37, 70),
		edgeMatmulCase("linear", 70, 36, 9),
		residualCase(130, 36, 9, "silu", "mul", false, false),
		residualCase(129, 64, 132, "none", "add", false, false),
		residualCase(70, 33, 9, "gelu", "add_swapped", false, false),
		epilogueCase("linear", 130, 36, 9, weightNamed, "relu", epiFused, true),
		epilogueCase("mm", 70, 12, 130, weightNamed, "clamp", epiFused, true),
		mmCase(65, 16400, 9, weightNamed),
	)
}

// The skinny linear (gemv_skinny.wgsl: 4 warps of 4 weight rows, 32 lanes
// of vec4 units, 9 to 16 input rows): K of one unit (lanes 1..31 idle)
// and past one sweep of 32 units but not a multiple, N not a multiple of a
// workgroup's 16 rows, every row count from 9 to 16 (the existing
// 9..16 x 260 cases) and a 3-D input, the epilogues, NaN and ±Inf, and K
// chunks (16384 trips of 32 lanes a dispatch; in the long sweeps, 75 MB of
// activations).
func init() {
	Cases = append(Cases,
		linearCase([]int64{9, 4}, 17, true, weightNamed),
		linearCase([]int64{3, 4, 1028}, 33, false, weightPrepack),
		linearCase([]int64{16, 64}, 70, true, weightInput),
		residualCase(13, 36, 9, "silu", "mul", false, false),
		residualCase(11, 64, 20, "none", "add", false, false),
		epilogueCase("linear", 10, 36, 9, weightNamed, "relu", epiFused, true),
		edgeMatmulCase("linear", 12, 36, 17),
		heavy(linearCase([]int64{9, 2097156}, 2, true, weightNamed)),
	)
}

// Chunked weights (graph/chunk.go: a lowered binding limit holds the
// weight in chunks of 64 rows) on the gpu family's skinny linear (12
// rows) and 128×128 tiled matmul (70 rows; the limit of 35000 bytes still
// binds the 70×96 input and 70×100 output whole, and the weight's 384-byte
// rows make 2 chunks of 64 and 36).
func init() {
	tiled := chunked(linearCase([]int64{70, 96}, 100, true, weightNamed), 384, 2)
	tiled.Limit = 35000
	ChunkCases = append(ChunkCases,
		chunked(linearCase([]int64{12, 32}, 100, true, weightNamed), 128, 2),
		tiled,
	)
}

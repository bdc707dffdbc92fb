package ops

import (
	"github.com/wgdelegate/wgdelegate/shaders"
)

// The GPU family's large tiled matmul (linear_family.go entry
// "gpu/tiled128"), shaders/matmul_tiled128.wgsl: float32 mm, bmm, addmm,
// matmul and linear of more than gpuTiled128MinRows rows a batch, with
// the fused epilogues. It replaces matmul_gpu.wgsl's 64×64 tiles for
// those calls ("gpu/tiled", which stays in the table behind it and keeps
// M ≤ 64, the FLOAT16 weights and the quantized "q" form;
// Config.SkipKernels "gpu/tiled128" selects it for every M again, so one
// GPU run measures both).
//
// Why this shape (../shared/spec/gpu-predictions.md §3, §4.2; not measured
// on a GPU yet): matmul_gpu.wgsl pads its k-major tiles by one float, so
// every tile row is misaligned and its vec4 reads compile to scalar
// shared-memory loads; with 4×4 outputs an invocation, each q-step costs
// about 12–13 LDS wavefronts a warp for 16 FFMAs, which caps it near 31%
// of an H100's FMA rate (predicted 11–16 TFLOP/s at 2048³ against a 15
// target), and it has no double buffering. Here, as in the classic SGEMM
// kernels (CUTLASS's SIMT tiles; the WebGPU matmuls of ONNX Runtime and
// TF.js use smaller ones):
//   - 128×128 output tiles, 8×8 outputs an invocation (256 invocations):
//     4 LDS.128 a q-step for 64 FFMAs;
//   - unpadded k-major tiles whose vec4 slots are XOR-swizzled by k row
//     (swz in the shader), so the transposing stores do not conflict and
//     every read is an aligned vec4;
//   - the next K tile loaded into registers while the current one is
//     consumed (BK = 8: 8 KiB of workgroup memory, two barriers a tile).
//
// Why M > 64: a 128-row tile of fewer rows wastes most of its work, and
// the 64×64 tiles give a small M more workgroups (an H100 has 132 SMs: a
// 256×4096 linear makes 64 tiles of 128×128 but 256 of 64×64). What the
// GPU run must measure: BenchmarkMatmul/2048 (target 15 TFLOP/s, old-*
// beside it) and BenchmarkLinearShapes M256 at K = N = 2048..8192 (new
// against old-*); where the crossover lies (M, and the tile count against
// the SM count) is for it to decide.
const (
	gpuTiled128BM       = 128
	gpuTiled128BN       = 128
	gpuTiled128BK       = 8
	gpuTiled128MinRows  = 65   // M a batch from which the 128×128 tiles serve
	gpuTiled128MaxTrips = 2048 // K tiles a dispatch (loop trips, under llvmpipe's 65535)
	gpuTiled128Name     = "gpu/tiled128"
)

// gpuTiled128Shader is the template data of shaders/matmul_tiled128.wgsl.
type gpuTiled128Shader struct {
	B          string // B's layout: "kn" (mm's mat2) or "nk" (linear's weight)
	VecA, VecB bool   // A (K % 4 == 0), B (kn: N % 4 == 0, nk: K % 4 == 0) read as vec4s
	Bias       bool
	Act        string
	Res        string
	Gate       bool
	BM, BN, BK int
	Acc        []int // 0 .. 7: an invocation's rows and columns
	Ks         []int // 0 .. BK − 1

	qBindings
}

// gpuTiled128Fits reports whether the 128×128 tiled kernel serves c: a
// float32 call of more than gpuTiled128MinRows rows a batch.
func gpuTiled128Fits(c *linearCall) bool {
	return c.format == formatF32 && c.f.m >= gpuTiled128MinRows
}

// all4 reports whether every stride is a multiple of 4 elements.
func all4(strides []int64) bool {
	for _, s := range strides {
		if s%4 != 0 {
			return false
		}
	}
	return true
}

// recordGPUTiled128 records float32 call c (any batch, B [K, N] or [N, K])
// with matmul_tiled128.wgsl, writing dst and applying epi: the grid's x
// and y over 128×128 tiles of C, z over batches (past the per-dimension
// limit, one dispatch series each), one dispatch per K chunk.
func recordGPUTiled128(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	f := c.f
	sh := gpuTiled128Shader{B: "kn", Bias: f.bias >= 0, Act: epi.act, Res: epi.res, Gate: epi.gate,
		BM: gpuTiled128BM, BN: gpuTiled128BN, BK: gpuTiled128BK}
	ldb := f.n
	sh.VecB = f.n%4 == 0
	if f.transB {
		sh.B, ldb, sh.VecB = "nk", f.k, f.k%4 == 0
	}
	sh.VecA = f.k%4 == 0 && all4(f.aStride)
	sh.VecB = sh.VecB && all4(f.bStride)
	sh.Acc = matmulTile(8, 8)
	sh.Ks = matmulTile(int64(sh.BK), sh.BK)
	tiles, err := newMatmulTiles(b, f, sh.BM, sh.BN, sh.BK)
	if err != nil {
		return err
	}
	inputs := sh.bind([]int32{f.a, f.b}, false, 0, 0, f.bias, epi)
	kern, err := shaders.Render("matmul_tiled128.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), 256)
	if err != nil {
		return err
	}
	return tiles.record(b, kern, f, inputs, dst, epi, ldb, gpuTiled128MaxTrips, nil, "matmul")
}

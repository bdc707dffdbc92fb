package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// The GPU family's skinny linear (linear_family.go entry "gpu/skinny"),
// shaders/gemv_skinny.wgsl: a float32 linear of 8 < M ≤ 16 rows whose
// weight [N, K] is read as exported, K % 4 == 0 (short prefill chunks,
// small batches). It replaces gemv_gpu.wgsl's 9-to-16-row form for those
// calls ("gpu/gemv", which stays in the table behind it and keeps M ≤ 8,
// K % 4 != 0 and the FLOAT16 weights; Config.SkipKernels "gpu/skinny"
// selects it again, so one GPU run measures both).
//
// Why this shape (../shared/spec/gpu-predictions.md §3, §4.4; not measured
// on a GPU yet): gemv_gpu.wgsl applies each weight vec4 to all rows, but
// loads 16 activation vec4s for it (68 L1 wavefronts a warp per 512 bytes
// of weight against 8 at one row), holds 16 sums and 16 KiB of partial
// sums: predicted 1.3–2× its one-row time at M = 16 on an H100, against a
// 1.5× target. Here each warp computes gpuSkinnyCols weight rows, so each
// activation load serves that many columns (4 + 16 activation loads for 4
// weight vec4s: about 20 wavefronts per 512 bytes), 64 sums a lane, and
// the lanes' sums meet one column at a time in 8.5 KiB of workgroup
// memory. gpuSkinnyWarps warps a workgroup, so that N = 2048 still makes
// 128 workgroups. What the GPU run must measure: BenchmarkLinearShapes
// M16 (and M8, which stays on gemv_gpu.wgsl) against M1 at K = N = 2048,
// 4096, 8192, with the old-* variant beside it, and whether 2 columns a
// warp (more workgroups, fewer registers) beats 4.
const (
	gpuSkinnyWarps   = 4
	gpuSkinnyCols    = 4 // weight rows a warp
	gpuSkinnyMinRows = 9
	gpuSkinnyMaxRows = 16
	gpuSkinnyName    = "gpu/skinny"
)

// gpuSkinnyShader is the template data of shaders/gemv_skinny.wgsl.
type gpuSkinnyShader struct {
	Bias  bool
	Act   string
	Res   string
	Gate  bool
	Rows  []int // input rows: 0 .. M − 1
	Cols  []int // weight rows a warp
	Warps int
	WG    int
	Pitch int // part's row pitch: rows + 1, odd

	qBindings
}

// gpuSkinnyFits reports whether the skinny linear serves c under cfg: a
// float32 linear weight as exported (one batch, [N, K], K % 4 == 0) read
// by 9 to 16 rows, not under MatmulNoGEMV (or MatmulGEMV, which forces
// the GEMV kernel at every M).
func gpuSkinnyFits(c *linearCall, cfg Config) bool {
	return c.gemvRow() && c.f.k%4 == 0 && c.f.m >= gpuSkinnyMinRows && c.f.m <= gpuSkinnyMaxRows && cfg.Matmul == MatmulAuto
}

// recordGPUSkinny records float32 linear c (gpuSkinnyFits) with
// gemv_skinny.wgsl, writing dst and applying epi: one dispatch per K
// chunk, the grid's x (folded into y past the limit) over column blocks
// of warps·gpuSkinnyCols (gpuSkinnyWarps warps, fewer on a device that
// allows fewer invocations: warpsFor).
func recordGPUSkinny(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	f := c.f
	if f.m > gpuSkinnyMaxRows || f.k%4 != 0 || !f.transB || len(f.bdims) != 0 {
		return Errorf(-1, "the skinny linear cannot take M=%d K=%d", f.m, f.k)
	}
	warps := warpsFor(b.DeviceProfile(), gpuSkinnyWarps)
	sh := gpuSkinnyShader{Bias: f.bias >= 0, Act: epi.act, Res: epi.res, Gate: epi.gate,
		Warps: warps, WG: warps * 32, Cols: matmulTile(gpuSkinnyCols, gpuSkinnyCols)}
	for r := int64(0); r < f.m; r++ {
		sh.Rows = append(sh.Rows, int(r))
	}
	sh.Pitch = len(sh.Rows) | 1 // odd: neighbouring lanes' rows in different banks
	if f.m*f.n > matmulMaxElems {
		return Errorf(-1, "output of %d×%d elements is too large", f.m, f.n)
	}
	inputs := sh.bind([]int32{f.a, f.b}, false, 0, 0, f.bias, epi)
	kern, err := shaders.Render("gemv_skinny.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	perBlock := int64(sh.Warps * len(sh.Cols))
	groups, err := Grid(uint64((f.n+perBlock-1)/perBlock), 1, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	units := f.k / 4
	p := gpuGEMVParams{M: uint32(f.m), N: uint32(f.n), K: uint32(units), BiasSM: uint32(f.biasSM), BiasSN: uint32(f.biasSN),
		Alpha: f.alpha, Beta: f.beta, ActLo: epi.lo, ActHi: epi.hi}
	return kChunks(units, gpuGEMVMaxTrips*32, func(begin, end int64, accumulate, last uint32) error {
		p.KBegin, p.KEnd, p.Accumulate, p.Last = uint32(begin), uint32(end), accumulate, last
		if err := b.Dispatch(kern, inputs, []int32{dst}, p.bytes(), groups); err != nil {
			return fmt.Errorf("ops: matmul: %w", err)
		}
		return nil
	})
}

package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// The cpu family's float32 linear kernels, shaped for lavapipe (many
// output columns an invocation, no workgroup memory): the tiled matmul
// (shaders/matmul.wgsl) and the few-row GEMV (shaders/gemv.wgsl, and the
// packed-half GEMV of linear_f16.go through recordGEMVKernel). The
// linear family's table (linear_family.go) picks them; the gpu family's
// are in linear_gpu.go, the ops' argument checks in matmul.go.

// matmulShader is the template data of shaders/matmul.wgsl.
type matmulShader struct {
	Vec4   bool
	TransB bool
	Bias   bool
	Rows   []int // 0..rows per invocation-1
	Cols   []int // 0..columns (vec4 columns for Vec4) per invocation-1
	WGX    int
	WGY    int
	Act    string // epilogue activation (matmulEpilogue.act), or ""
	Res    string // epilogue add or mul with the res tensor (matmulEpilogue.res), or ""
	Gate   bool   // the activation's result times its input (matmulEpilogue.gate)
}

// Register tile per invocation (rows × columns; vec4 columns for the vec4
// kernel), measured on lavapipe at N=512 (GFLOP/s, best of 10, noisy host):
// vec4 8×1 (the spec's v4-8x4) ≈15, 8×2 ≈20, 16×2 ≈23, 16×4 ≈25–30, with
// mm and linear alike; 32×4 and 16×8 gave no more. Scalar 4×4 ≈6, 8×8 ≈10,
// 16×8 ≈13. Bigger tiles cost LLVM JIT time at the first dispatch when the
// Mesa shader cache is cold (vec4 8×1 0.09 s, 16×4 0.93 s; scalar 8×8 0.2 s,
// 16×8 0.6 s), so the scalar fallback stays at 8×8. Re-measured side by side
// (mm, kernel rate relative to 16×4 with 8×2 workgroups, 512 and 1024):
// 16×4 in 16×1 workgroups 0.95–1.1, in 8×4 0.85–1.0, in 4×2 0.67–0.70;
// 32×2 0.76–0.9; 8×8 0.63–0.69. At 64 (one workgroup of 16×4 tiles)
// smaller tiles with more workgroups were slower still (8×4 0.33–0.58).
//
// Small M (at most 8 rows, one row block of at most 8 rows): an 8×4 tile
// made every such dispatch cost 4–20 ms whatever N and K (8×16·16×32 with a
// gelu epilogue: 16–18 ms), against 0.2–0.4 ms with at most 2 vec4 columns
// (measured through whole MLP Executes on lavapipe, same run), so small-M
// products use matmulVec4ColsSmallM.
const (
	matmulVec4Rows       = 16
	matmulVec4Cols       = 4
	matmulVec4ColsSmallM = 2
	matmulScalarRows     = 8
	matmulScalarCols     = 8
)

// matmulTile returns 0..t-1 for the smallest power of two t >= need, capped
// at max: a one-row linear (decode) does not compute fifteen discarded rows.
func matmulTile(need int64, max int) []int {
	t := 1
	for t < max && int64(t) < need {
		t *= 2
	}
	idx := make([]int, t)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// matmulParamsWords is the size of the WGSL Params struct in u32s.
const matmulParamsWords = 16 + 3*matmulMaxBatchDims

// recordTiled records c with the cpu family's tiled kernel
// (shaders/matmul.wgsl), writing dst and applying epi.
func recordTiled(b Builder, c matmulCall, epi matmulEpilogue, dst int32) error {
	batch := NumelOf(c.bdims)
	path := b.Config().Matmul
	vec4 := c.k > 0 && c.k%4 == 0 && c.n%4 == 0 && path != MatmulScalar
	sh := matmulShader{Vec4: vec4, TransB: c.transB, Bias: c.bias >= 0, Act: epi.act, Res: epi.res, Gate: epi.gate}
	cols, trips := c.n, c.k // columns as the kernel counts them, K-loop trips
	unit := int64(1)        // elements per storage word of A, B and C
	if vec4 {
		cols, trips, unit = c.n/4, c.k/4, 4
		maxCols := matmulVec4Cols
		if c.m <= matmulVec4Rows {
			maxCols = matmulVec4ColsSmallM
		}
		sh.Rows, sh.Cols = matmulTile(c.m, matmulVec4Rows), matmulTile(cols, maxCols)
	} else {
		sh.Rows, sh.Cols = matmulTile(c.m, matmulScalarRows), matmulTile(cols, matmulScalarCols)
	}
	if batch*c.m*c.n > matmulMaxElems {
		return Errorf(-1, "output of %d×%d×%d elements is too large", batch, c.m, c.n)
	}
	rowBlocks := (c.m + int64(len(sh.Rows)) - 1) / int64(len(sh.Rows))
	colBlocks := (cols + int64(len(sh.Cols)) - 1) / int64(len(sh.Cols))
	// Lanes run along x (columns), 8 per AVX2 vector. Workgroups are what
	// lavapipe spreads over threads, so they stay small to leave several
	// even for mid-size outputs; one row block gets a flat workgroup so no
	// lanes idle along y.
	sh.WGX, sh.WGY = 8, 2
	if rowBlocks == 1 {
		sh.WGX, sh.WGY = 16, 1
	}
	gx := (colBlocks + int64(sh.WGX) - 1) / int64(sh.WGX)
	gy := (rowBlocks + int64(sh.WGY) - 1) / int64(sh.WGY)
	maxg := int64(b.MaxWorkgroupsPerDim())
	if gx > maxg || gy > maxg {
		return Errorf(-1, "M=%d N=%d needs a %d×%d workgroup grid, over the %d per dimension limit", c.m, c.n, gx, gy, maxg)
	}
	inputs := []int32{c.a, c.b}
	if sh.Bias {
		inputs = append(inputs, c.bias)
	}
	if sh.Res != "" {
		inputs = append(inputs, epi.other)
	}
	k, err := shaders.Render("matmul.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WGX*sh.WGY))
	if err != nil {
		return err
	}
	bd, as, bs := make([]uint32, len(c.bdims)), make([]uint32, len(c.bdims)), make([]uint32, len(c.bdims))
	for i := range c.bdims {
		bd[i], as[i], bs[i] = uint32(c.bdims[i]), uint32(c.aStride[i]/unit), uint32(c.bStride[i]/unit)
	}
	// Batches run along z, at most maxg per dispatch; each K chunk is one
	// dispatch per batch range (K == 0 still needs one to write bias or 0).
	for z0 := int64(0); z0 < batch; z0 += maxg {
		gz := min(batch-z0, maxg)
		err := kChunks(trips, matmulMaxTrips, func(begin, end int64, accumulate, last uint32) error {
			p := matmulParams(c, cols, trips, begin, end, accumulate, last, z0, epi, 0, bd, as, bs)
			if err := b.Dispatch(k, inputs, []int32{dst}, p, [3]uint32{uint32(gx), uint32(gy), uint32(gz)}); err != nil {
				return fmt.Errorf("ops: matmul: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// matmulParams packs the Params of shaders/matmul.wgsl and
// matmul_gpu.wgsl (matmulParamsWords u32s): cols and trips are N and K in
// the kernel's units, [begin, end) this K chunk, z0 the first batch of
// the dispatch, ldb B's row stride (matmul_gpu.wgsl; 0 for matmul.wgsl)
// and bd, as, bs the batch dims and A's and B's batch strides in units.
func matmulParams(c matmulCall, cols, trips, begin, end int64, accumulate, last uint32, z0 int64, epi matmulEpilogue, ldb int64, bd, as, bs []uint32) []byte {
	var p Params
	p.U32(uint32(c.m)).U32(uint32(cols)).U32(uint32(trips))
	p.U32(uint32(begin)).U32(uint32(end)).U32(accumulate)
	p.F32(c.alpha).F32(c.beta)
	p.U32(uint32(c.biasSM)).U32(uint32(c.biasSN)).U32(uint32(z0)).U32(uint32(len(c.bdims)))
	p.F32(epi.lo).F32(epi.hi).U32(last).U32(uint32(ldb))
	p.U32s(bd, matmulMaxBatchDims).U32s(as, matmulMaxBatchDims).U32s(bs, matmulMaxBatchDims)
	return p.Bytes()
}

// gemvShader is the template data of shaders/gemv.wgsl.
type gemvShader struct {
	Vec4 bool
	Bias bool
	Act  string
	Res  string
	Gate bool
	Rows []int // input rows per invocation
	Cols []int // output columns (weight rows) per invocation
	WG   int
}

// gemvMaxRows is the most input rows one GEMV invocation takes, and the
// largest M whose linear may run the GEMV kernel by default (MatmulAuto).
// Where the tiled kernel has its vec4 form (K%4 == 0 and N%4 == 0) the two
// run at about the same speed (see gemvCols; the same kernel in two graphs
// of one run differed by 0.72 vs 0.99 GB/s at K = N = 4096; M=1, GEMV over
// tiled in the same iterations, medians of 6 and ranges: K = N = 512 1.25
// (1.12–1.33), 2048 1.00 (0.98–1.02)), and from M=8 the GEMV kernel costs 2–3× the tiled one's
// LLVM JIT time on a cold Mesa shader cache (M=8: 2.5–3.6 s against
// 0.9–2.0 s; M=16: 3.5–8.0 s against 1.7–2.6 s, K = N = 512, loaded host),
// so only one-row linears take it there. With K%4 == 0 and N%4 != 0 the
// GEMV kernel still loads vec4s while the tiled one falls back to scalar
// loads: K = 2048, N = 2047, same run, GEMV over tiled 2.0–2.1× at M=1,
// 1.6–2.1× at M=8 and 1.9–2.4× at M=16 (4 columns per invocation).
const gemvMaxRows = 16

// gemvWG is the GEMV kernel's workgroup size: one AVX2 vector of lanes on
// llvmpipe, so that even a narrow N makes several workgroups for its
// threads.
const gemvWG = 8

// gemvCols returns the output columns per invocation of the GEMV kernel
// for invocations of rows input rows: cfg's choice, else 8, or 4 from 8
// rows. Measured on lavapipe (weight GB/s, K = N = 2048 unless noted,
// medians of 5 in one run, a heavily loaded host: load average 7–10 on 2
// cores), 4 / 8 / 16 columns and the tiled kernel: M=1 1.07 / 1.27 / 0.93,
// tiled 0.98; M=1 K=4096 1.20 / 0.95 / 0.91, tiled 0.92; M=8 0.41 / 0.49 /
// 0.50, tiled 0.51; M=16 0.31 / 0.38 / 0.38, tiled 0.38. The ranges overlap
// except 4 columns from M=8 (slower), but there 8 columns cost 2–3× the
// cold JIT time of 4 (M=8 2.5–3.6 s against 0.8–1.3 s; M=16 3.5–8.0 s
// against 1.9 s), a cost every new M pays once per load of a model.
func gemvCols(rows int, cfg Config) int {
	switch {
	case cfg.GEMVCols > 0:
		return min(cfg.GEMVCols, 16)
	case rows >= 8:
		return 4
	}
	return 8
}

// recordGEMV records c (transB, one batch) with the GEMV kernel, writing
// dst, applying epi.
func recordGEMV(b Builder, c matmulCall, epi matmulEpilogue, dst int32) error {
	vec4 := c.k%4 == 0
	g := gemvKernel{file: "gemv.wgsl", weight: c.b, perTrip: 1, vec4: vec4, what: "matmul"}
	if vec4 {
		g.perTrip = 4
	}
	g.cols = gemvCols(len(matmulTile(c.m, gemvMaxRows)), b.Config())
	return recordGEMVKernel(b, c, epi, dst, g)
}

// gemvKernel is what tells the few-row GEMV kernels apart: the float32
// one (gemv.wgsl) and the packed-half one (gemv_f16.wgsl, linear_f16.go).
type gemvKernel struct {
	file    string // the shader
	weight  int32  // the weight value, bound after the input
	perTrip int64  // k per K-loop trip
	vec4    bool   // the float32 kernel's vec4 loads
	cols    int    // output columns per invocation
	what    string // the error prefix's op
}

// recordGEMVKernel records c with the GEMV kernel g: one dispatch per
// chunk of at most matmulMaxTrips K-loop trips (later chunks accumulate,
// the last applies epi), writing dst.
func recordGEMVKernel(b Builder, c matmulCall, epi matmulEpilogue, dst int32, g gemvKernel) error {
	sh := gemvShader{Vec4: g.vec4, Bias: c.bias >= 0, Act: epi.act, Res: epi.res, Gate: epi.gate, Rows: matmulTile(c.m, gemvMaxRows), WG: gemvWG}
	sh.Cols = matmulTile(int64(g.cols), 16)
	colBlocks := (c.n + int64(len(sh.Cols)) - 1) / int64(len(sh.Cols))
	gx := (colBlocks + int64(sh.WG) - 1) / int64(sh.WG)
	gy := (c.m + int64(len(sh.Rows)) - 1) / int64(len(sh.Rows))
	if maxg := int64(b.MaxWorkgroupsPerDim()); gx > maxg || gy > maxg {
		return Errorf(-1, "M=%d N=%d needs a %d×%d workgroup grid, over the %d per dimension limit", c.m, c.n, gx, gy, maxg)
	}
	if c.m*c.n > matmulMaxElems {
		return Errorf(-1, "output of %d×%d elements is too large", c.m, c.n)
	}
	inputs := []int32{c.a, g.weight}
	if sh.Bias {
		inputs = append(inputs, c.bias)
	}
	if sh.Res != "" {
		inputs = append(inputs, epi.other)
	}
	k, err := shaders.Render(g.file, sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	trips := c.k / g.perTrip
	// K == 0 still needs one dispatch to write the bias (or 0).
	return kChunks(trips, matmulMaxTrips, func(begin, end int64, accumulate, last uint32) error {
		var p Params
		p.U32(uint32(c.m)).U32(uint32(c.n)).U32(uint32(trips)).U32(uint32(begin))
		p.U32(uint32(end)).U32(accumulate).U32(last).U32(uint32(c.biasSM))
		p.U32(uint32(c.biasSN)).F32(c.alpha).F32(c.beta).F32(epi.lo)
		p.F32(epi.hi).U32(0).U32(0).U32(0)
		if err := b.Dispatch(k, inputs, []int32{dst}, p.Bytes(), [3]uint32{uint32(gx), uint32(gy), 1}); err != nil {
			return fmt.Errorf("ops: %s: %w", g.what, err)
		}
		return nil
	})
}

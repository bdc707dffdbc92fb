package ops

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// The GPU family's linear kernels (linear_family.go entries "gpu/..."):
// shaders/gemv_gpu.wgsl for few rows and shaders/matmul_gpu.wgsl, a tiled
// matmul through workgroup memory, for more.
//
// Their shapes were chosen from the published designs
// (../shared/spec/gpu-kernels.md), not measured: this machine has no GPU
// (lavapipe proves them correct, forced with FamilyGPU, and is no guide
// to their speed). The H100 measurements that should confirm or retune
// them (BenchmarkGEMV, BenchmarkLinearShapes, BenchmarkLinearQ4gsw and
// BenchmarkMatmul with -kernels gpu, bench/llm) are owed.

// GEMV shape (since issue 33 for float32 and half weights up to 8 rows,
// K % 4 != 0 and half weights to 16; float32 linears of 9 to 16 rows take
// the skinny kernel of linear_gpu_skinny.go, 4-bit and int8 weights up to
// 8 rows the weight-word GEMV of linear_gpu_quant.go): gpuGEMVCols output
// columns per workgroup, gpuGEMVLanes lanes
// along K for each (a 256-invocation workgroup), each lane loading one
// 16-byte unit (a vec4 of floats, eight halves, 32 nibbles, 16 int8) per
// step, gpuGEMVUnroll units in flight. Chosen from: llama.cpp Vulkan
// mul_mat_vec (one 32-lane subgroup per row, 4 subgroups a workgroup on
// NVIDIA, PR #15355; ≈486 GB/s of an RTX 4070's 504 for f32), ONNX
// Runtime WebGPU MatMulNBits (32 lanes along K, 8 columns a workgroup,
// vec4<u32> of nibbles a lane), ExecuTorch's linear_q4gsw_coop (8 rows a
// workgroup, scales once per group). 32 lanes make one NVIDIA warp read
// 512 contiguous bytes of a weight row a step; 8 columns make a
// workgroup's scales of a group one 32-byte sector. The H100 measurement
// is owed. The partial sums of up to gpuGEMVMaxRows input rows take
// 256·16·4 = 16 KiB of workgroup memory, WebGPU's default limit.
const (
	gpuGEMVLanes    = 32
	gpuGEMVCols     = 8
	gpuGEMVUnroll   = 2
	gpuGEMVMaxRows  = 16
	gpuGEMVMaxTrips = 16384 // K-loop trips a lane, under llvmpipe's 65535
)

// Tiled shape (since issue 33 for M ≤ 64 a batch, FLOAT16 weights and the
// quantized "q" form; float32 calls of more rows take the 128×128 kernel
// of linear_gpu_tiled.go): 16×16 invocations, each gpuTiledTM×gpuTiledTN outputs of a
// 64×64 tile, K in steps of gpuTiledBK through workgroup memory (the
// classic shared-memory SGEMM, as in CUTLASS's SIMT kernels and the
// WebGPU matmul of ONNX Runtime and TF.js: 64×64 tiles, 4×4 per thread,
// 16-deep K tiles, 8.3 KiB of workgroup memory). Larger register tiles
// (8×8 per invocation, 128×128 tiles) reach more of a GPU's FMA rate; the
// H100 measurement that would choose between them is owed.
const (
	gpuTiledTM       = 4
	gpuTiledTN       = 4
	gpuTiledBK       = 16
	gpuTiledMaxTrips = 2048 // K tiles a dispatch: 2048·(1+16) loop trips, under llvmpipe's 65535
)

// gpuGEMVRows reports whether a call of m rows takes a GPU GEMV kernel:
// up to gpuGEMVMaxRows, or every M under MatmulGEMV, none under
// MatmulNoGEMV.
func gpuGEMVRows(cfg Config, m int64) bool {
	switch cfg.Matmul {
	case MatmulGEMV:
		return true
	case MatmulNoGEMV:
		return false
	}
	return m <= gpuGEMVMaxRows
}

// gpuQGEMVFormat returns the gemv_gpu.wgsl weight format of quantized call
// c (since issue 33 the gpu family's GEMV for 9 to 16 rows, and for up to
// 8 under Config.SkipKernels "gpu/q4gemv,gpu/qcgemv"; linear_gpu_quant.go),
// or "" when that kernel cannot read it: "q4" for linear_q4gsw and
// linear_dq8ca_q4gsw codes (low nibble first, grouped scales) with K and
// the group size multiples of 32 (a 32-nibble unit lies in one group),
// "int8v" or "int8" for _weight_int8pack_mm (K % 16 == 0: vec4<u32>
// units, else u32).
func gpuQGEMVFormat(c qlinearCall) string {
	sh := c.sh
	switch {
	case sh.Int8 && !sh.Grouped && !sh.DQ8 && !sh.Unaligned && c.rowBytes == c.k:
		if c.k%16 == 0 {
			return "int8v"
		}
		return "int8"
	case !sh.Int8 && sh.Grouped && !sh.SplitScale && !sh.HighEven && !sh.Zeros && !sh.Unaligned &&
		c.k%32 == 0 && c.g%32 == 0 && c.rowBytes*2 == c.k:
		return "q4"
	}
	return ""
}

// gpuGEMVShader is the template data of shaders/gemv_gpu.wgsl.
type gpuGEMVShader struct {
	Format  string // f32v, f32, half, q4, int8, int8v
	Scales  string // "group" (q4), "channel" (int8), or ""
	DQ8     bool
	Bias    bool
	Act     string
	Res     string
	Gate    bool
	Rows    []int // input rows per workgroup
	Lanes   int   // lanes along K per column
	Cols    int   // output columns per workgroup
	WG      int   // Lanes·Cols
	Strides []int // the reduction tree's steps, Lanes/2 .. 1
	Unroll  []int // 0 .. units in flight − 1

	qBindings
}

// gpuGEMVParams is the Go twin of gemv_gpu.wgsl's Params (64 bytes).
type gpuGEMVParams struct {
	M, N, K, KBegin, KEnd, Accumulate, Last, BiasSM, BiasSN uint32
	Alpha, Beta, ActLo, ActHi                               float32
	GW, LdS, _                                              uint32
}

// bytes packs p little-endian, as WGSL lays the struct out.
func (p gpuGEMVParams) bytes() []byte {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, p); err != nil {
		panic(err) // fixed-size fields only
	}
	return buf.Bytes()
}

// gpuGEMV is one GEMV dispatch series to record.
type gpuGEMV struct {
	sh                gpuGEMVShader
	x, w, scales      int32 // scales < 0 when absent
	xs, xz, bias, res int32 // < 0 when absent
	m, n, units       int64 // units: weight row length in the format's units
	p                 gpuGEMVParams
	what              string
}

// recordGPUGEMVFloat records float32 linear c (weight as exported, or as
// packed halves) with gemv_gpu.wgsl.
func recordGPUGEMVFloat(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	f := c.f
	g := gpuGEMV{x: f.a, w: f.b, scales: -1, xs: -1, xz: -1, bias: f.bias, res: -1, m: f.m, n: f.n, what: "matmul"}
	switch {
	case c.halfCall() && c.half >= 0:
		g.sh.Format, g.w, g.units, g.what = "half", c.half, f.k/8, "linear (half weight)"
	case f.k%4 == 0:
		g.sh.Format, g.units = "f32v", f.k/4
	default:
		g.sh.Format, g.units = "f32", f.k
	}
	g.p = gpuGEMVParams{BiasSM: uint32(f.biasSM), BiasSN: uint32(f.biasSN), Alpha: f.alpha, Beta: f.beta}
	return recordGPUGEMVKernel(b, g, epi, dst)
}

// recordGPUGEMVQuant records quantized linear c (gpuQGEMVFormat) with
// gemv_gpu.wgsl.
func recordGPUGEMVQuant(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	q := c.q
	g := gpuGEMV{x: q.x, w: q.w, scales: q.scales, xs: -1, xz: -1, bias: q.bias, res: -1, m: q.m, n: q.n, what: "quantized linear"}
	g.sh.Format = gpuQGEMVFormat(q)
	g.p = gpuGEMVParams{BiasSN: 1, Alpha: 1, Beta: 1}
	switch g.sh.Format {
	case "q4":
		g.sh.Scales, g.units = "group", q.k/32
		g.p.GW, g.p.LdS = uint32(q.g/32), uint32(q.ldS)
		if q.sh.DQ8 {
			g.sh.DQ8, g.xs, g.xz = true, q.xs, q.xz
		}
	case "int8v":
		g.sh.Scales, g.units = "channel", q.k/16
	case "int8":
		g.sh.Scales, g.units = "channel", q.k/4
	default:
		return Errorf(-1, "the GPU GEMV kernel cannot read this quantized weight")
	}
	return recordGPUGEMVKernel(b, g, epi, dst)
}

// recordGPUGEMVKernel records g: one dispatch per K chunk (kChunks), the
// grid's x (folded into y past the limit) over column blocks and z over
// row blocks.
func recordGPUGEMVKernel(b Builder, g gpuGEMV, epi matmulEpilogue, dst int32) error {
	sh := g.sh
	sh.Bias, sh.Act, sh.Res, sh.Gate = g.bias >= 0, epi.act, epi.res, epi.gate
	sh.Rows = matmulTile(g.m, gpuGEMVMaxRows)
	sh.Lanes, sh.Cols = gpuGEMVLanes, gpuGEMVCols
	sh.WG = sh.Lanes * sh.Cols
	for s := sh.Lanes / 2; s >= 1; s /= 2 {
		sh.Strides = append(sh.Strides, s)
	}
	sh.Unroll = matmulTile(gpuGEMVUnroll, gpuGEMVUnroll)
	if sh.DQ8 {
		// Its quantizer is big code: one unit a trip keeps one call site
		// per row (llvmpipe compiles a big kernel for seconds).
		sh.Unroll = []int{0}
	}
	if g.m*g.n > matmulMaxElems {
		return Errorf(-1, "output of %d×%d elements is too large", g.m, g.n)
	}
	inputs := []int32{g.x, g.w}
	if g.scales >= 0 {
		inputs = append(inputs, g.scales)
	}
	inputs = sh.bind(inputs, sh.DQ8, g.xs, g.xz, g.bias, epi)
	kern, err := shaders.Render("gemv_gpu.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	colBlocks := (g.n + int64(sh.Cols) - 1) / int64(sh.Cols)
	groups, err := Grid(uint64(colBlocks), 1, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	rowBlocks := (g.m + int64(len(sh.Rows)) - 1) / int64(len(sh.Rows))
	if rowBlocks > int64(b.MaxWorkgroupsPerDim()) {
		return Errorf(-1, "M=%d needs %d row blocks, over the %d per dimension limit", g.m, rowBlocks, b.MaxWorkgroupsPerDim())
	}
	groups[2] = uint32(rowBlocks)
	p := g.p
	p.M, p.N, p.K, p.ActLo, p.ActHi = uint32(g.m), uint32(g.n), uint32(g.units), epi.lo, epi.hi
	return kChunks(g.units, gpuGEMVMaxTrips*gpuGEMVLanes, func(begin, end int64, accumulate, last uint32) error {
		p.KBegin, p.KEnd, p.Accumulate, p.Last = uint32(begin), uint32(end), accumulate, last
		if err := b.Dispatch(kern, inputs, []int32{dst}, p.bytes(), groups); err != nil {
			return fmt.Errorf("ops: %s: %w", g.what, err)
		}
		return nil
	})
}

// gpuTiledShader is the template data of shaders/matmul_gpu.wgsl.
type gpuTiledShader struct {
	B          string        // B's layout: "kn" (mm's mat2), "nk" (linear's weight), "half" (packed halves, [N, K8/2] words), "q" (quantized codes)
	Q          qlinearShader // "q": the weight's format (Int8, HighEven, Grouped, Zeros) and DQ8
	Bias       bool
	Act        string
	Res        string
	Gate       bool
	TM, TN, BK int
	BM, BN     int // 16·TM, 16·TN
	AP, BP     int // the tiles' padded row pitches, BM+1 and BN+1
	RowsT      []int
	ColsT      []int
	VecM, VecN []int // vec4 groups of RowsT and ColsT
	LoadA      []int // the tile loads' element offsets, 0, 256, ...
	LoadB      []int

	qBindings
}

// recordGPUTiled records float32 call c (any batch, B [K, N], [N, K] or
// packed halves) with matmul_gpu.wgsl, writing dst and applying epi.
func recordGPUTiled(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	f := c.f
	sh := gpuTiledShader{Bias: f.bias >= 0}
	weight, ldb := f.b, f.n
	switch {
	case c.halfCall() && c.half >= 0:
		sh.B, weight, ldb = "half", c.half, (f.k+7)/8*4
	case f.transB:
		sh.B, ldb = "nk", f.k
	default:
		sh.B = "kn"
	}
	inputs := sh.bind([]int32{f.a, weight}, false, 0, 0, f.bias, epi)
	return recordGPUTiledKernel(b, sh, f, inputs, ldb, gpuTiledQ{}, epi, dst)
}

// recordGPUTiledQuant records weight-quantized call c with
// matmul_gpu.wgsl's "q" form: the codes are dequantized as B's tile is
// loaded (every weight format qlinear.wgsl reads), so prefill and other
// many-row calls run the GPU family's tiled kernel too.
func recordGPUTiledQuant(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	q := c.q
	sh := gpuTiledShader{B: "q", Q: q.sh, Bias: q.bias >= 0}
	f := matmulCall{a: q.x, b: q.w, bias: q.bias, out: q.out, m: q.m, n: q.n, k: q.k, transB: true, alpha: 1, beta: 1, biasSN: 1}
	inputs := sh.bind([]int32{q.x, q.w, q.scales}, sh.Q.DQ8, q.xs, q.xz, q.bias, epi)
	return recordGPUTiledKernel(b, sh, f, inputs, q.k, gpuTiledQ{rowBytes: q.rowBytes, g: q.g, ldS: q.ldS}, epi, dst)
}

// gpuTiledQ is the "q" form's weight geometry (matmul_gpu.wgsl's q_*
// params; zero for the float forms).
type gpuTiledQ struct{ rowBytes, g, ldS int64 }

// recordGPUTiledKernel records matmul_gpu.wgsl for f with sh's B form:
// inputs are A, B (and the scales and DQ8 qparams of the "q" form), the
// bias and the epilogue's res, at the bindings sh names (qBindings.bind).
func recordGPUTiledKernel(b Builder, sh gpuTiledShader, f matmulCall, inputs []int32, ldb int64, qg gpuTiledQ, epi matmulEpilogue, dst int32) error {
	sh.Act, sh.Res, sh.Gate = epi.act, epi.res, epi.gate
	sh.TM, sh.TN, sh.BK = gpuTiledTM, gpuTiledTN, gpuTiledBK
	sh.BM, sh.BN = 16*sh.TM, 16*sh.TN
	sh.AP, sh.BP = sh.BM+1, sh.BN+1
	sh.RowsT, sh.ColsT = matmulTile(int64(sh.TM), sh.TM), matmulTile(int64(sh.TN), sh.TN)
	sh.VecM, sh.VecN = matmulTile(int64(sh.TM/4), sh.TM/4), matmulTile(int64(sh.TN/4), sh.TN/4)
	for o := 0; o < sh.BM*sh.BK; o += 256 {
		sh.LoadA = append(sh.LoadA, o)
	}
	for o := 0; o < sh.BN*sh.BK; o += 256 {
		sh.LoadB = append(sh.LoadB, o)
	}
	tiles, err := newMatmulTiles(b, f, sh.BM, sh.BN, sh.BK)
	if err != nil {
		return err
	}
	kern, err := shaders.Render("matmul_gpu.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), 256)
	if err != nil {
		return err
	}
	var qp Params
	qp.U32(uint32(qg.rowBytes)).U32(uint32(qg.g)).U32(uint32(qg.ldS)).U32(0)
	what := "matmul"
	if sh.B == "q" {
		what = "quantized linear"
	}
	return tiles.record(b, kern, f, inputs, dst, epi, ldb, gpuTiledMaxTrips, qp.Bytes(), what)
}

// matmulTiles is the dispatch geometry of a tiled matmul kernel
// (matmul_gpu.wgsl, matmul_tiled128.wgsl): f's batch count, the grid of
// its bm×bn output tiles (gx, gy), the device's per-dimension limit maxg
// (the batch runs in slices of it, one dispatch series each) and the
// kernel's K tile bk.
type matmulTiles struct {
	batch, gx, gy, maxg, bk int64
}

// newMatmulTiles checks f's output size and grid against the limits and
// returns its geometry for bm×bn tiles with K tiles of bk.
func newMatmulTiles(b Builder, f matmulCall, bm, bn, bk int) (matmulTiles, error) {
	t := matmulTiles{batch: NumelOf(f.bdims), bk: int64(bk), maxg: int64(b.MaxWorkgroupsPerDim())}
	if t.batch*f.m*f.n > matmulMaxElems {
		return t, Errorf(-1, "output of %d×%d×%d elements is too large", t.batch, f.m, f.n)
	}
	t.gx = (f.n + int64(bn) - 1) / int64(bn)
	t.gy = (f.m + int64(bm) - 1) / int64(bm)
	if t.gx > t.maxg || t.gy > t.maxg {
		return t, Errorf(-1, "M=%d N=%d needs a %d×%d workgroup grid, over the %d per dimension limit", f.m, f.n, t.gx, t.gy, t.maxg)
	}
	return t, nil
}

// record records kern for f, one dispatch per batch slice and K chunk of
// at most maxTrips tiles, its params matmulParams' (B's row stride ldb)
// followed by extra; errors name what.
func (t matmulTiles) record(b Builder, kern *shaders.Kernel, f matmulCall, inputs []int32, dst int32, epi matmulEpilogue, ldb, maxTrips int64, extra []byte, what string) error {
	bd, as, bs := make([]uint32, len(f.bdims)), make([]uint32, len(f.bdims)), make([]uint32, len(f.bdims))
	for i := range f.bdims {
		bd[i], as[i], bs[i] = uint32(f.bdims[i]), uint32(f.aStride[i]), uint32(f.bStride[i])
	}
	ktiles := (f.k + t.bk - 1) / t.bk
	for z0 := int64(0); z0 < t.batch; z0 += t.maxg {
		gz := min(t.batch-z0, t.maxg)
		err := kChunks(ktiles, maxTrips, func(begin, end int64, accumulate, last uint32) error {
			p := matmulParams(f, f.n, f.k, begin*t.bk, min(end*t.bk, f.k), accumulate, last, z0, epi, ldb, bd, as, bs)
			p = append(p, extra...)
			if err := b.Dispatch(kern, inputs, []int32{dst}, p, [3]uint32{uint32(t.gx), uint32(t.gy), uint32(gz)}); err != nil {
				return fmt.Errorf("ops: %s: %w", what, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

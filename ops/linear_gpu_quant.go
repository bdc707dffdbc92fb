package ops

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// The GPU family's weight-word GEMV for the weight-quantized linears
// (linear_family.go entries "gpu/q4gemv": linear_q4gsw and
// linear_dq8ca_q4gsw; "gpu/qcgemv": linear_qcs4w and _weight_int8pack_mm),
// shaders/gemv_quant.wgsl, for up to gpuQuantMaxRows input rows, in its
// plain form and, for linear_q4gsw, the fused one of the decode-step
// linear groups (fuse_linear.go: q/k/v + norm, SwiGLU + norm, the
// classifier + norm). It replaces gemv_gpu.wgsl's q4 and int8 forms
// ("gpu/qgemv", which stays in the table behind it: Config.SkipKernels
// "gpu/q4gemv,gpu/qcgemv" selects it again, so one GPU run measures both).
//
// Why this shape (../shared/spec/gpu-predictions.md §3, §4.1; not measured
// on a GPU yet): gemv_gpu.wgsl gives each lane a 16-byte unit of 32
// nibbles, so its activations are 8 vec4s 128 bytes a lane apart, about
// 292 L1 wavefronts a warp per 512 bytes of codes, plus scale loads
// strided by the scale row, and 32 int→float conversions a unit: the
// prediction is 0.45–0.7 TB/s on an H100 against a 1.5 TB/s target. Here,
// as in llama.cpp's Vulkan mul_mat_vec (one u32 of 8 nibbles a lane,
// NUM_ROWS rows sharing the activations) and ggml-webgpu's Q4_0 GEMV:
//   - a lane reads one 32-bit word a row a step (a warp 128 contiguous
//     bytes), its activations 32 bytes (int8: 16) a lane apart, which a
//     GPU's L1 serves in 16 wavefronts a step for all the warp's rows;
//   - each warp computes gpuQuantRowsPerWarp rows (4 at one input row),
//     reusing the activations in registers: about 20 wavefronts per 512
//     bytes of codes;
//   - nibbles decode by ORing them into the mantissa of 2^23 in place
//     and subtracting (LOP3 + FADD a code, no I2F), against activations
//     pre-scaled by powers of two;
//   - the grouped scales are packed per output row at load
//     (packRowScales: TransposeSpec through the packed-weight cache), so a
//     warp's lanes read one sector of a row's scales. The packed copy is
//     extra memory (the scales' size, 1/4 of the codes at g = 32): the
//     exported scales stay for the kernels of more rows. Scales that
//     cannot be packed (not a weight, or more than 1,048,560 output rows,
//     past TransposeSpec's grid) leave the call to gpu/qgemv.
//
// What the GPU run must measure: BenchmarkLinearQ4gsw (q4-GB/s against
// q4old-GB/s in the same iterations, M1 at K = N = 4096 and 8192, target
// 1,500 GB/s of codes and scales), bench/llm -q4 64 -kernels gpu
// -baseline-kernels -baseline-skip gpu/q4gemv,gpu/qcgemv (the fused
// forms in a decode step against the old ones), and whether 2 rows a warp
// (more workgroups, fewer registers) beats 4 at N ≤ 1024.
const (
	gpuQuantWarps    = 8     // 32-lane warps a workgroup
	gpuQuantLanes    = 32    // lanes along K a weight row
	gpuQuantMaxRows  = 8     // input rows a dispatch takes (M ≤ 8)
	gpuQuantUnroll   = 2     // words in flight a lane a row
	gpuQuantMaxTrips = 16384 // K-loop trips a lane a dispatch, under llvmpipe's 65535
)

// warpsFor returns the 32-lane warps a workgroup of a GPU-family kernel
// that wants want of them gets on a device of profile p: want, or fewer
// where the device allows fewer than want·32 invocations a workgroup
// (WebGPU guarantees 256; 0, unknown, is taken as that), a power of two.
// The shapes are otherwise the same on every GPU until GPU runs say
// otherwise (the tuning notes name what they must measure).
func warpsFor(p DeviceProfile, want int) int {
	inv := int(p.MaxInvocations)
	if inv == 0 {
		inv = 256
	}
	w := want
	for w > 1 && w*gpuQuantLanes > inv {
		w /= 2
	}
	return w
}

// Table entry names of the weight-word GEMV.
const (
	gpuQ4GEMVName = "gpu/q4gemv"
	gpuQCGEMVName = "gpu/qcgemv"
)

// gpuQuantRowsPerWarp is how many weight rows a warp computes for rows
// input rows (a power of two): 4 at one row, fewer as the rows' sums and
// activations fill the registers (rows·rowsPerWarp ≤ 8 sums a lane but
// at 8 rows).
func gpuQuantRowsPerWarp(rows int) int {
	return max(1, 4/rows)
}

// gpuQuantFormat returns gemv_quant.wgsl's weight format for quantized
// call c, or "" when it cannot read it: "q4" for linear_q4gsw and
// linear_dq8ca_q4gsw codes (K and the group size multiples of 8: whole
// words, a word within one group), "q4h" for linear_qcs4w (K % 8 == 0),
// "int8" for _weight_int8pack_mm.
func gpuQuantFormat(c qlinearCall) string {
	sh := c.sh
	switch {
	case sh.Int8 && !sh.Grouped && !sh.DQ8 && !sh.Unaligned && c.rowBytes == c.k && c.k%4 == 0:
		return "int8"
	case !sh.Int8 && sh.Grouped && !sh.SplitScale && !sh.HighEven && !sh.Zeros && !sh.Unaligned &&
		c.k%8 == 0 && c.g%8 == 0 && c.rowBytes*2 == c.k:
		return "q4"
	case !sh.Int8 && !sh.Grouped && sh.HighEven && !sh.Zeros && !sh.DQ8 && c.k%8 == 0 && c.rowBytes*2 == c.k:
		return "q4h"
	}
	return ""
}

// gpuQuantFits reports whether the weight-word GEMV serves c under cfg:
// a format it reads (grouped ones with their scales packed per row), at
// most gpuQuantMaxRows rows, not turned off by NoQGEMV or MatmulNoGEMV.
func gpuQuantFits(c *linearCall, cfg Config, grouped bool) bool {
	if c.format != formatQuant || cfg.NoQGEMV || cfg.Matmul == MatmulNoGEMV || c.q.m > gpuQuantMaxRows {
		return false
	}
	f := gpuQuantFormat(c.q)
	if grouped {
		return f == "q4" && c.canRowScales
	}
	return f == "int8" || f == "q4h"
}

// packQuantScales packs quantized call c's grouped scales per output row
// (packRowScales) when the entries c's family may pick at any M read them
// so (linearPacks), and records the packed tensor in c; a scales tensor
// that cannot be packed (no constant, or first met when re-recording)
// leaves c without it, and the table picks a kernel that reads them as
// exported.
func packQuantScales(b Builder, c *linearCall) error {
	c.canRowScales, c.rowScales = false, -1
	if c.format != formatQuant || !c.q.sh.Grouped || c.q.sh.Zeros {
		return nil
	}
	c.canRowScales = true
	if !slices.Contains(linearPacks(familyOf(b), c, b.Config()), packRowScales) {
		c.canRowScales = false
		return nil
	}
	c.canRowScales = false
	s, err := b.Tensor(c.q.scales)
	if err != nil {
		return err
	}
	spec, err := TransposeSpec(s, b.MaxWorkgroupsPerDim())
	if err != nil || len(s.Dims) != 2 {
		return nil
	}
	t, err := b.PackWeight(c.q.scales, spec)
	if errNoPack(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c.canRowScales, c.rowScales, c.rowScalesG = true, t.ID, s.Dims[0]
	return nil
}

// gpuQuantShader is the template data of shaders/gemv_quant.wgsl.
type gpuQuantShader struct {
	Format  string // q4, q4h, int8
	Grouped bool   // scales per group, packed per row (else per channel)
	DQ8     bool
	Bias    bool
	Act     string
	Res     string
	Gate    bool
	Rows    []int // input rows a workgroup (plain form)
	RowsW   []int // weight rows a warp
	Warps   int
	WG      int
	Unroll  []int // 0 .. words in flight − 1
	NAcc    int   // sums a lane: rows·rowsPerWarp (fused: rowsPerWarp, twice with Pair)
	AccIdx  []int // 0 .. NAcc − 1

	// The fused form.
	Fused, NormW, Pair bool
	XW                 int   // words a weight row (the staged input: 2·XW vec4s)
	WGStrides          []int // the norm prologue's tree, WG/2 .. 1
	fusedLayout

	qBindings
}

// gpuQuantParams is the Go twin of gemv_quant.wgsl's plain Params (48
// bytes).
type gpuQuantParams struct {
	M, N, KW, KBegin, KEnd, Accumulate, Last, GW, LS, XR uint32
	ActLo, ActHi                                         float32
}

// fusedQuantParams is the Go twin of gemv_quant.wgsl's fused Params (80
// bytes).
type fusedQuantParams struct {
	KW, Len        uint32
	Eps            float32
	NBlk           uint32
	N, Blk, GW, LS [4]uint32
}

// leBytes packs a fixed-size struct little-endian, as WGSL lays it out.
func leBytes(p any) []byte {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, p); err != nil {
		panic(err) // fixed-size fields only
	}
	return buf.Bytes()
}

// quantWordsPerRow is a weight row's length in 32-bit words for format.
func quantWordsPerRow(format string, k int64) int64 {
	if format == "int8" {
		return k / 4
	}
	return k / 8
}

// recordGPUQuant records quantized linear c (gpuQuantFits) with
// gemv_quant.wgsl's plain form, writing dst and applying epi: one
// dispatch per K chunk, the grid's x (folded into y past the limit) over
// column blocks of warps·rowsPerWarp rows (gpuQuantWarps warps, fewer on
// a device that allows fewer invocations: warpsFor).
func recordGPUQuant(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
	q := c.q
	warps := warpsFor(b.DeviceProfile(), gpuQuantWarps)
	sh := gpuQuantShader{Format: gpuQuantFormat(q), Grouped: q.sh.Grouped, DQ8: q.sh.DQ8, Bias: q.bias >= 0,
		Act: epi.act, Res: epi.res, Gate: epi.gate, Warps: warps, WG: warps * gpuQuantLanes}
	if sh.Format == "" || (sh.Grouped && !c.canRowScales) {
		return Errorf(-1, "the GPU weight-word GEMV cannot read this quantized weight")
	}
	sh.Rows = matmulTile(q.m, gpuQuantMaxRows)
	sh.RowsW = matmulTile(int64(gpuQuantRowsPerWarp(len(sh.Rows))), 4)
	sh.Unroll = matmulTile(gpuQuantUnroll, gpuQuantUnroll)
	if sh.DQ8 {
		// Its quantizer is big code: one word a trip keeps one call site
		// per row (llvmpipe compiles a big kernel for seconds).
		sh.Unroll = []int{0}
	}
	sh.NAcc = len(sh.Rows) * len(sh.RowsW)
	sh.AccIdx = matmulTile(int64(sh.NAcc), sh.NAcc)
	if q.m*q.n > matmulMaxElems {
		return Errorf(-1, "output of %d×%d elements is too large", q.m, q.n)
	}
	scales := q.scales
	var gw, ls int64
	if sh.Grouped {
		scales, gw, ls = c.rowScales, q.g/8, c.rowScalesG
	}
	inputs := sh.bind([]int32{q.x, q.w, scales}, sh.DQ8, q.xs, q.xz, q.bias, epi)
	kern, err := shaders.Render("gemv_quant.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	perBlock := int64(sh.Warps * len(sh.RowsW))
	groups, err := Grid(uint64((q.n+perBlock-1)/perBlock), 1, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	rowBlocks := (q.m + int64(len(sh.Rows)) - 1) / int64(len(sh.Rows))
	if rowBlocks > int64(b.MaxWorkgroupsPerDim()) {
		return Errorf(-1, "M=%d needs %d row blocks, over the %d per dimension limit", q.m, rowBlocks, b.MaxWorkgroupsPerDim())
	}
	groups[2] = uint32(rowBlocks)
	kw := quantWordsPerRow(sh.Format, q.k)
	p := gpuQuantParams{M: uint32(q.m), N: uint32(q.n), KW: uint32(kw), GW: uint32(gw), LS: uint32(ls), XR: uint32(q.k / 4),
		ActLo: epi.lo, ActHi: epi.hi}
	return kChunks(kw, gpuQuantMaxTrips*gpuQuantLanes, func(begin, end int64, accumulate, last uint32) error {
		p.KBegin, p.KEnd, p.Accumulate, p.Last = uint32(begin), uint32(end), accumulate, last
		if err := b.Dispatch(kern, inputs, []int32{dst}, leBytes(p), groups); err != nil {
			return fmt.Errorf("ops: quantized linear: %w", err)
		}
		return nil
	})
}

// fusedQuantFormat is the fused linear-group format (fusedLinear.format)
// of linear_q4gsw weights that the weight-word GEMV reads: the weight and
// its scales packed per row, gw words a group, lds groups a packed row.
const fusedQuantFormat = "q4w"

// fusableGPUQuant returns linear_q4gsw call lc (one row, its scales
// packed: packQuantScales) as a member of a fused group for the GPU
// family's weight-word GEMV (fuse_linear.go's fusableQ4Linear asks when
// the table picks gpuQ4GEMVName for it), op index i, output out.
func fusableGPUQuant(lc *linearCall, out int32) (fusedLinear, bool) {
	q := lc.q
	if !lc.canRowScales || gpuQuantFormat(q) != "q4" || q.sh.DQ8 || q.m != 1 {
		return fusedLinear{}, false
	}
	return fusedLinear{out: out, weight: q.w, format: fusedQuantFormat, n: q.n,
		scales: lc.rowScales, gw: q.g / 8, lds: lc.rowScalesG}, true
}

// fusedQuantRowsPerWarp is the rows a warp of the fused form computes for
// a norm over k and nacc sums a row (2 with SwiGLU's pair): 4 when the
// staged input (4k bytes) and the sums (nacc·4 of WG floats) fit the
// device's workgroup memory, else fewer.
func fusedQuantRowsPerWarp(b Builder, k int64, nacc, warps int) int {
	for r := 4; r > 1; r /= 2 {
		if 4*k+int64(4*warps*gpuQuantLanes*r*nacc) <= workgroupStorage(b) {
			return r
		}
	}
	return 1
}

// recordFusedGPUQuant records one dispatch of gemv_quant.wgsl's fused
// form: the linears lins (format fusedQuantFormat, K = k) of norm's
// output, writing outs (one per linear, or with pair the one SwiGLU
// output). fuse_linear.go's recordFusedGEMV calls it for that format.
func recordFusedGPUQuant(b Builder, norm *fusedNorm, lins []fusedLinear, outs []int32, pair bool, k int64) error {
	if norm == nil || k%8 != 0 {
		return Errorf(-1, "fused quantized linears need a norm over whole words")
	}
	nacc := 1
	if pair {
		nacc = 2
	}
	warps := warpsFor(b.DeviceProfile(), gpuQuantWarps)
	sh := gpuQuantShader{Format: "q4", Grouped: true, Fused: true, Pair: pair, NormW: norm.w >= 0,
		Warps: warps, WG: warps * gpuQuantLanes, XW: int(k / 8)}
	sh.RowsW = matmulTile(int64(fusedQuantRowsPerWarp(b, k, nacc, warps)), 4)
	sh.Unroll = matmulTile(gpuQuantUnroll, gpuQuantUnroll)
	sh.NAcc = len(sh.RowsW) * nacc
	sh.AccIdx = matmulTile(int64(sh.NAcc), sh.NAcc)
	for s := sh.WG / 2; s >= 1; s /= 2 {
		sh.WGStrides = append(sh.WGStrides, s)
	}
	for i, l := range lins {
		if l.format != fusedQuantFormat {
			return Errorf(-1, "fused quantized linears: weight %d is %q", i, l.format)
		}
	}
	inputs := sh.bindWeights(norm, sh.NormW, lins)
	p := fusedQuantParams{KW: uint32(k / 8), Len: uint32(k), Eps: norm.eps}
	for i, l := range lins {
		inputs = append(inputs, l.scales)
		p.GW[i], p.LS[i] = uint32(l.gw), uint32(l.lds)
	}
	cols := int64(sh.Warps * len(sh.RowsW))
	var blk int64
	p.N, p.Blk, blk = fusedBlocks(lins, pair, cols, len(outs))
	p.NBlk = uint32(blk)
	sh.bindOutputs(len(inputs), len(outs))
	kern, err := shaders.Render("gemv_quant.wgsl", sh, "main", shaders.Layout(len(inputs), len(outs), true), uint32(sh.WG))
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(blk), 1, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	if err := b.Dispatch(kern, inputs, outs, leBytes(p), grid); err != nil {
		return fmt.Errorf("ops: fused linears: %w", err)
	}
	return nil
}

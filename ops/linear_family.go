package ops

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// The linear family: every op that multiplies activations by a weight or a
// second matrix (aten.linear, mm, bmm, addmm, matmul; FLOAT16 linear
// weights as packed halves; the weight-quantized linears linear_q4gsw,
// linear_dq8ca_q4gsw, linear_qcs4w, _weight_int8pack_mm,
// linear_weight_int4; the int8 q8ta linears) checks its arguments into a
// linearCall and records it through runLinear, which picks the kernel from
// ONE table, linearKernels: the first entry of the load's kernel family
// (Resolve: the device profile's class unless Config.Family says
// otherwise) that fits the call. Each entry says which calls it fits, the
// weight packing it reads and how it records; recordLinear applies the
// epilogue package lower fused once for all of them (fuse_epilogue.go),
// and the kernels share one K-chunk
// loop (kChunks) and one epilogue and store block (common.tmpl
// linear_epilogue and linear_store).
//
// Which weight packings a call needs is asked of the table too
// (linearPacks): the packings of the entries the call's family would pick
// at any M, made whatever the live M is (so that a re-recording for a new
// M never packs), and, at load, what the analysis defers (LoadPackFor).

// linearFormat is how a linear-family call's weight is held.
type linearFormat uint8

const (
	// formatF32: a float32 B [K, N], or with transB [N, K] (linear's
	// weight as exported; a FLOAT16 one may also be read as packed
	// halves, linearCall.canHalf).
	formatF32 linearFormat = iota
	// formatQuant: 4-bit or 8-bit weight codes dequantized in registers,
	// float32 activations (qlinearCall.sh says which codes and scales).
	formatQuant
	// formatQ8ta: int8 weights and int8 (or float32) activations with an
	// integer accumulator (q8ta linears).
	formatQ8ta
)

// weightPack is a layout a kernel reads a linear weight in.
type weightPack uint8

const (
	packNone      weightPack = iota // the weight as exported
	packTranspose                   // float32 [N, K] transposed to [K, N] (TransposeSpec, Config.PackLinear)
	packHalf                        // FLOAT16 [N, K] as packed halves (HalfWeightSpec)
	packRowScales                   // grouped scales [G, ldS] transposed to [ldS, G], per output row (linear_gpu_quant.go)
)

// linearCall is one linear-family call, its arguments checked.
type linearCall struct {
	format linearFormat
	f      matmulCall   // formatF32 (f.b is the weight as exported)
	q      qlinearCall  // formatQuant
	q8     q8LinearCall // formatQ8ta
	// canHalf: f's weight is a FLOAT16 linear weight the builder can
	// pack as halves (K % 8 == 0, not Config.NoHalfWeights); half is the
	// packed tensor once made (-1 before).
	canHalf bool
	half    int32
	// canTranspose: f's weight may be packed to [K, N]
	// (Config.PackLinear); transposed is the packed tensor once made.
	canTranspose bool
	transposed   int32
	// canRowScales: q's grouped scales are packed per output row
	// (packRowScales, packQuantScales), rowScales the packed tensor
	// [ldS, G] and rowScalesG its row stride (G).
	canRowScales bool
	rowScales    int32
	rowScalesG   int64
}

// shape returns the call's M, N, batch count and output.
func (c *linearCall) shape() (m, n, batch int64, out int32) {
	switch c.format {
	case formatQuant:
		return c.q.m, c.q.n, 1, c.q.out
	case formatQ8ta:
		return c.q8.m, c.q8.n, 1, c.q8.out
	}
	return c.f.m, c.f.n, NumelOf(c.f.bdims), c.f.out
}

// withRows returns a copy of c with M = m (for asking the table what a
// call of another M would run).
func (c *linearCall) withRows(m int64) *linearCall {
	d := *c
	switch c.format {
	case formatQuant:
		d.q.m = m
	case formatQ8ta:
		d.q8.m = m
	default:
		d.f.m = m
	}
	return &d
}

// halfCall reports whether c is a linear whose weight is (or may be) read
// as packed halves: a FLOAT16 weight, one batch, [N, K] with K % 8 == 0.
func (c *linearCall) halfCall() bool {
	return c.format == formatF32 && c.canHalf && len(c.f.bdims) == 0 && c.f.transB && c.f.k%8 == 0
}

// gemvRow reports whether c is a float32 linear the GEMV kernels take:
// weight [N, K] as exported, one batch.
func (c *linearCall) gemvRow() bool {
	return c.format == formatF32 && len(c.f.bdims) == 0 && c.f.transB
}

// linearKernel is one entry of the linear family's table.
type linearKernel struct {
	// name is the family (or "any" for both) and the kernel.
	name string
	// family is the family whose loads may pick the entry; FamilyAuto:
	// either.
	family Family
	// weight is the packing the kernel reads the weight in.
	weight weightPack
	// noEpilogue: the kernel fuses no epilogue (the q8ta linears apply
	// their own activation argument).
	noEpilogue bool
	// fits reports whether the kernel serves c under the load's choices.
	fits func(c *linearCall, cfg Config) bool
	// record records c, writing dst (the call's output, or the fused
	// epilogue's) and applying epi.
	record func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error
}

// linearKernels is the linear family's kernel table, in order of
// preference: runLinear takes the first entry of the load's family that
// fits. The shapes behind each kernel, and the devices they were measured
// on, are in the comments of its record function and its shader.
var linearKernels = []linearKernel{
	// FLOAT16 linear weights, packed halves at every M (the float32 copy
	// need not exist: the analysis defers it, see LoadPackFor).
	{name: "cpu/gemv-half", family: FamilyCPU, weight: packHalf,
		fits: func(c *linearCall, cfg Config) bool { return c.halfCall() },
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			return recordGEMVHalf(b, c.f, epi, dst, c.half)
		}},
	{name: "gpu/gemv-half", family: FamilyGPU, weight: packHalf,
		fits:   func(c *linearCall, cfg Config) bool { return c.halfCall() && gpuGEMVRows(cfg, c.f.m) },
		record: recordGPUGEMVFloat},
	{name: "gpu/tiled-half", family: FamilyGPU, weight: packHalf,
		fits:   func(c *linearCall, cfg Config) bool { return c.halfCall() },
		record: recordGPUTiled},

	// float32.
	{name: "cpu/gemv", family: FamilyCPU,
		fits: func(c *linearCall, cfg Config) bool {
			return c.gemvRow() && useGEMV(cfg.Matmul, c.f.m, c.f.k, c.f.n)
		},
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			return recordGEMV(b, c.f, epi, dst)
		}},
	{name: "cpu/tiled-packed", family: FamilyCPU, weight: packTranspose,
		fits: func(c *linearCall, cfg Config) bool { return c.format == formatF32 && c.canTranspose && c.f.transB },
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			f := c.f
			f.b, f.transB = c.transposed, false
			return recordTiled(b, f, epi, dst)
		}},
	{name: "cpu/tiled", family: FamilyCPU,
		fits: func(c *linearCall, cfg Config) bool { return c.format == formatF32 },
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			return recordTiled(b, c.f, epi, dst)
		}},
	{name: gpuSkinnyName, family: FamilyGPU,
		fits:   gpuSkinnyFits,
		record: recordGPUSkinny},
	{name: "gpu/gemv", family: FamilyGPU,
		fits:   func(c *linearCall, cfg Config) bool { return c.gemvRow() && gpuGEMVRows(cfg, c.f.m) },
		record: recordGPUGEMVFloat},
	{name: gpuTiled128Name, family: FamilyGPU,
		fits:   func(c *linearCall, cfg Config) bool { return gpuTiled128Fits(c) },
		record: recordGPUTiled128},
	{name: "gpu/tiled", family: FamilyGPU,
		fits:   func(c *linearCall, cfg Config) bool { return c.format == formatF32 },
		record: recordGPUTiled},

	// Weight-quantized.
	{name: gpuQ4GEMVName, family: FamilyGPU, weight: packRowScales,
		fits:   func(c *linearCall, cfg Config) bool { return gpuQuantFits(c, cfg, true) },
		record: recordGPUQuant},
	{name: gpuQCGEMVName, family: FamilyGPU,
		fits:   func(c *linearCall, cfg Config) bool { return gpuQuantFits(c, cfg, false) },
		record: recordGPUQuant},
	{name: "cpu/qgemv", family: FamilyCPU,
		fits: func(c *linearCall, cfg Config) bool { return c.format == formatQuant && useQGEMV(c.q) && !cfg.NoQGEMV },
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			return recordQGEMV(b, c.q, epi, dst)
		}},
	{name: "gpu/qgemv", family: FamilyGPU,
		fits: func(c *linearCall, cfg Config) bool {
			return c.format == formatQuant && gpuQGEMVFormat(c.q) != "" && !cfg.NoQGEMV && gpuGEMVRows(cfg, c.q.m)
		},
		record: recordGPUGEMVQuant},
	{name: "gpu/qtiled", family: FamilyGPU,
		fits:   func(c *linearCall, cfg Config) bool { return c.format == formatQuant },
		record: recordGPUTiledQuant},
	{name: "cpu/qlinear", family: FamilyCPU,
		fits: func(c *linearCall, cfg Config) bool { return c.format == formatQuant },
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			return recordQLinearTiled(b, c.q, epi, dst)
		}},

	// int8 × int8.
	{name: "any/q8ta", family: FamilyAuto, noEpilogue: true,
		fits: func(c *linearCall, cfg Config) bool { return c.format == formatQ8ta },
		record: func(b Builder, c *linearCall, epi matmulEpilogue, dst int32) error {
			return recordQ8LinearKernel(b, c.q8)
		}},
}

// chooseLinear returns the first entry of linearKernels for family fam
// that fits c and that cfg does not skip (Config.SkipKernels), or nil.
func chooseLinear(fam Family, c *linearCall, cfg Config) *linearKernel {
	for i := range linearKernels {
		k := &linearKernels[i]
		if (k.family == fam || k.family == FamilyAuto) && !cfg.skipsKernel(k.name) && k.fits(c, cfg) {
			return k
		}
	}
	return nil
}

// probeRows are the M values at which linearPacks asks the table what a
// call would run: every threshold the entries test (one row, the GEMV
// kernels' 16, more) on both sides.
var probeRows = []int64{1, 2, 8, 16, 17, 64, 1024}

// linearPacks returns the weight packings the entries family fam would
// pick for c at any M read (packNone excluded), in table order.
func linearPacks(fam Family, c *linearCall, cfg Config) []weightPack {
	var packs []weightPack
	for _, m := range probeRows {
		if k := chooseLinear(fam, c.withRows(m), cfg); k != nil && k.weight != packNone && !slices.Contains(packs, k.weight) {
			packs = append(packs, k.weight)
		}
	}
	return packs
}

// packLinearWeight makes the packings c's family may read of its weight
// (linearPacks), whatever M is: the first recording creates them and a
// re-recording for another M finds them. A packing that cannot be made
// (not a constant, first met when re-recording) is dropped from c (the
// table then picks a kernel that reads the weight as exported).
func packLinearWeight(b Builder, c *linearCall, w Tensor) error {
	c.half, c.transposed = -1, -1
	for _, pk := range linearPacks(familyOf(b), c, b.Config()) {
		switch pk {
		case packHalf:
			id, ok, err := linearHalf(b, c.f.b, w)
			if err != nil {
				return err
			}
			if c.canHalf = ok; ok {
				c.half = id
			}
		case packTranspose:
			id, ok, err := linearPacked(b, c.f.b, w)
			if err != nil {
				return err
			}
			if c.canTranspose = ok; ok {
				c.transposed = id
			}
		}
	}
	c.canHalf = c.canHalf && c.half >= 0
	c.canTranspose = c.canTranspose && c.transposed >= 0
	return nil
}

// runLinear records c alone: it picks the kernel from linearKernels for
// the load's family and the live M and records it. A call with nothing to
// compute records nothing.
func runLinear(b Builder, c *linearCall) error {
	_, err := recordLinear(b, c, nil)
	return err
}

// recordLinear is runLinear applying epi, when set, in the kernel
// (fuse_epilogue.go); done is false, and nothing recorded, when epi is
// set and the call's kernel cannot apply it (nothing to compute, a weight
// held in chunks, the q8ta kernels).
func recordLinear(b Builder, c *linearCall, epi *matmulEpilogue) (done bool, err error) {
	m, n, batch, out := c.shape()
	if m == 0 || n == 0 || batch == 0 {
		return epi == nil, nil
	}
	if err := checkSkipKernels(b.Config()); err != nil {
		return false, err
	}
	if chunked(b, c.weights()...) {
		if epi != nil {
			return false, nil
		}
		_, err := runLinearChunked(b, c) // a weight held in chunks (chunk.go)
		return true, err
	}
	if err := packQuantScales(b, c); err != nil {
		return false, err
	}
	k := chooseLinear(familyOf(b), c, b.Config())
	if k == nil {
		return false, Errorf(-1, "no %v-family kernel fits this call", familyOf(b))
	}
	if epi == nil {
		return true, k.record(b, c, matmulEpilogue{}, out)
	}
	if k.noEpilogue {
		return false, nil
	}
	return true, k.record(b, c, *epi, epi.out)
}

// weights returns the tensors of the call that may be weights held in
// chunks.
func (c *linearCall) weights() []int32 {
	switch c.format {
	case formatQuant:
		return []int32{c.q.w, c.q.scales, c.q.bias}
	case formatQ8ta:
		return []int32{c.q8.w}
	}
	return []int32{c.f.b, c.f.bias}
}

// kChunks calls fn for each chunk [begin, end) of trips loop trips of at
// most maxTrips (one dispatch each), with accumulate set from the second
// on and last on the final one. It calls fn once, for [0, 0), when trips
// is 0 (the dispatch that writes the bias, or zeros). Every linear-family
// kernel splits K this way: llvmpipe silently stops a loop after 65535
// back-edges per invocation, so each dispatch stays below that.
func kChunks(trips, maxTrips int64, fn func(begin, end int64, accumulate, last uint32) error) error {
	for begin := int64(0); begin == 0 || begin < trips; begin += maxTrips {
		end := min(begin+maxTrips, trips)
		var accumulate, last uint32
		if begin > 0 {
			accumulate = 1
		}
		if end == trips {
			last = 1
		}
		if err := fn(begin, end, accumulate, last); err != nil {
			return err
		}
	}
	return nil
}

// errNoPack is linearHalf's and linearPacked's "cannot pack now" (a
// weight that is no constant, or first met when re-recording).
func errNoPack(err error) bool { return errors.Is(err, ErrArg) || errors.Is(err, ErrNotPacked) }

// LinearKernelNames lists the names of linearKernels' entries in order of
// preference (the names Config.SkipKernels takes).
func LinearKernelNames() []string {
	names := make([]string, len(linearKernels))
	for i, k := range linearKernels {
		names[i] = k.name
	}
	return names
}

// checkSkipKernels returns an error naming the first of cfg.SkipKernels
// that is no entry of linearKernels.
func checkSkipKernels(cfg Config) error {
	for _, name := range cfg.skipped() {
		if !slices.ContainsFunc(linearKernels, func(k linearKernel) bool { return k.name == name }) {
			return fmt.Errorf("%w: Config.SkipKernels: no linear-family kernel %q (have %s)", ErrConfig, name, strings.Join(LinearKernelNames(), ", "))
		}
	}
	return nil
}

// linearFamilyOps are the ops whose kernels come from linearKernels.
var linearFamilyOps = []string{
	"aten.linear.default", "aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.matmul.default",
	"et_vk.linear_q4gsw.default", "et_vk.linear_dq8ca_q4gsw.default", "et_vk.linear_qcs4w.default",
	"aten._weight_int8pack_mm.default", "et_vk.linear_weight_int4.default",
	"et_vk.linear_q8ta_q8csw.default", "et_vk.q8ta_linear.default", "et_vk.q8ta_linear_gemv.default",
}

// LinearFamilyOps lists the ops whose kernels the kernel family decides
// (the linear family's table): the ops a conformance run must cover under
// every family. Every other op records the same kernels in every family.
func LinearFamilyOps() []string { return slices.Clone(linearFamilyOps) }

// linearLoadPack is aten.linear's Op.LoadPack: its weight (argument 1) is
// read only through a packing when the entries family fam picks for that
// weight read the same packing at every M (linearPacks' probe rows): a
// FLOAT16 weight as packed halves, in both families today.
func linearLoadPack(arg int, w WeightInfo, fam Family, cfg Config) (LoadPack, bool) {
	if arg != 1 || w.DType != serialization.Float16 || !HalfOnlyWeight(w.Dims) || cfg.NoHalfWeights {
		return LoadPack{}, false
	}
	c := &linearCall{format: formatF32, f: matmulCall{n: w.Dims[0], k: w.Dims[1], transB: true, alpha: 1, beta: 1, bias: -1},
		canHalf: true, canTranspose: cfg.PackLinear, half: -1, transposed: -1}
	for _, m := range probeRows {
		if k := chooseLinear(fam, c.withRows(m), cfg); k == nil || k.weight != packHalf {
			return LoadPack{}, false
		}
	}
	return LoadPack{Name: "half", Spec: HalfWeightSpec}, true
}

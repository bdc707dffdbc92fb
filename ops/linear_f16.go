package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// FLOAT16 linear weights (force_fp16 exports) are float32 on the device
// like every FLOAT16 tensor (Tensor.Half), which doubles the bytes a
// linear streams. A FLOAT16 constant weight with K%8 == 0 is read instead
// from a copy packed as halves (HalfWeightSpec, through the graph's packer
// and its packed-weight cache): two bytes a weight, eight halves per
// vec4<u32> load, float32 accumulation, at every M, in both kernel
// families (the linear family's table, linear_family.go: the cpu family's
// shaders/gemv_f16.wgsl, whose GEMV with 16 output columns per invocation
// from 8 rows up beats the float32 tiled kernel on lavapipe; the gpu
// family's gemv_gpu.wgsl and matmul_gpu.wgsl). A weight that nothing but
// linears read then needs no float32 copy: the graph asks the table
// (linearLoadPack, through LoadPackFor), defers it and packs it at load.
// Config.NoHalfWeights turns the packed path off.

// halfPackWG is pack_f16.wgsl's workgroup size.
const halfPackWG = 64

// HalfWeightSpec is the PackSpec that packs a FLOAT16 linear weight w
// ([N, K], held as float32 whose values are halves) into rows of K8/2 u32
// words, K8 = K rounded up to 8, two halves a word, zero past K (exact).
func HalfWeightSpec(w Tensor, maxPerDim uint32) (PackSpec, error) {
	if len(w.MaxDims) != 2 || w.DType != serialization.Float32 || !w.Half {
		return PackSpec{}, Errorf(-1, "half packing needs a 2-D float16 weight, have %v %v (half %v)", w.DType, w.MaxDims, w.Half)
	}
	n, k := w.MaxDims[0], w.MaxDims[1]
	words := (k + 7) / 8 * 4
	if n*words >= 1<<32 || k >= 1<<31 {
		return PackSpec{}, Errorf(-1, "weight %v is too large to pack", w.MaxDims)
	}
	grid, err := Grid(uint64(n*words), halfPackWG, maxPerDim)
	if err != nil {
		return PackSpec{}, err
	}
	kern, err := shaders.Render("pack_f16.wgsl", struct{}{}, "main", shaders.Layout(1, 1, true), halfPackWG)
	if err != nil {
		return PackSpec{}, err
	}
	var p Params
	p.U32(uint32(n)).U32(uint32(k)).U32(uint32(words)).U32(grid[0] * halfPackWG)
	return PackSpec{Name: "half", Kernel: kern, Params: p.Bytes(), Groups: grid, DType: serialization.Int32, Dims: []int64{n, words}}, nil
}

// linearHalf returns the id of linear weight w (value id) packed as halves
// when w is a FLOAT16 weight (a constant or a prepack output of one), K is
// a positive multiple of 8 and the builder can pack; ok is false
// otherwise. Like linearPacked it packs whatever M is, so that the first
// recording creates the packed copy and a re-recording never packs.
func linearHalf(b Builder, id int32, w Tensor) (int32, bool, error) {
	if !canHalf(b, w) {
		return 0, false, nil
	}
	spec, err := HalfWeightSpec(w, b.MaxWorkgroupsPerDim())
	if err != nil {
		return 0, false, nil
	}
	t, err := b.PackWeight(id, spec)
	if errNoPack(err) {
		// Not a weight (a graph input, an op's output), or first met
		// when re-recording: the float32 copy serves.
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return t.ID, true, nil
}

// HalfOnlyWeight reports whether a FLOAT16 linear weight of serialized
// dims can be read as packed halves (unless Config.NoHalfWeights): 2-D, K
// a positive multiple of 8, not empty. linearLoadPack asks it before the
// table, for the graph's analysis (the float32 copy then gets no buffer
// and the weight is packed at load).
func HalfOnlyWeight(dims []int64) bool {
	return len(dims) == 2 && dims[0] > 0 && dims[1] > 0 && dims[1]%8 == 0
}

// canHalf reports whether linear weight w may be read as packed halves: a
// FLOAT16 weight [N, K], K a positive multiple of 8, not
// Config.NoHalfWeights.
func canHalf(b Builder, w Tensor) bool {
	return !b.Config().NoHalfWeights && w.Half && len(w.Dims) == 2 && w.Dims[1] > 0 && w.Dims[1]%8 == 0 && w.Numel > 0
}

// halfManyRowsCols is the output columns per invocation of the half GEMV
// from halfManyRows rows up (short and long prefill). K = N = 1024,
// GFLOP/s against the float32 tiled kernel on the float32 copy, same run,
// 3 iterations each: M = 8: 4 columns 0.82–0.86×, 8 1.03–1.19×, 16
// 1.37–1.46×; M = 16: 0.68–0.81×, 1.10–1.17×, 1.35–1.55×; M = 64:
// 0.55–0.61×, 0.94–1.04×, 1.17–1.37×. Fewer rows keep gemvCols' choice
// (8 columns: 1.46–1.92× the float32 GEMV at M = 1, K = N = 2048).
const (
	halfManyRows     = 8
	halfManyRowsCols = 16
)

// recordGEMVHalf is recordGEMV with the weight read as packed halves
// (shaders/gemv_f16.wgsl): K-loop trips count eight k each.
func recordGEMVHalf(b Builder, c matmulCall, epi matmulEpilogue, dst, half int32) error {
	cfg := b.Config()
	cols := gemvCols(len(matmulTile(c.m, gemvMaxRows)), cfg)
	if cfg.GEMVCols == 0 && c.m >= halfManyRows {
		cols = halfManyRowsCols
	}
	return recordGEMVKernel(b, c, epi, dst, gemvKernel{file: "gemv_f16.wgsl", weight: half, perTrip: 8, cols: cols, what: "linear (half weight)"})
}

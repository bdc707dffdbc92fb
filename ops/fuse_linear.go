package ops

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Linear-group fusion (fewer dispatches per decode step). An
// et_vk.rms_norm.default whose output is read only by linears without
// bias (aten.linear; et_vk.linear_q4gsw), SwiGLU's pair among them with
// its sigmoid and muls (package lower's norm_linears pass), records them
// in one or two dispatches of shaders/gemv_fused.wgsl instead of its own
// kernel and one GEMV each: each workgroup computes the norm in its
// prologue (the row's 1/rms, then the normalized row staged in workgroup
// memory), and
//
//   - SwiGLU as a llama export writes it, g = linear(x, w1); u =
//     linear(x, w3); out = g·sigmoid(g)·u (sigmoid, mul, mul), is one
//     dispatch writing out (the pair: the gate's and the up projection's
//     sums meet in one invocation);
//   - the other linears (the q, k and v projections, the classifier) are
//     one dispatch with a weight and an output per linear, as many as the
//     device's storage buffers a stage allow (fusedMaxSegs), or two.
//
//	x = rms_norm(h); q, k, v = linear(x, wq), linear(x, wk), linear(x, wv)  ->  one dispatch
//	x = rms_norm(h); out = silu(linear(x, w1)) * linear(x, w3)              ->  one dispatch
//
// The group's guard (fusedNormLinears), checked at the live shapes: one
// row, and every linear of the group running its family's one-row kernel
// (chooseLinear: cpu/gemv, cpu/gemv-half, cpu/qgemv, gpu/gemv,
// gpu/gemv-half, gpu/qgemv, and gpu/q4gemv, whose fused form is
// linear_gpu_quant.go's) on a weight of one format, which the fused
// kernel mirrors in the same family's shape and summation order: a fused
// projection equals the unfused one bit for bit given the same
// normalized input, and only the norm's 1/rms may round differently.
// Other weight formats (int8, linear_dq8ca_q4gsw), more than one row, a K
// that would need K chunks or does not fit workgroup memory fail it, and
// the norm and the linears record as the later passes make them.

const (
	// fusedQ4Cols is the cpu shape's 4-bit columns an invocation.
	fusedQ4Cols = 16
	// fusedGPUWG is the GPU shape's workgroup: gemv_gpu.wgsl's 32 lanes ×
	// 8 columns.
	fusedGPUWG = gpuGEMVLanes * gpuGEMVCols
)

// fusedGEMVShader is the template data of shaders/gemv_fused.wgsl.
type fusedGEMVShader struct {
	Shape  string // cpu or gpu
	Format string // f32v, half or q4
	Pair   bool
	Norm   bool
	NormW  bool
	Cols   []int // cpu: columns per invocation
	Lanes  int   // gpu: lanes along K per column
	GCols  int   // gpu: columns per workgroup
	WG     int
	// Strides is the lanes' reduction tree (Lanes/2 .. 1), WGStrides the
	// workgroup's (WG/2 .. 1, the gpu norm prologue's).
	Strides, WGStrides []int
	XN                 int      // Norm: vec4s of the staged normalized input (K/4)
	Q4X                []int    // q4 (gpu): the 8 input vec4s of a unit, 0 .. 7
	Q4X4               []int    // q4 (cpu): the 4 words of a unit, 0 .. 3
	Comp               []string // q4 (cpu): their components, x .. w

	fusedLayout
}

// fusedLayout is the binding layout of the fused linear groups' kernels
// (gemv_fused.wgsl, gemv_quant.wgsl's fused form; common.tmpl's
// "fused_linears"): the segments' (weights') and outputs' indices, and
// the first binding of the weights, of their scales, of the outputs and
// the params binding.
type fusedLayout struct {
	Segs, Outs                 []int
	WBase, SBase, OBase, PBind int
}

// bindWeights returns a fused group's inputs up to its weights' scales
// (norm's x, its weight when normW, lins' weights) and numbers them.
func (f *fusedLayout) bindWeights(norm *fusedNorm, normW bool, lins []fusedLinear) []int32 {
	inputs := []int32{norm.x}
	if normW {
		inputs = append(inputs, norm.w)
	}
	f.WBase = len(inputs)
	for i, l := range lins {
		f.Segs = append(f.Segs, i)
		inputs = append(inputs, l.weight)
	}
	f.SBase = len(inputs)
	return inputs
}

// bindOutputs numbers nout outputs and the params after ninputs inputs.
func (f *fusedLayout) bindOutputs(ninputs, nout int) {
	for i := range nout {
		f.Outs = append(f.Outs, i)
	}
	f.OBase = ninputs
	f.PBind = ninputs + nout
}

// fusedBlocks lays lins' output segments over column blocks of cols
// columns (with pair, the gate's and up's one segment of lins[0].n): the
// segments' columns n and first blocks blk, nout segments in all, the
// unused ones starting at the total, which it returns.
func fusedBlocks(lins []fusedLinear, pair bool, cols int64, nout int) (n, blk [4]uint32, total int64) {
	for i, l := range lins {
		if pair && i > 0 {
			continue
		}
		n[i], blk[i] = uint32(l.n), uint32(total)
		total += (l.n + cols - 1) / cols
	}
	for i := nout; i < 4; i++ {
		blk[i] = uint32(total)
	}
	return n, blk, total
}

// fusedGEMVParams is the Go twin of gemv_fused.wgsl's Params (96 bytes).
type fusedGEMVParams struct {
	K, Len uint32
	Eps    float32
	_      uint32
	N, Blk [4]uint32
	NBlk   uint32
	_      [3]uint32
	Gw     [4]uint32 // q4: units per scale group of each weight
	LdS    [4]uint32 // q4: scale row stride of each weight
}

// bytes packs p little-endian, as WGSL lays the struct out.
func (p fusedGEMVParams) bytes() []byte {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, p); err != nil {
		panic(err) // fixed-size fields only
	}
	return buf.Bytes()
}

// fusedNorm is the rms_norm a fused group computes in its prologue.
type fusedNorm struct {
	x, w int32 // input, weight (< 0: none)
	eps  float32
}

// fusedLinear is one linear of a group.
type fusedLinear struct {
	out    int32 // its output
	weight int32 // what the kernel binds
	format string
	n      int64
	// q4: the scales, units per scale group and scale row stride.
	scales  int32
	gw, lds int64
}

// fusedPair is SwiGLU's two linears and the final mul's output.
type fusedPair struct {
	gate, up fusedLinear
	out      int32
}

func init() { RegisterFused(FusedNormLinears, fusedNormLinears) }

// fusedNormLinears is FusedNormLinears' kernel (see above): g.Calls[0] is
// the norm, g.Linears and g.SwiGLU the rest.
func fusedNormLinears(b Builder, g *Group) (int, error) {
	args := g.Calls[0].Args
	in, hasW, eps, err := rmsNormParse(b, args)
	if err != nil {
		return 0, err
	}
	y := args[3]
	k := in.Dims[len(in.Dims)-1]
	if in.Numel != k || k == 0 || k%4 != 0 || fusedWorkgroupBytes(k) > workgroupStorage(b) {
		return 0, nil
	}
	linear := func(c int) (fusedLinear, bool, error) {
		if c <= 0 || c >= len(g.Calls) {
			return fusedLinear{}, false, nil
		}
		return fusableLinear(b, g.Calls[c].Name, g.Calls[c].Args, y, in.Dims)
	}
	var rest []fusedLinear
	for _, c := range g.Linears {
		l, ok, err := linear(c)
		if err != nil || !ok {
			return 0, err
		}
		rest = append(rest, l)
	}
	var pair *fusedPair
	if g.SwiGLU != nil {
		if pair, err = swiGLU(b, g, linear); pair == nil || err != nil {
			return 0, err
		}
	}
	format := ""
	for _, l := range rest {
		if format != "" && l.format != format {
			return 0, nil
		}
		format = l.format
	}
	if pair != nil {
		if format != "" && pair.gate.format != format {
			return 0, nil
		}
		format = pair.gate.format
	}
	if format == "" {
		return 0, nil
	}
	// The segment dispatches: rest in runs of fusedMaxSegs (at most 2
	// dispatches, or the norm's prologue is not worth it).
	var groups [][]fusedLinear
	for len(rest) > 0 {
		n := min(len(rest), fusedMaxSegs(b, format))
		groups, rest = append(groups, rest[:n]), rest[n:]
	}
	if len(groups) > 2 {
		return 0, nil
	}
	norm := fusedNorm{x: args[0], w: -1, eps: float32(eps)}
	if hasW {
		norm.w = args[1]
	}
	if pair != nil {
		if err := recordFusedGEMV(b, &norm, []fusedLinear{pair.gate, pair.up}, []int32{pair.out}, true, k); err != nil {
			return 0, err
		}
	}
	for _, grp := range groups {
		outs := make([]int32, len(grp))
		for i, l := range grp {
			outs[i] = l.out
		}
		if err := recordFusedGEMV(b, &norm, grp, outs, false, k); err != nil {
			return 0, err
		}
	}
	return len(g.Calls), nil
}

// swiGLU reads g's SwiGLU pair (g.SwiGLU: gate, up, sigmoid, the
// gate·sigmoid mul and the final mul, as package lower matched them) at
// the live shapes, setting the shapes of the sigmoid's and the muls'
// outputs; nil when the pair does not fit the fused kernel.
func swiGLU(b Builder, g *Group, linear func(c int) (fusedLinear, bool, error)) (*fusedPair, error) {
	if len(g.SwiGLU) != 5 {
		return nil, nil
	}
	gate, ok, err := linear(g.SwiGLU[0])
	if err != nil || !ok {
		return nil, err
	}
	up, ok, err := linear(g.SwiGLU[1])
	if err != nil || !ok || up.n != gate.n || up.format != gate.format || (gate.format == "q4" && gate.gw != up.gw) {
		return nil, err
	}
	dims := []int64{gate.n}
	if gt, err := b.Tensor(gate.out); err == nil {
		dims = gt.Dims
	}
	for _, c := range g.SwiGLU[2:] {
		if c <= 0 || c >= len(g.Calls) || len(g.Calls[c].Args) == 0 {
			return nil, nil
		}
		a := g.Calls[c].Args
		id := a[len(a)-1]
		t, err := b.Tensor(id)
		if err != nil || t.DType != serialization.Float32 || t.Constant || t.MaxNumel < gate.n {
			return nil, nil
		}
		if err := b.SetDims(id, dims); err != nil {
			return nil, nil
		}
	}
	a := g.Calls[g.SwiGLU[4]].Args
	return &fusedPair{gate: gate, up: up, out: a[len(a)-1]}, nil
}

// fusableLinear reads op name(args) as a one-row aten.linear of input x
// (dims xdims) without bias whose family would run its GEMV kernel; it
// packs the weight as the op itself would. ok is false when it is not one.
func fusableLinear(b Builder, name string, args []int32, x int32, xdims []int64) (fusedLinear, bool, error) {
	if name == "et_vk.linear_q4gsw.default" {
		return fusableQ4Linear(b, args, x, xdims)
	}
	if name != "aten.linear.default" || len(args) != 4 || args[0] != x || args[1] == x || !b.IsNull(args[2]) || args[3] == x {
		return fusedLinear{}, false, nil
	}
	if chunked(b, args[1]) {
		// A weight held in chunks is read one chunk a dispatch (runLinear).
		return fusedLinear{}, false, nil
	}
	k := xdims[len(xdims)-1]
	w, err := b.Tensor(args[1])
	if err != nil || w.DType != serialization.Float32 || len(w.Dims) != 2 || w.Dims[1] != k || w.Dims[0] == 0 {
		return fusedLinear{}, false, nil
	}
	n := w.Dims[0]
	odims := append(slices.Clone(xdims[:len(xdims)-1]), n)
	ot, err := b.Tensor(args[3])
	if err != nil || ot.DType != serialization.Float32 || ot.Constant || ot.MaxNumel < n {
		return fusedLinear{}, false, nil
	}
	call := matmulCall{a: x, b: args[1], bias: -1, out: args[3], m: 1, n: n, k: k, transB: true, alpha: 1, beta: 1}
	lc := &linearCall{format: formatF32, f: call, canHalf: canHalf(b, w), canTranspose: canTranspose(b, w)}
	if err := packLinearWeight(b, lc, w); err != nil {
		return fusedLinear{}, false, err
	}
	kern := chooseLinear(familyOf(b), lc, b.Config())
	if kern == nil {
		return fusedLinear{}, false, nil
	}
	l := fusedLinear{out: args[3], n: n, scales: -1}
	switch kern.name {
	case "cpu/gemv-half", "gpu/gemv-half":
		if lc.half < 0 {
			return fusedLinear{}, false, nil
		}
		l.format, l.weight = "half", lc.half
	case "cpu/gemv", "gpu/gemv":
		if k%4 != 0 || w.Half {
			return fusedLinear{}, false, nil
		}
		l.format, l.weight = "f32v", args[1]
	default:
		return fusedLinear{}, false, nil
	}
	if fusedUnits(l.format, k) > fusedMaxUnits(familyOf(b)) {
		return fusedLinear{}, false, nil
	}
	if err := b.SetDims(args[3], odims); err != nil {
		return fusedLinear{}, false, nil
	}
	return l, true, nil
}

// fusedUnits is a weight row's length in the kernel's units.
func fusedUnits(format string, k int64) int64 {
	switch format {
	case "half":
		return k / 8
	case "q4":
		return k / 32
	case fusedQuantFormat: // [kernels] 32-bit words of 8 k
		return k / 8
	}
	return k / 4
}

// fusedMaxSegs is the most linears of format one segment dispatch takes
// (3 at most, the kernel's params): as many as the device's storage
// buffers a stage hold with the input and the norm's weight, each linear
// a weight and an output (and q4's scales). Under WebGPU's default 8, 3
// float linears or 2 q4 ones.
func fusedMaxSegs(b Builder, format string) int {
	limit := int(b.DeviceProfile().MaxStorageBuffers)
	if limit < 8 {
		limit = 8
	}
	per := 2
	if format == "q4" || format == fusedQuantFormat {
		per = 3
	}
	return min(3, (limit-2)/per)
}

// fusedMaxUnits is the longest weight row (in units) one dispatch of the
// fused kernel takes: the unfused kernels' K chunk, whose loops stay under
// llvmpipe's 65535 back-edges.
func fusedMaxUnits(fam Family) int64 {
	if fam == FamilyGPU {
		return gpuGEMVMaxTrips * gpuGEMVLanes
	}
	return matmulMaxTrips
}

// recordFusedGEMV records one dispatch of gemv_fused.wgsl: the linears
// lins (of one format, K = k) of norm's output, writing outs (one per
// linear, or with pair the one SwiGLU output).
func recordFusedGEMV(b Builder, norm *fusedNorm, lins []fusedLinear, outs []int32, pair bool, k int64) error {
	if lins[0].format == fusedQuantFormat { // [kernels] gemv_quant.wgsl's fused form (linear_gpu_quant.go)
		return recordFusedGPUQuant(b, norm, lins, outs, pair, k)
	}
	fam := familyOf(b)
	sh := fusedGEMVShader{Format: lins[0].format, Pair: pair, Norm: norm != nil, NormW: norm != nil && norm.w >= 0, XN: int(k / 4)}
	if fam == FamilyGPU {
		sh.Shape, sh.Lanes, sh.GCols, sh.WG = "gpu", gpuGEMVLanes, gpuGEMVCols, fusedGPUWG
		for s := sh.Lanes / 2; s >= 1; s /= 2 {
			sh.Strides = append(sh.Strides, s)
		}
		for s := sh.WG / 2; s >= 1; s /= 2 {
			sh.WGStrides = append(sh.WGStrides, s)
		}
	} else {
		sh.Shape, sh.WG = "cpu", gemvWG
		sh.Cols = matmulTile(int64(gemvCols(1, b.Config())), 16)
		if sh.Format == "q4" {
			// qgemv.wgsl's workgroup, half its 32 columns an invocation:
			// llvmpipe compiles a two-weight kernel of 32 for seconds.
			sh.WG, sh.Cols = qgemvWG, matmulTile(fusedQ4Cols, fusedQ4Cols)
			sh.Q4X4, sh.Comp = []int{0, 1, 2, 3}, []string{"x", "y", "z", "w"}
		}
	}
	cols := int64(len(sh.Cols))
	if sh.Shape == "gpu" {
		cols = int64(sh.GCols)
	}
	inputs := sh.bindWeights(norm, sh.NormW, lins)
	p := fusedGEMVParams{K: uint32(fusedUnits(sh.Format, k)), Len: uint32(k), Eps: norm.eps}
	if sh.Format == "q4" {
		sh.Q4X = []int{0, 1, 2, 3, 4, 5, 6, 7}
		for i, l := range lins {
			inputs = append(inputs, l.scales)
			p.Gw[i], p.LdS[i] = uint32(l.gw), uint32(l.lds)
		}
	}
	var blk int64
	p.N, p.Blk, blk = fusedBlocks(lins, pair, cols, len(outs))
	p.NBlk = uint32(blk)
	sh.bindOutputs(len(inputs), len(outs))
	kern, err := shaders.Render("gemv_fused.wgsl", sh, "main", shaders.Layout(len(inputs), len(outs), true), uint32(sh.WG))
	if err != nil {
		return err
	}
	per := uint32(sh.WG)
	if sh.Shape == "gpu" {
		per = 1
	}
	grid, err := Grid(uint64(blk), per, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	if err := b.Dispatch(kern, inputs, outs, p.bytes(), grid); err != nil {
		return fmt.Errorf("ops: fused linears: %w", err)
	}
	return nil
}

// fusableQ4Linear is fusableLinear for et_vk.linear_q4gsw.default (args
// [x, weight, scales, group_size, bias, out]): one row, no bias, and the
// family's one-row 4-bit GEMV reading it (gpu/qgemv with format q4,
// cpu/qgemv in one dispatch).
func fusableQ4Linear(b Builder, args []int32, x int32, xdims []int64) (fusedLinear, bool, error) {
	if len(args) != 6 || args[0] != x || !b.IsNull(args[4]) || args[5] == x {
		return fusedLinear{}, false, nil
	}
	if chunked(b, args[1], args[2]) {
		return fusedLinear{}, false, nil
	}
	_, q, err := q4gswArgs(b, args, 0, 1, 2, 3, 4)
	if err != nil || q.m != 1 {
		return fusedLinear{}, false, nil
	}
	q.out = args[5]
	lc := &linearCall{format: formatQuant, q: q}
	if err := packQuantScales(b, lc); err != nil { // [kernels] scales per row (linear_gpu_quant.go)
		return fusedLinear{}, false, err
	}
	kern := chooseLinear(familyOf(b), lc, b.Config())
	if kern == nil || q.sh.DQ8 {
		return fusedLinear{}, false, nil
	}
	var l fusedLinear
	switch {
	case kern.name == gpuQ4GEMVName: // [kernels] the weight-word GEMV's fused form (linear_gpu_quant.go)
		var ok bool
		if l, ok = fusableGPUQuant(lc, args[5]); !ok {
			return fusedLinear{}, false, nil
		}
	case kern.name == "gpu/qgemv" && gpuQGEMVFormat(q) == "q4":
	case kern.name == "cpu/qgemv":
		// qgemv.wgsl's K chunks are groups: one dispatch when all fit.
		if words, gw := q.k/32, q.g/32; (words+gw-1)/gw > max(1, qgemvMaxTrips/(gw+1)) {
			return fusedLinear{}, false, nil
		}
	default:
		return fusedLinear{}, false, nil
	}
	ot, err := b.Tensor(args[5])
	if err != nil || ot.DType != serialization.Float32 || ot.Constant || ot.MaxNumel < q.n {
		return fusedLinear{}, false, nil
	}
	if l.format == "" {
		l = fusedLinear{out: args[5], weight: q.w, format: "q4", n: q.n, scales: q.scales, gw: q.g / 32, lds: q.ldS}
	}
	if fusedUnits(l.format, q.k) > fusedMaxUnits(familyOf(b)) {
		return fusedLinear{}, false, nil
	}
	if err := b.SetDims(args[5], append(slices.Clone(xdims[:len(xdims)-1]), q.n)); err != nil {
		return fusedLinear{}, false, nil
	}
	return l, true, nil
}

// fusedWorkgroupBytes bounds the workgroup memory of the fused kernel of
// a norm over k: the staged row, and the gpu shape's two partial-sum
// arrays of fusedGPUWG (the cpu shape's partial sums are fewer).
func fusedWorkgroupBytes(k int64) int64 {
	return 4*k + 2*4*fusedGPUWG
}

// workgroupStorage is the device's workgroup memory a kernel may use
// (WebGPU's default 16 KiB when the profile does not say).
func workgroupStorage(b Builder) int64 {
	if m := b.DeviceProfile().MaxWorkgroupStorage; m > 0 {
		return int64(m)
	}
	return 16384
}

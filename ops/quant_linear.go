package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Weight-quantized linears: float32 activations, the weight kept on the
// device as the exporter wrote it and dequantized in registers by
// shaders/qlinear.wgsl.
//
// et_vk.linear_q4gsw.default args: [x, weight, weight_scales, group_size, bias, out]
//
//	weight UINT8 [N, roundup(K,8)/2], even k in the low nibble, value code−8;
//	scales float32 [G, Np4] (G ≥ ceil(K/g), Np4 ≥ N), s[k/g, n]; bias Null
//	or float32 [≥N].
//
// et_vk.linear_qcs4w.default args: [x, weight, scales, out]
//
//	weight UINT8 [N, ceil(K/2)], even k in the HIGH nibble, value code−8;
//	scales float32 [N].
//
// aten._weight_int8pack_mm.default args: [x, mat2, scales, out]
//
//	mat2 INT8 [N, K]; scales float32 [N].
//
// et_vk.linear_weight_int4.default args: [x, mat2, group_size, qScaleAndZeros, inner_k_tiles, out]
//
//	(exported 2024-10 … 2025-09 by -qmode vulkan_4w) mat2 UINT8 [N, K/2],
//	even k in the HIGH nibble; qScaleAndZeros float32 [K/g, N, 2], scale
//	then zero: W[n, k] = (code − 8)·scale + zero (asymmetric); inner_k_tiles
//	is ignored, as the Vulkan runtime did; g % 8 == 0 and K % g == 0.
//
// out[..., n] = Σ_k x[..., k]·W[n, k] (+ bias[n]). K is x's last dim and
// must be a multiple of 4 (the exporter checks in_channels % 4). The output
// rank is the serialized one: a 3-D x may feed a 2-D [M, N] output.
//
// Every one of them applies the float linear's epilogues
// (fuse_epilogue.go): a following activation, SiLU as exported, then a residual
// add or SwiGLU's mul. A one-row linear_q4gsw whose K and group size are
// multiples of 32 (and so a linear_dq8ca_q4gsw) runs shaders/qgemv.wgsl
// (decode), everything else shaders/qlinear.wgsl.
func init() {
	registerLinear(Op{Name: "et_vk.linear_q4gsw.default"}, q4gswCall)
	registerLinear(Op{Name: "et_vk.linear_qcs4w.default"}, qcs4wCall)
	registerLinear(Op{Name: "aten._weight_int8pack_mm.default"}, int8packCall)
	registerLinear(Op{Name: "et_vk.linear_weight_int4.default"}, int4Call)
}

// qlinearMaxSteps caps the K steps (8 k each) one dispatch walks per
// invocation, well below llvmpipe's 65535 loop back-edges.
const qlinearMaxSteps = 16384

// Register tiles of the quantized linear kernel. With at most
// qlinearGEMVRows rows, one row block covers every row, so each packed
// weight word is loaded and decoded once and applied to all M rows (the
// GEMV-like path); more rows are split into blocks of qlinearTileRows.
// A tile holds at most qlinearMaxAcc accumulators: measured on lavapipe
// (K = N = 2048, rate relative to the float32 linear in the same run, very
// noisy host) M = 1: 1×2 0.8–1.4, 1×4 1.7–1.9, 1×8 2.0–3.1, 1×16 1.3–3.0;
// M = 16: 16×2 0.5–0.8, 16×4 0.46–0.77, 16×8 1.05–1.16, two 8×8 blocks
// 0.67–0.73, two 8×4 blocks 0.50–0.76. The LLVM JIT of the first dispatch
// grows with the tile: on a cold Mesa shader cache 1×8 takes about 0.4 s,
// 8×8 and 16×4 1.3 s, 16×8 2.2 s (with the branch-free stores of
// qlinear.wgsl; twice that with per-element bounds checks). Splitting a
// 1×8 tile's K steps over 2, 4 or 8 lanes that meet in workgroup memory
// (the GEMV kernel's layout) was slower at M = 1: 1.55–1.75× the float32
// linear against 2.0–2.5× for one invocation per tile, same runs.
const (
	qlinearGEMVRows = 16
	qlinearMaxCols  = 8
	qlinearMaxAcc   = 128
	qlinearTileRows = 8
	qlinearWG       = 64
)

// qlinearShader is the template data of shaders/qlinear.wgsl.
type qlinearShader struct {
	Int8       bool // int8 weights (else int4)
	HighEven   bool // int4: even k in the high nibble
	Grouped    bool // scales per group of g k (else per channel)
	SplitScale bool // g % 8 == 4: a step of 8 k spans two groups
	Unaligned  bool // weight rows do not start on 4-byte boundaries
	Bias       bool
	DQ8        bool // activations quantized per row to int8 (linear_dq8ca_q4gsw)
	LateScale  bool // grouped: scale each row's dot product, not the weights
	Zeros      bool // grouped scales and float zeros interleaved (linear_weight_int4)
	Chunked    bool // K takes several dispatches (more than qlinearMaxSteps steps)
	Rows       []int
	Cols       []int
	WG         int
	Act        string // epilogue activation (matmulEpilogue.act), or ""
	Res        string // epilogue add or mul with the res tensor (matmulEpilogue.res), or ""
	Gate       bool   // the activation's result times its input (matmulEpilogue.gate)

	qBindings
}

// qlinearCall is one quantized linear to record.
type qlinearCall struct {
	x, w, scales, bias, out int32
	xs, xz                  int32 // DQ8: per-row activation scale and zero point
	m, n, k                 int64
	rowBytes                int64
	g, ldS                  int64
	sh                      qlinearShader
}

// qlinearInput checks the activation (float32, at least 1-D, K % 4 == 0)
// and returns it with K and M.
func qlinearInput(b Builder, id int32) (x Tensor, k, m int64, err error) {
	x, err = b.Tensor(id)
	if err != nil {
		return Tensor{}, 0, 0, argErr(0, err)
	}
	if x.DType != serialization.Float32 {
		return Tensor{}, 0, 0, Errorf(0, "input is %v, want float32", x.DType)
	}
	if len(x.Dims) == 0 {
		return Tensor{}, 0, 0, Errorf(0, "input must have at least one dim")
	}
	k = x.Dims[len(x.Dims)-1]
	if k%4 != 0 {
		return Tensor{}, 0, 0, Errorf(0, "input's last dim %d is not a multiple of 4", k)
	}
	return x, k, NumelOf(x.Dims[:len(x.Dims)-1]), nil
}

// qlinearWeight returns constant-or-tensor id as a 2-D tensor of dtype dt.
func qlinearWeight(b Builder, arg int, id int32, dt serialization.DataType) (Tensor, error) {
	w, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	if w.DType != dt {
		return Tensor{}, Errorf(arg, "weight is %v, want %v", w.DType, dt)
	}
	if len(w.Dims) != 2 {
		return Tensor{}, Errorf(arg, "weight must be 2-D, has dims %v", w.Dims)
	}
	return w, nil
}

// qlinearScales returns the float32 scales tensor id of rank rank
// (float16 scales, from force_fp16 exports, are float32 on the device).
func qlinearScales(b Builder, arg int, id int32, rank int) (Tensor, error) {
	s, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	if s.DType != serialization.Float32 {
		return Tensor{}, Errorf(arg, "scales are %v, want float32", s.DType)
	}
	if len(s.Dims) != rank {
		return Tensor{}, Errorf(arg, "scales must be %d-D, have dims %v", rank, s.Dims)
	}
	return s, nil
}

// qlinearOutDims returns the output's live dims: x's leading dims and N,
// in the rank the output was serialized with (a 3-D x may feed a 2-D
// [M, N] output; a shorter x gets leading 1s).
func qlinearOutDims(b Builder, arg int, id int32, x Tensor, m, n int64) ([]int64, error) {
	o, err := b.Tensor(id)
	if err != nil {
		return nil, argErr(arg, err)
	}
	r := len(o.MaxDims)
	lead := x.Dims[:len(x.Dims)-1]
	switch {
	case r == len(x.Dims):
		return append(append([]int64(nil), lead...), n), nil
	case r == 2:
		return []int64{m, n}, nil
	case r > len(x.Dims):
		d := make([]int64, 0, r)
		for i := 0; i < r-len(x.Dims); i++ {
			d = append(d, 1)
		}
		return append(append(d, lead...), n), nil
	}
	return nil, Errorf(arg, "output rank %d does not fit input dims %v", r, x.Dims)
}

func q4gswCall(b Builder, args []int32) (*linearCall, error) {
	if len(args) != 6 {
		return nil, Errorf(-1, "want 6 args [input, weight, scales, group_size, bias, out], have %d", len(args))
	}
	x, c, err := q4gswArgs(b, args, 0, 1, 2, 3, 4)
	if err != nil {
		return nil, err
	}
	c.out = args[5]
	return qlinearPrepare(b, c, x, 5)
}

// q4gswArgs reads the activation, packed weight, scales, group size and
// bias of linear_q4gsw / linear_dq8ca_q4gsw at the given arg indices.
func q4gswArgs(b Builder, args []int32, xa, wa, sa, ga, ba int) (Tensor, qlinearCall, error) {
	x, k, m, err := qlinearInput(b, args[xa])
	if err != nil {
		return Tensor{}, qlinearCall{}, err
	}
	w, err := qlinearWeight(b, wa, args[wa], serialization.Uint8)
	if err != nil {
		return Tensor{}, qlinearCall{}, err
	}
	n := w.Dims[0]
	kp := (k + 7) / 8 * 8
	if w.Dims[1] != kp/2 {
		return Tensor{}, qlinearCall{}, Errorf(wa, "weight dims %v, want [N, %d] for K = %d (K padded to a multiple of 8)", w.Dims, kp/2, k)
	}
	s, err := qlinearScales(b, sa, args[sa], 2)
	if err != nil {
		return Tensor{}, qlinearCall{}, err
	}
	g, err := b.Int(args[ga])
	if err != nil {
		return Tensor{}, qlinearCall{}, argErr(ga, err)
	}
	if g <= 0 || g%4 != 0 {
		return Tensor{}, qlinearCall{}, Errorf(ga, "group size %d is not a positive multiple of 4", g)
	}
	if s.Dims[0] < (k+g-1)/g || s.Dims[1] < n {
		return Tensor{}, qlinearCall{}, Errorf(sa, "scales dims %v, want at least [%d, %d]", s.Dims, (k+g-1)/g, n)
	}
	c := qlinearCall{x: args[xa], w: args[wa], scales: args[sa], bias: -1,
		m: m, n: n, k: k, rowBytes: w.Dims[1], g: g, ldS: s.Dims[1],
		sh: qlinearShader{Grouped: true, SplitScale: g%8 != 0}}
	if !b.IsNull(args[ba]) {
		bias, err := b.Tensor(args[ba])
		if err != nil {
			return Tensor{}, qlinearCall{}, argErr(ba, err)
		}
		if bias.DType != serialization.Float32 || len(bias.Dims) != 1 || bias.Dims[0] < n {
			return Tensor{}, qlinearCall{}, Errorf(ba, "bias is %v %v, want float32 [%d] (or padded longer)", bias.DType, bias.Dims, n)
		}
		c.bias = args[ba]
	}
	return x, c, nil
}

func qcs4wCall(b Builder, args []int32) (*linearCall, error) {
	x, w, k, m, err := qlinearPerChannelInputs(b, args, "input, weight, scales, out", serialization.Uint8)
	if err != nil {
		return nil, err
	}
	if w.Dims[1] != (k+1)/2 {
		return nil, Errorf(1, "weight dims %v, want [N, %d] for K = %d", w.Dims, (k+1)/2, k)
	}
	return qlinearPerChannel(b, args, x, w, m, k, qlinearShader{HighEven: true, Unaligned: w.Dims[1]%4 != 0})
}

func int8packCall(b Builder, args []int32) (*linearCall, error) {
	x, w, k, m, err := qlinearPerChannelInputs(b, args, "input, mat2, scales, out", serialization.Int8)
	if err != nil {
		return nil, err
	}
	if w.Dims[1] != k {
		return nil, Errorf(1, "mat2 dims %v, want [N, %d]", w.Dims, k)
	}
	return qlinearPerChannel(b, args, x, w, m, k, qlinearShader{Int8: true})
}

// qlinearPerChannelInputs checks that args are the four of linear_qcs4w /
// _weight_int8pack_mm (names, for the error, says what they are called)
// and reads the activation and the weight of type dt.
func qlinearPerChannelInputs(b Builder, args []int32, names string, dt serialization.DataType) (x, w Tensor, k, m int64, err error) {
	if len(args) != 4 {
		return Tensor{}, Tensor{}, 0, 0, Errorf(-1, "want 4 args [%s], have %d", names, len(args))
	}
	if x, k, m, err = qlinearInput(b, args[0]); err != nil {
		return Tensor{}, Tensor{}, 0, 0, err
	}
	if w, err = qlinearWeight(b, 1, args[1], dt); err != nil {
		return Tensor{}, Tensor{}, 0, 0, err
	}
	return x, w, k, m, nil
}

// qlinearPerChannel records linear_qcs4w / _weight_int8pack_mm, whose
// args are [x, weight, scales [N], out].
func qlinearPerChannel(b Builder, args []int32, x, w Tensor, m, k int64, sh qlinearShader) (*linearCall, error) {
	n := w.Dims[0]
	s, err := qlinearScales(b, 2, args[2], 1)
	if err != nil {
		return nil, err
	}
	if s.Dims[0] != n {
		return nil, Errorf(2, "scales dims %v, want [%d]", s.Dims, n)
	}
	c := qlinearCall{x: args[0], w: args[1], scales: args[2], bias: -1, out: args[3],
		m: m, n: n, k: k, rowBytes: w.Dims[1], sh: sh}
	return qlinearPrepare(b, c, x, 3)
}

// recordQLinear sets the output's shape and records c's dispatches,
// choosing the register tile from the live M.
func qlinearPrepare(b Builder, c qlinearCall, x Tensor, outArg int) (*linearCall, error) {
	dims, err := qlinearOutDims(b, outArg, c.out, x, c.m, c.n)
	if err != nil {
		return nil, err
	}
	if _, err := Output(b, outArg, c.out, serialization.Float32, dims); err != nil {
		return nil, err
	}
	if c.m == 0 || c.n == 0 {
		return nil, nil
	}
	if c.m*c.n > matmulMaxElems || c.m*c.k > matmulMaxElems {
		return nil, Errorf(-1, "M=%d K=%d N=%d is too large", c.m, c.k, c.n)
	}
	return &linearCall{format: formatQuant, q: c, half: -1, transposed: -1}, nil
}

// recordQLinearTiled records c with shaders/qlinear.wgsl (every quantized
// format, any M; the tile from the live M), writing dst and applying epi.
func recordQLinearTiled(b Builder, c qlinearCall, epi matmulEpilogue, dst int32) error {
	sh := c.sh
	sh.Bias = c.bias >= 0
	sh.Act, sh.Res, sh.Gate = epi.act, epi.res, epi.gate
	sh.WG = qlinearWG
	if c.m <= qlinearGEMVRows {
		sh.Rows = matmulTile(c.m, qlinearGEMVRows)
	} else {
		sh.Rows = matmulTile(qlinearTileRows, qlinearTileRows)
	}
	cols := min(qlinearMaxCols, qlinearMaxAcc/len(sh.Rows))
	sh.Cols = matmulTile(int64(cols), cols)
	// Scaling the 8 decoded weights of a step costs 8 multiplies per
	// column; scaling each row's dot instead costs one per row.
	sh.LateScale = len(sh.Rows) < 8 && !sh.Zeros
	colBlocks := (c.n + int64(len(sh.Cols)) - 1) / int64(len(sh.Cols))
	rowBlocks := (c.m + int64(len(sh.Rows)) - 1) / int64(len(sh.Rows))
	groups, err := Grid(uint64(colBlocks*rowBlocks), uint32(sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	steps, tail := c.k/8, c.k%8/4
	sh.Chunked = steps > qlinearMaxSteps
	inputs := sh.bind([]int32{c.x, c.w, c.scales}, sh.DQ8, c.xs, c.xz, c.bias, epi)
	kern, err := shaders.Render("qlinear.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	return kChunks(steps, qlinearMaxSteps, func(begin, end int64, accumulate, last uint32) error {
		var p Params
		p.U32(uint32(c.m)).U32(uint32(c.n)).U32(uint32(c.k / 4)).U32(uint32(steps))
		p.U32(uint32(tail)).U32(uint32(c.rowBytes)).U32(uint32(c.g)).U32(uint32(c.ldS))
		p.U32(uint32(begin)).U32(uint32(end)).U32(accumulate).U32(last)
		p.U32(uint32(colBlocks)).F32(epi.lo).F32(epi.hi).U32(0)
		if err := b.Dispatch(kern, inputs, []int32{dst}, p.Bytes(), groups); err != nil {
			return fmt.Errorf("ops: quantized linear: %w", err)
		}
		return nil
	})
}

func int4Call(b Builder, args []int32) (*linearCall, error) {
	if len(args) != 6 {
		return nil, Errorf(-1, "want 6 args [input, mat2, group_size, qScaleAndZeros, inner_k_tiles, out], have %d", len(args))
	}
	x, k, m, err := qlinearInput(b, args[0])
	if err != nil {
		return nil, err
	}
	w, err := qlinearWeight(b, 1, args[1], serialization.Uint8)
	if err != nil {
		return nil, err
	}
	n := w.Dims[0]
	g, err := b.Int(args[2])
	if err != nil {
		return nil, argErr(2, err)
	}
	if g <= 0 || g%8 != 0 || k%g != 0 {
		return nil, Errorf(2, "group size %d: want a multiple of 8 dividing K = %d", g, k)
	}
	if w.Dims[1] != k/2 {
		return nil, Errorf(1, "mat2 dims %v, want [N, %d]", w.Dims, k/2)
	}
	s, err := qlinearScales(b, 3, args[3], 3)
	if err != nil {
		return nil, err
	}
	if s.Dims[0] != k/g || s.Dims[1] != n || s.Dims[2] != 2 {
		return nil, Errorf(3, "qScaleAndZeros dims %v, want [%d, %d, 2]", s.Dims, k/g, n)
	}
	c := qlinearCall{x: args[0], w: args[1], scales: args[3], bias: -1, out: args[5],
		m: m, n: n, k: k, rowBytes: w.Dims[1], g: g, ldS: n,
		sh: qlinearShader{HighEven: true, Grouped: true, Zeros: true}}
	return qlinearPrepare(b, c, x, 5)
}

// qgemvMaxTrips bounds the loop trips (groups plus vec4 words) of one
// invocation of the one-row kernel, well below llvmpipe's 65535 back-edges.
const qgemvMaxTrips = 16384

// qgemvCols and qgemvWG are the one-row kernel's output columns per
// invocation and lanes per workgroup. Measured on lavapipe with the
// kernel's loop written out in a Go test (K = N = 2048, g = 64, µs per
// dispatch over 12 weights of 2 MiB, medians of 21 interleaved runs,
// load 3-5): qlinear.wgsl's 1×8 tile 2400; this kernel with 8 columns
// 1970-2020 (16 or 64 lanes), 16 columns 1760-1770 (16 or 64 lanes);
// x read from a uniform buffer instead of storage 1700 (not done: a
// tensor is not bindable as uniform).
//
// 32 columns and 8 lanes: at the stories110M shapes (g = 64, 24
// dispatches each, medians of 15, three interleaved runs), 16×16 over
// 32×8 was 1.06-1.26 at K = N = 768, 1.04-1.30 at K = 768, N = 2048,
// 0.93-1.09 at K = 2048, N = 768 and 1.09-1.11 at K = 768, N = 32000;
// the whole 110M q4 decode step 55.1 against 50.7 ms (medians of 8
// alternating runs in one process). llvmpipe runs every storage load as
// a loop over the lanes, and x (the same for all lanes) is loaded once
// per column block, so more columns per invocation spread that cost:
// with x's loads replaced by arithmetic the kernel ran 1.2-1.4× faster
// at every column count. 64 columns spill and were slower again.
const (
	qgemvCols = 32
	qgemvWG   = 8
)

// qgemvShader is the template data of shaders/qgemv.wgsl.
type qgemvShader struct {
	DQ8   bool // activations quantized to int8 (linear_dq8ca_q4gsw)
	Bias  bool
	Act   string // epilogue activation (matmulEpilogue.act), or ""
	Res   string // epilogue add or mul with the res tensor, or ""
	Gate  bool   // the activation's result times its input
	Cols  []int
	Words []int    // the 4 u32 words of a vec4 weight word
	Comp  []string // their component names
	WG    int
	// VecScales reads the scales as vec4s (ld_s % 4 == 0), ScaleCols
	// naming the vec4 (V) and component of each column C.
	VecScales bool
	ScaleCols []qgemvScaleCol

	qBindings
}

// qgemvScaleCol is column C's scale in the vec4 scale loads of
// shaders/qgemv.wgsl: component Comp of vec4 V, First for a vec4's first
// column (where it is loaded).
type qgemvScaleCol struct {
	C, V  int
	Comp  string
	First bool
}

// qBindings are the binding numbers of the linear kernels'
// optional bindings and of those after them (the templates read them as
// .XSBinding, ...).
type qBindings struct {
	XSBinding, XZBinding, BiasBinding, ResBinding, OutBinding, ParamsBinding int
}

// bind appends to inputs, a linear kernel's fixed inputs, the inputs it
// binds after them when present, in shaders' "linear_bindings" order: the
// dq8 activations' scales xs and zero points xz (when dq8), the bias
// (when bias >= 0) and the epilogue's res tensor; it numbers those
// bindings and the output and params after them.
func (q *qBindings) bind(inputs []int32, dq8 bool, xs, xz, bias int32, epi matmulEpilogue) []int32 {
	if dq8 {
		q.XSBinding, q.XZBinding = len(inputs), len(inputs)+1
		inputs = append(inputs, xs, xz)
	}
	if bias >= 0 {
		q.BiasBinding = len(inputs)
		inputs = append(inputs, bias)
	}
	if epi.res != "" {
		q.ResBinding = len(inputs)
		inputs = append(inputs, epi.other)
	}
	q.OutBinding, q.ParamsBinding = len(inputs), len(inputs)+1
	return inputs
}

// useQGEMV reports whether c runs shaders/qgemv.wgsl: a one-row
// et_vk.linear_q4gsw or linear_dq8ca_q4gsw (low-nibble int4 codes, plain
// grouped scales) whose K and group size are multiples of 32, so that
// weight rows are whole vec4 words and groups whole words.
func useQGEMV(c qlinearCall) bool {
	sh := c.sh
	plain := sh.Grouped && !sh.SplitScale && !sh.Int8 && !sh.HighEven && !sh.Zeros && !sh.Unaligned
	return plain && c.m == 1 && c.k%32 == 0 && c.g%32 == 0 && c.rowBytes*2 == c.k
}

// recordQGEMV records the one-row q4gsw linear c (useQGEMV) writing dst
// and applying epi.
func recordQGEMV(b Builder, c qlinearCall, epi matmulEpilogue, dst int32) error {
	sh := qgemvShader{DQ8: c.sh.DQ8, Bias: c.bias >= 0, Act: epi.act, Res: epi.res, Gate: epi.gate, WG: qgemvWG,
		Cols: matmulTile(qgemvCols, qgemvCols), Words: []int{0, 1, 2, 3}, Comp: []string{"x", "y", "z", "w"}}
	if c.ldS%4 == 0 {
		sh.VecScales = true
		for _, col := range sh.Cols {
			sh.ScaleCols = append(sh.ScaleCols, qgemvScaleCol{C: col, V: col / 4, Comp: sh.Comp[col%4], First: col%4 == 0})
		}
	}
	inputs := sh.bind([]int32{c.x, c.w, c.scales}, sh.DQ8, c.xs, c.xz, c.bias, epi)
	kern, err := shaders.Render("qgemv.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WG))
	if err != nil {
		return err
	}
	colBlocks := (c.n + qgemvCols - 1) / qgemvCols
	groups, err := Grid(uint64(colBlocks), uint32(sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	words, gw := c.k/32, c.g/32
	ngroups := (words + gw - 1) / gw
	perChunk := max(1, qgemvMaxTrips/(gw+1))
	return kChunks(ngroups, perChunk, func(begin, end int64, accumulate, last uint32) error {
		var p Params
		p.U32(uint32(c.n)).U32(uint32(words)).U32(uint32(gw)).U32(uint32(c.ldS))
		p.U32(uint32(begin)).U32(uint32(end)).U32(accumulate).U32(last)
		p.F32(epi.lo).F32(epi.hi).U32(0).U32(0)
		if err := b.Dispatch(kern, inputs, []int32{dst}, p.Bytes(), groups); err != nil {
			return fmt.Errorf("ops: quantized linear: %w", err)
		}
		return nil
	})
}

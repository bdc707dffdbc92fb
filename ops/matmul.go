package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.mm.default args:     [self (M×K), mat2 (K×N), out (M×N)]
// aten.bmm.default args:    [self (B×M×K), mat2 (B×K×N), out (B×M×N)]
// aten.addmm.default args:  [self (bias, broadcastable to M×N), mat1 (M×K), mat2 (K×N), beta, alpha, out (M×N)]
// aten.matmul.default args: [self, other, out] (torch.matmul: 1-D, 2-D and broadcast batched operands)
// aten.linear.default args: [input (…×K), weight (N×K), bias (N) or Null, out (…×N)]
//
// All handle their own prepacking (vkgraph-format §3.9): mat2, weight and
// bias arrive as constant tensor ids and are bound directly; they may just
// as well be activations or prepacked tensors. Output shapes come from the
// inputs' live dims. linear computes input·weightᵀ + bias with input's
// leading dims flattened into M (a 1-D input is one row); addmm computes
// beta·self + alpha·(mat1·mat2), ignoring self when beta is 0. float32 only.
//
// Kernels come from the linear family's table (linear_family.go), chosen
// per call at record time from the load's kernel family and the live M (a
// new M re-records). The cpu family (lavapipe): a one-row linear, and a
// linear of at most 16 rows with K%4 == 0 and N%4 != 0, runs the GEMV
// kernel (shaders/gemv.wgsl: each invocation loads a few weight rows once
// and applies them to all its input rows; any K and N); otherwise
// shaders/matmul.wgsl: a vec4 register-blocked kernel (16 rows × 4 vec4
// columns per invocation) when K and N are multiples of 4, a scalar
// 8×8-tile kernel otherwise; batches run along the grid's z. The gpu
// family: a linear of at most 16 rows runs shaders/gemv_gpu.wgsl, every
// other call shaders/matmul_gpu.wgsl (linear_gpu.go). K is split into
// chunks (kChunks), one accumulating dispatch each, because llvmpipe
// silently cuts loops at 65535 trips per invocation.
//
// The kernels apply an epilogue the linear_epilogue pass fused
// (fuse_epilogue.go): an activation, SiLU, a residual add or mul.
// Constant linear weights can be packed to [K, N] for the mm kernel
// (Config.PackLinear; off by default, it did not pay on lavapipe).
func init() {
	registerLinear(Op{Name: "aten.mm.default"}, mmCall)
	registerLinear(Op{Name: "aten.bmm.default"}, bmmCall)
	registerLinear(Op{Name: "aten.addmm.default"}, addmmCall)
	registerLinear(Op{Name: "aten.matmul.default"}, matmulCallOf)
	registerLinear(Op{Name: "aten.linear.default", LoadPacks: []int{1}, LoadPack: linearLoadPack}, linearCallOf)
}

// matmulMaxTrips bounds the K-loop trips of one dispatch, well below
// llvmpipe's 65535 back-edge cap.
const matmulMaxTrips = 16384

// matmulMaxElems caps the element count of each operand so every index the
// kernels compute fits in a u32.
const matmulMaxElems = 1<<32 - 1

// matmulMaxBatchDims is how many broadcast batch dims the kernel decodes.
const matmulMaxBatchDims = 8

// MatmulPath selects the matmul kernel family.
type MatmulPath int32

// Matmul kernel families.
const (
	// MatmulAuto uses the GEMV kernel for a one-row linear and for a
	// linear of at most gemvMaxRows (16) rows with K%4 == 0 and
	// N%4 != 0, else the tiled vec4 kernel when K%4 == 0 and N%4 == 0,
	// else the tiled scalar kernel.
	MatmulAuto MatmulPath = iota
	// MatmulScalar always uses the tiled scalar kernel.
	MatmulScalar
	// MatmulNoGEMV uses the tiled kernels (as MatmulAuto) for few-row
	// linears too, instead of the GEMV kernel.
	MatmulNoGEMV
	// MatmulGEMV uses the GEMV kernel for every linear, whatever M (row
	// blocks of 16), else as MatmulAuto.
	MatmulGEMV
)

// useGEMV reports whether a linear of m rows (one batch, weight as
// exported, [n, k]) runs the GEMV kernel under path: under MatmulAuto every
// one-row linear, and up to gemvMaxRows rows where the tiled kernel would
// lose its vec4 loads to N%4 != 0 (see gemvMaxRows).
func useGEMV(path MatmulPath, m, k, n int64) bool {
	switch path {
	case MatmulGEMV:
		return true
	case MatmulAuto:
		return m == 1 || (m <= gemvMaxRows && k%4 == 0 && n%4 != 0)
	}
	return false
}

// matmulCall is one validated C = alpha·(A·B) + beta·bias call, batched
// over bdims (C contiguous, A and B batch strides 0 where broadcast).
type matmulCall struct {
	a, b, bias, out int32 // bias < 0 when absent
	m, n, k         int64
	transB          bool    // b is N×K (linear's weight)
	alpha, beta     float32 // 1, 1 except for addmm
	biasSM, biasSN  int64   // bias element strides along M and N
	bdims           []int64 // batch dims of C
	aStride         []int64 // A's batch strides (elements), per bdims
	bStride         []int64
}

// matmulPair reads mm's and bmm's [self, mat2, out] operands, both of the
// given rank.
func matmulPair(b Builder, args []int32, rank int) (x, y Tensor, err error) {
	if len(args) != 3 {
		return x, y, Errorf(-1, "want 3 args [self, mat2, out], have %d", len(args))
	}
	if x, err = matmulOperand(b, args[0], 0, "self"); err != nil {
		return x, y, err
	}
	if y, err = matmulOperand(b, args[1], 1, "mat2"); err != nil {
		return x, y, err
	}
	if len(x.Dims) != rank {
		return x, y, Errorf(0, "self must be %d-D, has dims %v", rank, x.Dims)
	}
	if len(y.Dims) != rank {
		return x, y, Errorf(1, "mat2 must be %d-D, has dims %v", rank, y.Dims)
	}
	return x, y, nil
}

func mmCall(b Builder, args []int32) (*linearCall, error) {
	x, y, err := matmulPair(b, args, 2)
	if err != nil {
		return nil, err
	}
	m, k, n := x.Dims[0], x.Dims[1], y.Dims[1]
	if y.Dims[0] != k {
		return nil, Errorf(1, "mat2 dims %v do not follow self dims %v", y.Dims, x.Dims)
	}
	if _, err := Output(b, 2, args[2], serialization.Float32, []int64{m, n}); err != nil {
		return nil, err
	}
	return f32Call(matmulCall{a: args[0], b: args[1], bias: -1, out: args[2], m: m, n: n, k: k, alpha: 1, beta: 1})
}

// f32Call is the float32 call c of the linear family's table
// (linear_family.go).
func f32Call(c matmulCall) (*linearCall, error) {
	return &linearCall{format: formatF32, f: c, half: -1, transposed: -1}, nil
}

func bmmCall(b Builder, args []int32) (*linearCall, error) {
	x, y, err := matmulPair(b, args, 3)
	if err != nil {
		return nil, err
	}
	bs, m, k, n := x.Dims[0], x.Dims[1], x.Dims[2], y.Dims[2]
	if y.Dims[0] != bs || y.Dims[1] != k {
		return nil, Errorf(1, "mat2 dims %v do not follow self dims %v", y.Dims, x.Dims)
	}
	if _, err := Output(b, 2, args[2], serialization.Float32, []int64{bs, m, n}); err != nil {
		return nil, err
	}
	if bs == 0 {
		return nil, nil
	}
	return f32Call(matmulCall{a: args[0], b: args[1], bias: -1, out: args[2], m: m, n: n, k: k, alpha: 1, beta: 1,
		bdims: []int64{bs}, aStride: []int64{m * k}, bStride: []int64{k * n}})
}

func addmmCall(b Builder, args []int32) (*linearCall, error) {
	if len(args) != 6 {
		return nil, Errorf(-1, "want 6 args [self, mat1, mat2, beta, alpha, out], have %d", len(args))
	}
	bias, err := matmulOperand(b, args[0], 0, "self")
	if err != nil {
		return nil, err
	}
	x, err := matmulOperand(b, args[1], 1, "mat1")
	if err != nil {
		return nil, err
	}
	y, err := matmulOperand(b, args[2], 2, "mat2")
	if err != nil {
		return nil, err
	}
	beta, err := b.Float(args[3])
	if err != nil {
		return nil, argErr(3, err)
	}
	alpha, err := b.Float(args[4])
	if err != nil {
		return nil, argErr(4, err)
	}
	if len(x.Dims) != 2 {
		return nil, Errorf(1, "mat1 must be 2-D, has dims %v", x.Dims)
	}
	if len(y.Dims) != 2 {
		return nil, Errorf(2, "mat2 must be 2-D, has dims %v", y.Dims)
	}
	m, k, n := x.Dims[0], x.Dims[1], y.Dims[1]
	if y.Dims[0] != k {
		return nil, Errorf(2, "mat2 dims %v do not follow mat1 dims %v", y.Dims, x.Dims)
	}
	// self broadcasts to [M, N] (rank ≤ 2, each dim equal or 1).
	if len(bias.Dims) > 2 {
		return nil, Errorf(0, "self dims %v do not broadcast to [%d %d]", bias.Dims, m, n)
	}
	bd := append(make([]int64, 2-len(bias.Dims)), bias.Dims...)
	for i := range 2 - len(bias.Dims) {
		bd[i] = 1
	}
	if (bd[0] != 1 && bd[0] != m) || (bd[1] != 1 && bd[1] != n) {
		return nil, Errorf(0, "self dims %v do not broadcast to [%d %d]", bias.Dims, m, n)
	}
	if _, err := Output(b, 5, args[5], serialization.Float32, []int64{m, n}); err != nil {
		return nil, err
	}
	call := matmulCall{a: args[1], b: args[2], bias: -1, out: args[5], m: m, n: n, k: k, alpha: float32(alpha), beta: float32(beta)}
	if beta != 0 {
		call.bias = args[0]
		if bd[0] != 1 {
			call.biasSM = bd[1]
		}
		if bd[1] != 1 {
			call.biasSN = 1
		}
	}
	return f32Call(call)
}

// matmulOp is torch.matmul: 1-D operands get a dim prepended (self) or
// appended (other) that is dropped from the result; batch dims broadcast.
func matmulCallOf(b Builder, args []int32) (*linearCall, error) {
	if len(args) != 3 {
		return nil, Errorf(-1, "want 3 args [self, other, out], have %d", len(args))
	}
	x, err := matmulOperand(b, args[0], 0, "self")
	if err != nil {
		return nil, err
	}
	y, err := matmulOperand(b, args[1], 1, "other")
	if err != nil {
		return nil, err
	}
	if len(x.Dims) == 0 || len(y.Dims) == 0 {
		return nil, Errorf(-1, "both arguments need at least 1 dim, have %v and %v", x.Dims, y.Dims)
	}
	xd, yd := x.Dims, y.Dims
	if len(xd) == 1 {
		xd = []int64{1, xd[0]}
	}
	if len(yd) == 1 {
		yd = []int64{yd[0], 1}
	}
	m, k, n := xd[len(xd)-2], xd[len(xd)-1], yd[len(yd)-1]
	if yd[len(yd)-2] != k {
		return nil, Errorf(1, "other dims %v do not follow self dims %v", y.Dims, x.Dims)
	}
	xb, yb := xd[:len(xd)-2], yd[:len(yd)-2]
	rank := max(len(xb), len(yb))
	if rank > matmulMaxBatchDims {
		return nil, Errorf(-1, "%d batch dims, at most %d supported", rank, matmulMaxBatchDims)
	}
	bdims := make([]int64, rank)
	as, bs := make([]int64, rank), make([]int64, rank)
	sa, sb := m*k, k*n
	for i := rank - 1; i >= 0; i-- {
		da, db := int64(1), int64(1)
		if j := i - (rank - len(xb)); j >= 0 {
			da = xb[j]
		}
		if j := i - (rank - len(yb)); j >= 0 {
			db = yb[j]
		}
		switch {
		case da == db || db == 1:
			bdims[i] = da
		case da == 1:
			bdims[i] = db
		default:
			return nil, Errorf(1, "batch dims of %v and %v do not broadcast", x.Dims, y.Dims)
		}
		if da != 1 {
			as[i] = sa
		}
		if db != 1 {
			bs[i] = sb
		}
		sa *= da
		sb *= db
	}
	outDims := append([]int64(nil), bdims...)
	if len(x.Dims) > 1 {
		outDims = append(outDims, m)
	}
	if len(y.Dims) > 1 {
		outDims = append(outDims, n)
	}
	if _, err := Output(b, 2, args[2], serialization.Float32, outDims); err != nil {
		return nil, err
	}
	if NumelOf(bdims) == 0 {
		return nil, nil
	}
	call := matmulCall{a: args[0], b: args[1], bias: -1, out: args[2], m: m, n: n, k: k, alpha: 1, beta: 1}
	// When other is not batched, self's batch rows fold into M (self and
	// out are contiguous).
	if NumelOf(yb) == 1 {
		call.m = m * NumelOf(bdims)
	} else {
		call.bdims, call.aStride, call.bStride = bdims, as, bs
	}
	return f32Call(call)
}

func linearCallOf(b Builder, args []int32) (*linearCall, error) {
	if len(args) != 4 {
		return nil, Errorf(-1, "want 4 args [input, weight, bias, out], have %d", len(args))
	}
	x, err := matmulOperand(b, args[0], 0, "input")
	if err != nil {
		return nil, err
	}
	w, err := matmulOperand(b, args[1], 1, "weight")
	if err != nil {
		return nil, err
	}
	if len(x.Dims) == 0 {
		return nil, Errorf(0, "input must have at least one dim")
	}
	if len(w.Dims) != 2 {
		return nil, Errorf(1, "weight must be 2-D, has dims %v", w.Dims)
	}
	k := x.Dims[len(x.Dims)-1]
	n := w.Dims[0]
	if w.Dims[1] != k {
		return nil, Errorf(1, "weight dims %v do not match input's last dim %d", w.Dims, k)
	}
	m := NumelOf(x.Dims[:len(x.Dims)-1])
	call := matmulCall{a: args[0], b: args[1], bias: -1, out: args[3], m: m, n: n, k: k, transB: true, alpha: 1, beta: 1}
	if !b.IsNull(args[2]) {
		bias, err := matmulOperand(b, args[2], 2, "bias")
		if err != nil {
			return nil, err
		}
		if len(bias.Dims) != 1 || bias.Dims[0] != n {
			return nil, Errorf(2, "bias dims %v, want [%d]", bias.Dims, n)
		}
		call.bias, call.biasSN = args[2], 1
	}
	want := append(append([]int64(nil), x.Dims[:len(x.Dims)-1]...), n)
	if _, err := Output(b, 3, args[3], serialization.Float32, want); err != nil {
		return nil, err
	}
	// The weight packings the family's kernels read (a FLOAT16 weight
	// as packed halves, linear_f16.go; [K, N] with Config.PackLinear),
	// made whatever M is.
	lc := &linearCall{format: formatF32, f: call, canHalf: canHalf(b, w), canTranspose: canTranspose(b, w)}
	if err := packLinearWeight(b, lc, w); err != nil {
		return nil, err
	}
	return lc, nil
}

// canTranspose reports whether linear weight w may be packed to [K, N]
// for the cpu family's tiled kernel (Config.PackLinear, a packer).
func canTranspose(b Builder, w Tensor) bool {
	return b.Config().PackLinear && w.Numel > 0
}

// linearPacked returns the id of linear weight w (value id, [N, K])
// transposed to [K, N] by the graph's packer, the layout the mm kernel
// reads: there each loop trip loads one vec4 of four output columns per
// weight row instead of four rows' vec4s along K. ok is false when the
// weight cannot be packed (not a constant, no packer, packing disabled);
// the caller then reads the weight as exported. The weight is packed
// whatever M is, so that the first recording (serialized dims) already
// creates it and a re-recording with another M never has to pack.
func linearPacked(b Builder, id int32, w Tensor) (int32, bool, error) {
	if !canTranspose(b, w) {
		return 0, false, nil
	}
	spec, err := TransposeSpec(w, b.MaxWorkgroupsPerDim())
	if err != nil {
		return 0, false, nil
	}
	t, err := b.PackWeight(id, spec)
	if errNoPack(err) {
		return 0, false, nil // not a weight, or not packed at load
	}
	if err != nil {
		return 0, false, err
	}
	return t.ID, true, nil
}

// matmulOperand fetches tensor id (argument arg) and requires float32.
func matmulOperand(b Builder, id int32, arg int, what string) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, Errorf(arg, "%s: value %d is %v, want a tensor", what, id, b.Kind(id))
	}
	if t.DType != serialization.Float32 {
		return Tensor{}, Errorf(arg, "%s: unsupported dtype %v (float32 only)", what, t.DType)
	}
	if t.MaxNumel > matmulMaxElems {
		return Tensor{}, Errorf(arg, "%s: %d elements is too large", what, t.MaxNumel)
	}
	return t, nil
}

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

package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
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

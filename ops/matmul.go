package ops

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.mm.default args:     [self (M×K), mat2 (K×N), out (M×N)]
// aten.linear.default args: [input (…×K), weight (N×K), bias (N) or Null, out (…×N)]
//
// Both handle their own prepacking (vkgraph-format §3.9): mat2, weight and
// bias arrive as constant tensor ids and are bound directly; they may just
// as well be activations or prepacked tensors. linear computes
// input·weightᵀ + bias with input's leading dims flattened into M (a 1-D
// input is one row). float32 only.
//
// Kernels (shaders/matmul.wgsl): a vec4 register-blocked kernel (16 rows ×
// 4 vec4 columns per invocation) when K and N are multiples of 4, a scalar
// 8×8-tile kernel otherwise. K is split into chunks of at most
// matmulMaxTrips loop trips, one accumulating dispatch each, because
// llvmpipe silently cuts loops at 65535 trips per invocation.
func init() {
	Register("aten.mm.default", mmOp)
	Register("aten.linear.default", linearOp)
}

// matmulMaxTrips bounds the K-loop trips of one dispatch, well below
// llvmpipe's 65535 back-edge cap.
const matmulMaxTrips = 16384

// matmulMaxElems caps the element count of each operand so every index the
// kernels compute fits in a u32.
const matmulMaxElems = 1<<32 - 1

// MatmulPath selects the matmul kernel family.
type MatmulPath int32

// Matmul kernel families.
const (
	// MatmulAuto uses the vec4 kernel when K%4 == 0 and N%4 == 0.
	MatmulAuto MatmulPath = iota
	// MatmulScalar always uses the scalar kernel.
	MatmulScalar
)

var matmulPath atomic.Int32

// SetMatmulPath makes graphs built afterwards use path and returns the
// previous setting. It exists so benchmarks can compare the kernels on the
// same shapes; it affects every graph built in the process.
func SetMatmulPath(path MatmulPath) MatmulPath {
	return MatmulPath(matmulPath.Swap(int32(path)))
}

// matmulCall is one validated C = A·B (+ bias) call.
type matmulCall struct {
	a, b, bias, out int32 // bias < 0 when absent
	m, n, k         int64
	transB          bool // b is N×K (linear's weight)
}

func mmOp(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, mat2, out], have %d", len(args))
	}
	x, err := matmulOperand(b, args[0], 0, "self")
	if err != nil {
		return err
	}
	y, err := matmulOperand(b, args[1], 1, "mat2")
	if err != nil {
		return err
	}
	out, err := matmulOperand(b, args[2], 2, "out")
	if err != nil {
		return err
	}
	if len(x.Dims) != 2 {
		return Errorf(0, "self must be 2-D, has dims %v", x.Dims)
	}
	if len(y.Dims) != 2 {
		return Errorf(1, "mat2 must be 2-D, has dims %v", y.Dims)
	}
	m, k, n := x.Dims[0], x.Dims[1], y.Dims[1]
	if y.Dims[0] != k {
		return Errorf(1, "mat2 dims %v do not follow self dims %v", y.Dims, x.Dims)
	}
	if !slices.Equal(out.Dims, []int64{m, n}) {
		return Errorf(2, "out dims %v, want [%d %d]", out.Dims, m, n)
	}
	return recordMatmul(b, matmulCall{a: args[0], b: args[1], bias: -1, out: args[2], m: m, n: n, k: k})
}

func linearOp(b Builder, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [input, weight, bias, out], have %d", len(args))
	}
	x, err := matmulOperand(b, args[0], 0, "input")
	if err != nil {
		return err
	}
	w, err := matmulOperand(b, args[1], 1, "weight")
	if err != nil {
		return err
	}
	out, err := matmulOperand(b, args[3], 3, "out")
	if err != nil {
		return err
	}
	if len(x.Dims) == 0 {
		return Errorf(0, "input must have at least one dim")
	}
	if len(w.Dims) != 2 {
		return Errorf(1, "weight must be 2-D, has dims %v", w.Dims)
	}
	k := x.Dims[len(x.Dims)-1]
	n := w.Dims[0]
	if w.Dims[1] != k {
		return Errorf(1, "weight dims %v do not match input's last dim %d", w.Dims, k)
	}
	m := int64(1)
	for _, d := range x.Dims[:len(x.Dims)-1] {
		m *= d
	}
	want := append(append([]int64(nil), x.Dims[:len(x.Dims)-1]...), n)
	if !slices.Equal(out.Dims, want) {
		return Errorf(3, "out dims %v, want %v", out.Dims, want)
	}
	call := matmulCall{a: args[0], b: args[1], bias: -1, out: args[3], m: m, n: n, k: k, transB: true}
	if !b.IsNull(args[2]) {
		bias, err := matmulOperand(b, args[2], 2, "bias")
		if err != nil {
			return err
		}
		if !slices.Equal(bias.Dims, []int64{n}) {
			return Errorf(2, "bias dims %v, want [%d]", bias.Dims, n)
		}
		call.bias = args[2]
	}
	return recordMatmul(b, call)
}

// f32Tensor fetches tensor id (argument arg) and requires float32.
func matmulOperand(b Builder, id int32, arg int, what string) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, Errorf(arg, "%s: value %d is %v, want a tensor", what, id, b.Kind(id))
	}
	if t.DType != serialization.Float32 {
		return Tensor{}, Errorf(arg, "%s: unsupported dtype %v (float32 only)", what, t.DType)
	}
	if t.Numel > matmulMaxElems {
		return Tensor{}, Errorf(arg, "%s: %d elements is too large", what, t.Numel)
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
}

// Register tile per invocation (rows × columns; vec4 columns for the vec4
// kernel), measured on lavapipe at N=512 (GFLOP/s, best of 10, noisy host):
// vec4 8×1 (the spec's v4-8x4) ≈15, 8×2 ≈20, 16×2 ≈23, 16×4 ≈25–30, with
// mm and linear alike; 32×4 and 16×8 gave no more. Scalar 4×4 ≈6, 8×8 ≈10,
// 16×8 ≈13. Bigger tiles cost LLVM JIT time at the first dispatch when the
// Mesa shader cache is cold (vec4 8×1 0.09 s, 16×4 0.93 s; scalar 8×8 0.2 s,
// 16×8 0.6 s), so the scalar fallback stays at 8×8.
const (
	matmulVec4Rows   = 16
	matmulVec4Cols   = 4
	matmulScalarRows = 8
	matmulScalarCols = 8
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

func recordMatmul(b Builder, c matmulCall) error {
	if c.m == 0 || c.n == 0 {
		return nil
	}
	vec4 := c.k > 0 && c.k%4 == 0 && c.n%4 == 0 && MatmulPath(matmulPath.Load()) != MatmulScalar
	sh := matmulShader{Vec4: vec4, TransB: c.transB, Bias: c.bias >= 0}
	cols, trips := c.n, c.k // columns as the kernel counts them, K-loop trips
	if vec4 {
		cols, trips = c.n/4, c.k/4
		sh.Rows, sh.Cols = matmulTile(c.m, matmulVec4Rows), matmulTile(cols, matmulVec4Cols)
	} else {
		sh.Rows, sh.Cols = matmulTile(c.m, matmulScalarRows), matmulTile(cols, matmulScalarCols)
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
	if maxg := int64(b.MaxWorkgroupsPerDim()); gx > maxg || gy > maxg {
		return Errorf(-1, "M=%d N=%d needs a %d×%d workgroup grid, over the %d per dimension limit", c.m, c.n, gx, gy, maxg)
	}
	inputs := []int32{c.a, c.b}
	if sh.Bias {
		inputs = append(inputs, c.bias)
	}
	k, err := shaders.Render("matmul.wgsl", sh, "main", shaders.Layout(len(inputs), 1, true), uint32(sh.WGX*sh.WGY))
	if err != nil {
		return err
	}
	// One dispatch per K chunk; K == 0 still needs one to write bias or 0.
	for begin := int64(0); begin == 0 || begin < trips; begin += matmulMaxTrips {
		end := min(begin+matmulMaxTrips, trips)
		var p Params
		if vec4 {
			p.U32(uint32(c.m)).U32(uint32(c.n / 4)).U32(uint32(c.k / 4))
		} else {
			p.U32(uint32(c.m)).U32(uint32(c.n)).U32(uint32(c.k))
		}
		accumulate := uint32(0)
		if begin > 0 {
			accumulate = 1
		}
		p.U32(uint32(begin)).U32(uint32(end)).U32(accumulate)
		if err := b.Dispatch(k, inputs, []int32{c.out}, p.Bytes(), [3]uint32{uint32(gx), uint32(gy), 1}); err != nil {
			return fmt.Errorf("ops: matmul: %w", err)
		}
	}
	return nil
}

package ops

import (
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.sum.dim_IntList args:  [self, dim(IntList or Null = all), keepdim, dtype(Null or Int), out]
// aten.mean.dim args:         [self, dim(IntList or Null = all), keepdim, dtype(Null or Int), out]
// aten.amax.default args:     [self, dim(IntList, empty = all), keepdim, out]
// aten.amin.default args:     [self, dim(IntList, empty = all), keepdim, out]
// aten.argmax.default args:   [self, dim(Int or Null = flattened), keepdim, out]
// aten.argmin.default args:   [self, dim(Int or Null = flattened), keepdim, out]
// aten.var.dim args:          [self, dim(IntList or Null), unbiased(Bool), keepdim, out]
// aten.var.correction args:   [self, dim(IntList or Null), correction(Int/Double/Null = 1), keepdim, out]
//
// out has self's dims with the reduced ones dropped (kept as 1 with
// keepdim). An empty dim list reduces every dim; a rank-0 self accepts dim 0
// or -1. Negative dims count from the end; repeats are refused.
//
// Dtypes: sum takes float32 or int32 (int32 wraps like int32; out may be
// float32 for an int32 self when dtype asks for it), and bool, uint8 and
// int8 (read from packed words) into int32 (torch's int64) or float32; mean and var compute in
// float32 (mean of an integer self needs a float32 out); amax/amin keep self's dtype
// and propagate NaN; argmax/argmin write int32 indices (torch's int64,
// downcast), the first index of the extreme, NaN counting as the extreme.
// var divides by max(0, N - correction) and is two-pass (mean, then the sum
// of squared deviations) in f32.
//
// Indexing: no permute. Go coalesces self's dims into runs of kept and
// reduced dims (size-1 dims dropped, neighbours of the same kind merged) and
// passes each run's size and input stride in the uniform block; the kernel
// splits an output index into kept coordinates and a reduced index into
// reduced coordinates (shaders/reduce.wgsl). Ranks up to 8 give at most 4
// runs of each kind.
//
// Kernel variants, chosen per op from the reduced extent: rows of at most
// reduceSerialMax elements take one invocation per output (a plain loop, no
// workgroup memory); longer rows take one workgroup per output, each
// invocation striding over the row, then a shared-memory tree. Workgroups
// are folded into 2-D past 65535 rows.
func init() {
	Register("aten.sum.dim_IntList", func(b Builder, a []int32) error { return reduceOp(b, "sum", a) })
	Register("aten.mean.dim", func(b Builder, a []int32) error { return reduceOp(b, "mean", a) })
	Register("aten.amax.default", func(b Builder, a []int32) error { return reduceOp(b, "amax", a) })
	Register("aten.amin.default", func(b Builder, a []int32) error { return reduceOp(b, "amin", a) })
	Register("aten.argmax.default", func(b Builder, a []int32) error { return reduceOp(b, "argmax", a) })
	Register("aten.argmin.default", func(b Builder, a []int32) error { return reduceOp(b, "argmin", a) })
	Register("aten.var.dim", func(b Builder, a []int32) error { return reduceOp(b, "var.dim", a) })
	Register("aten.var.correction", func(b Builder, a []int32) error { return reduceOp(b, "var.correction", a) })
}

const (
	reduceMaxRank = 8
	// reduceSerialMax is the longest row reduced by one invocation.
	reduceSerialMax = 16
	// reduceSerialWG is the workgroup size of the serial variant.
	reduceSerialWG = 64
	// reduceLoopBudget bounds one invocation's loop trips: llvmpipe
	// silently stops a loop after 65535 back-edges in total.
	reduceLoopBudget = 60000
)

// reduceWG is the tree variant's workgroup size for rows of n elements.
func reduceWG(n int64) int {
	if n <= 8192 {
		return 64
	}
	return 256
}

// reduceVariant is the template data of shaders/reduce.wgsl.
type reduceVariant struct {
	Op      string // sum, mean, amax, amin, argmax, argmin, var
	Packed  string // 1-byte self read from packed words: u8 (bool, uint8), i8; else ""
	In, Out string // element types of self and out: f32 or i32
	Acc     string // accumulator type
	KAxes   []int  // kept runs but the last (the index split is unrolled)
	RAxes   []int  // reduced runs but the last
	NK, NR  int    // number of kept / reduced runs
	Tree    bool
	WG      int
	Strides []int // tree steps WG/2 .. 1
}

// reducePlan is the coalesced index split shared by the reductions and
// softmax: kept and reduced runs, outermost first, with their sizes and
// input strides in elements.
type reducePlan struct {
	KSize, KStride []int64
	RSize, RStride []int64
	Rows, Extent   int64
}

// planReduce coalesces dims (contiguous row-major) with the reduced set red.
func planReduce(dims []int64, red []bool) reducePlan {
	var p reducePlan
	if NumelOf(dims) == 0 {
		// No runs: the kernel never reads self. Rows may still be
		// non-zero (a sum over an empty dim is 0, a mean NaN).
		p.Rows = 1
		for i, d := range dims {
			if red[i] {
				p.Extent *= 0
			} else {
				p.Rows *= d
			}
		}
		return p
	}
	stride := make([]int64, len(dims))
	s := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		stride[i] = s
		s *= dims[i]
	}
	last := -1 // 0 kept, 1 reduced
	for i, d := range dims {
		if d == 1 {
			continue
		}
		kind := 0
		if red[i] {
			kind = 1
		}
		if kind == last {
			// Adjacent runs of one kind are contiguous in each other.
			if kind == 1 {
				n := len(p.RSize) - 1
				p.RSize[n] *= d
				p.RStride[n] = stride[i]
			} else {
				n := len(p.KSize) - 1
				p.KSize[n] *= d
				p.KStride[n] = stride[i]
			}
			continue
		}
		last = kind
		if kind == 1 {
			p.RSize = append(p.RSize, d)
			p.RStride = append(p.RStride, stride[i])
		} else {
			p.KSize = append(p.KSize, d)
			p.KStride = append(p.KStride, stride[i])
		}
	}
	p.Rows, p.Extent = 1, 1
	for _, d := range p.KSize {
		p.Rows *= d
	}
	for _, d := range p.RSize {
		p.Extent *= d
	}
	return p
}

// reduceSteps returns the row-major index strides of runs of sizes, in u32.
func reduceSteps(sizes []int64) []uint32 {
	st := make([]uint32, len(sizes))
	s := uint64(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		st[i] = uint32(s)
		s *= uint64(sizes[i])
	}
	return st
}

func reduceU32s(v []int64) []uint32 {
	o := make([]uint32, len(v))
	for i, x := range v {
		o[i] = uint32(x)
	}
	return o
}

// params packs the plan: rows, extent, then two scalars the op uses, then
// the kept/reduced steps and strides (one vec4<u32> each).
func (p reducePlan) params(f0, f1 float32) []byte {
	var q Params
	q.U32(uint32(p.Rows)).U32(uint32(p.Extent)).F32(f0).F32(f1)
	q.U32s(reduceSteps(p.KSize), 4).U32s(reduceU32s(p.KStride), 4)
	q.U32s(reduceSteps(p.RSize), 4).U32s(reduceU32s(p.RStride), 4)
	return q.Bytes()
}

// reduceDim normalizes dim for a tensor of rank (rank 0 accepts 0 and -1).
func reduceDim(arg int, d int64, rank int) (int, error) {
	r := int64(max(rank, 1))
	if d < -r || d >= r {
		return 0, Errorf(arg, "dim %d is out of range for rank %d", d, rank)
	}
	if d < 0 {
		d += r
	}
	return int(d), nil
}

// reduceDims reads a dim list (Null or empty = all) and returns the reduced
// mask of self's dims.
func reduceDims(b Builder, arg int, id int32, rank int, single bool) ([]bool, error) {
	red := make([]bool, rank)
	all := func() ([]bool, error) {
		for i := range red {
			red[i] = true
		}
		return red, nil
	}
	if b.IsNull(id) {
		return all()
	}
	var list []int64
	if single {
		d, err := b.Int(id)
		if err != nil {
			return nil, Errorf(arg, "dim: %s", argMsg(err))
		}
		list = []int64{d}
	} else {
		l, err := b.IntList(id)
		if err != nil {
			return nil, Errorf(arg, "dim: %s", argMsg(err))
		}
		if len(l) == 0 {
			return all()
		}
		list = l
	}
	seen := map[int]bool{}
	for _, d := range list {
		n, err := reduceDim(arg, d, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, Errorf(arg, "dim %d appears more than once in %v", n, list)
		}
		seen[n] = true
		if rank > 0 {
			red[n] = true
		}
	}
	return red, nil
}

func reduceOp(b Builder, op string, args []int32) error {
	// Argument positions by op.
	nargs, keepArg, outArg := 4, 2, 3
	switch op {
	case "sum", "mean", "var.dim", "var.correction":
		nargs, keepArg, outArg = 5, 2, 4
		if op != "sum" && op != "mean" {
			keepArg = 3
		}
	}
	if len(args) != nargs {
		return Errorf(-1, "want %d args, have %d", nargs, len(args))
	}
	self, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	if len(self.Dims) > reduceMaxRank {
		return Errorf(0, "rank %d exceeds %d", len(self.Dims), reduceMaxRank)
	}
	in, ok := wgslElem(self.DType)
	packed := ""
	switch self.DType {
	case serialization.Bool, serialization.Uint8:
		packed = "u8"
	case serialization.Int8:
		packed = "i8"
	}
	if packed != "" && op != "amax" && op != "amin" && op != "var.dim" && op != "var.correction" {
		in, ok = "i32", true
	}
	if !ok {
		return Errorf(0, "unsupported dtype %v (want float32 or int32; bool, uint8 and int8 for sum, mean, argmax and argmin)", self.DType)
	}
	red, err := reduceDims(b, 1, args[1], len(self.Dims), op == "argmax" || op == "argmin")
	if err != nil {
		return err
	}
	keep, err := b.Bool(args[keepArg])
	if err != nil {
		return Errorf(keepArg, "keepdim: %s", argMsg(err))
	}
	var f0, f1 float32
	kop := op
	switch op {
	case "sum", "mean":
		if !b.IsNull(args[3]) {
			if _, err := b.Int(args[3]); err != nil {
				return Errorf(3, "dtype: %s", argMsg(err))
			}
		}
	case "var.dim", "var.correction":
		kop = "var"
		corr := 1.0
		if op == "var.dim" {
			unb, err := b.Bool(args[2])
			if err != nil {
				return Errorf(2, "unbiased: %s", argMsg(err))
			}
			if !unb {
				corr = 0
			}
		} else if !b.IsNull(args[2]) {
			c, err := b.Float(args[2])
			if err != nil {
				return Errorf(2, "correction: %s", argMsg(err))
			}
			corr = c
		}
		f1 = float32(corr)
	}

	outDT := self.DType
	acc := in
	switch kop {
	case "sum":
		// out's dtype is what dtype= asked for (int32 self: int32 out by
		// default, torch's int64 downcast).
		o, err := b.Tensor(args[outArg])
		if err != nil {
			return argErr(outArg, err)
		}
		outDT = o.DType
		if outDT != serialization.Float32 && outDT != serialization.Int32 {
			return Errorf(outArg, "out is %v, want float32 or int32", outDT)
		}
		if outDT == serialization.Int32 && self.DType == serialization.Float32 {
			return Errorf(outArg, "out is int32 but self is float32")
		}
		acc, _ = wgslElem(outDT)
	case "mean", "var":
		outDT, acc = serialization.Float32, "f32"
		if kop == "var" && self.DType != serialization.Float32 {
			return Errorf(0, "var needs a float32 self, have %v", self.DType)
		}
	case "argmax", "argmin":
		outDT, acc = serialization.Int32, in
	}
	outElem, _ := wgslElem(outDT)

	var outDims []int64
	for i, d := range self.Dims {
		switch {
		case !red[i]:
			outDims = append(outDims, d)
		case keep:
			outDims = append(outDims, 1)
		}
	}
	if outDims == nil {
		outDims = []int64{}
	}
	if _, err := Output(b, outArg, args[outArg], outDT, outDims); err != nil {
		return err
	}
	plan := planReduce(self.Dims, red)
	if plan.Rows == 0 {
		return nil
	}
	if plan.Extent == 0 && kop != "sum" && kop != "mean" && kop != "var" {
		return Errorf(1, "%s of an empty dimension is undefined", kop)
	}
	if self.Numel >= 1<<32 {
		return Errorf(0, "%d elements exceed the kernel's 32-bit indexing", self.Numel)
	}
	switch kop {
	case "mean":
		f0 = float32(plan.Extent)
	case "var":
		f0 = float32(math.Max(0, float64(plan.Extent)-float64(f1)))
	}
	passes := int64(1)
	if kop == "var" {
		passes = 2
	}
	v := reduceVariant{Op: kop, Packed: packed, In: in, Out: outElem, Acc: acc, NK: len(plan.KSize), NR: len(plan.RSize),
		KAxes: permuteIota(len(plan.KSize) - 1), RAxes: permuteIota(len(plan.RSize) - 1)}
	grid, err := reduceGrid(b, &v.Tree, &v.WG, &v.Strides, plan, passes)
	if err != nil {
		return err
	}
	k, err := shaders.Render("reduce.wgsl", v, "main", shaders.Layout(1, 1, true), uint32(v.WG))
	if err != nil {
		return err
	}
	return b.Dispatch(k, []int32{args[0]}, []int32{args[outArg]}, plan.params(f0, f1), grid)
}

// reduceGrid picks the serial or tree variant for plan (passes loops over
// each row) and returns its grid.
func reduceGrid(b Builder, tree *bool, wg *int, strides *[]int, plan reducePlan, passes int64) ([3]uint32, error) {
	if plan.Extent <= reduceSerialMax {
		*wg = reduceSerialWG
		return Grid(uint64(plan.Rows), reduceSerialWG, b.MaxWorkgroupsPerDim())
	}
	*tree, *wg = true, reduceWG(plan.Extent)
	trips := passes * ((plan.Extent + int64(*wg) - 1) / int64(*wg))
	if trips > reduceLoopBudget {
		return [3]uint32{}, Errorf(0, "rows of %d elements are too long for one workgroup (%d loop trips per invocation, the device stops at 65535)", plan.Extent, trips)
	}
	for s := *wg / 2; s > 0; s /= 2 {
		*strides = append(*strides, s)
	}
	// One workgroup per row.
	return Grid(uint64(plan.Rows), 1, b.MaxWorkgroupsPerDim())
}

package ops

import (
	"math"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// The gather kernel (shaders/gather.wgsl) is shared by the shape and
// indexing ops: each describes its output as a gatherPlan, a strided and
// optionally indexed view of its input, and recordGather turns the plan
// into one dispatch.

const (
	gatherWG      = 256
	gatherMaxRank = 16 // the uniform block holds 16 dims
	gatherMaxIdx  = 6  // index tensors per dispatch (8 storage bindings)
)

// gatherIndex is one int32 index tensor of a plan.
type gatherIndex struct {
	id     int32
	stride []int64 // per plan dim, the step in the index tensor (0: broadcast)
	size   int64   // size of the input dim it indexes
	step   int64   // input element stride of that dim
}

// gatherPlan maps output element coordinates c (over dims, row-major) to
// the input element base + Σ c[k]·stride[k] + Σ idx_j[p_j]·step_j.
type gatherPlan struct {
	dims   []int64
	stride []int64 // input element stride per dim (negative for flip)
	base   int64
	idx    []gatherIndex
	// region >= 0 restricts the dispatch to the elements whose coordinate
	// along dim region is in [lo, hi) (cat); the rest are left untouched.
	region int
	lo, hi int64
}

// gatherContig returns the row-major element strides of dims.
func gatherContig(dims []int64) []int64 {
	s := make([]int64, len(dims))
	st := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		s[i] = st
		st *= dims[i]
	}
	return s
}

// gatherView returns the plan reading a contiguous tensor of dims as is.
func gatherView(dims []int64) gatherPlan {
	return gatherPlan{dims: append([]int64(nil), dims...), stride: gatherContig(dims), region: -1}
}

// coalesce drops size-1 dims and merges neighbours that every operand steps
// through as one; the region dim is kept as is.
func (p *gatherPlan) coalesce() {
	var dims, stride []int64
	istr := make([][]int64, len(p.idx))
	region := -1
	for k := range p.dims {
		if k == p.region {
			region = len(dims)
		} else if p.dims[k] == 1 {
			continue
		} else if n := len(dims) - 1; n >= 0 && n != region && p.canMerge(stride[n], p.stride[k], p.dims[k], istr, n, k) {
			dims[n] *= p.dims[k]
			stride[n] = p.stride[k]
			for j := range p.idx {
				istr[j][n] = p.idx[j].stride[k]
			}
			continue
		}
		dims = append(dims, p.dims[k])
		stride = append(stride, p.stride[k])
		for j := range p.idx {
			istr[j] = append(istr[j], p.idx[j].stride[k])
		}
	}
	if len(dims) == 0 {
		dims, stride = []int64{1}, []int64{0}
		for j := range p.idx {
			istr[j] = []int64{0}
		}
	}
	p.dims, p.stride, p.region = dims, stride, region
	for j := range p.idx {
		p.idx[j].stride = istr[j]
	}
}

// canMerge reports whether merged dim n (outer) and plan dim k (inner, of
// size d) can become one: every operand's outer stride is d inner strides.
func (p *gatherPlan) canMerge(outer, inner, d int64, istr [][]int64, n, k int) bool {
	if outer != inner*d {
		return false
	}
	for j := range p.idx {
		if istr[j][n] != p.idx[j].stride[k]*d {
			return false
		}
	}
	return true
}

// scale multiplies every input offset by f (an element split into f
// pieces) and appends a dim of f pieces.
func (p *gatherPlan) split(f int64) {
	for k := range p.stride {
		p.stride[k] *= f
	}
	p.base *= f
	for j := range p.idx {
		p.idx[j].step *= f
		p.idx[j].stride = append(p.idx[j].stride, 0)
	}
	p.dims = append(p.dims, f)
	p.stride = append(p.stride, 1)
}

// widen turns a plan over elements into one over groups of f elements
// (sub-word elements into u32 words, words into vec4s) when the innermost
// dim moves whole groups: stride 1, a multiple of f long, and every other
// offset a multiple of f. It reports success.
func (p *gatherPlan) widen(f int64) bool {
	n := len(p.dims) - 1
	if n < 0 || n == p.region || p.stride[n] != 1 || p.dims[n]%f != 0 || p.base%f != 0 {
		return false
	}
	for k := 0; k < n; k++ {
		if p.stride[k]%f != 0 {
			return false
		}
	}
	for _, ix := range p.idx {
		if ix.stride[n] != 0 || ix.step%f != 0 {
			return false
		}
	}
	p.dims[n] /= f
	for k := 0; k < n; k++ {
		p.stride[k] /= f
	}
	p.base /= f
	for j := range p.idx {
		p.idx[j].step /= f
	}
	return true
}

// gatherAxis is one unrolled per-axis step of the kernel.
type gatherAxis struct {
	V, C          int // dims[V][C]
	First, Region bool
}

type gatherIdxBind struct{ J, B int }

// gatherVariant is the template data of shaders/gather.wgsl.
type gatherVariant struct {
	WG, ES, OutB, ParB, IStrVecs int
	T                            string // the unit moved at ES 4: u32 or vec4<u32>
	Per, Shift, SubMask, Bits    int
	Mask                         uint32
	HasRegion                    bool
	Axes                         []gatherAxis
	Idx                          []gatherIdxBind
	Subs                         []int
}

// recordGather records the dispatch computing out (whose live shape the
// caller has set) from in by plan p.
func recordGather(b Builder, p gatherPlan, in Tensor, outID int32) error {
	out, err := b.Tensor(outID)
	if err != nil {
		return err
	}
	if out.Numel == 0 || (p.region >= 0 && p.lo >= p.hi) {
		return nil
	}
	es := in.DType.Size()
	if es != 1 && es != 2 && es != 4 && es != 8 {
		return Errorf(0, "unsupported dtype %v", in.DType)
	}
	if in.NBytes > math.MaxInt32 || out.NBytes > math.MaxInt32 {
		return Errorf(-1, "tensors of %d and %d bytes exceed the kernel's 32-bit indexing", in.NBytes, out.NBytes)
	}
	if len(p.idx) > gatherMaxIdx {
		return Errorf(-1, "%d index tensors; the kernel binds at most %d", len(p.idx), gatherMaxIdx)
	}
	if es == 8 {
		p.split(2)
		es = 4
	}
	p.coalesce()
	if es < 4 && p.widen(int64(4/es)) {
		es = 4
	}
	// Whole vec4s when possible (buffers are padded to 16 bytes); es then
	// stays 4 with a vec4<u32> as the unit.
	vec4 := es == 4 && p.widen(4)
	if len(p.dims) > gatherMaxRank {
		return Errorf(-1, "the gather needs %d dims after merging, the kernel holds %d", len(p.dims), gatherMaxRank)
	}
	numel := NumelOf(p.dims)
	// The words to visit: all of them, or those spanning the region.
	per := int64(4 / es)
	first, last := int64(0), numel-1
	if p.region >= 0 {
		inner := NumelOf(p.dims[p.region+1:])
		outer := NumelOf(p.dims[:p.region])
		first = p.lo * inner
		last = (outer-1)*p.dims[p.region]*inner + p.hi*inner - 1
	}
	w0, w1 := first/per, last/per+1

	v := gatherVariant{WG: gatherWG, ES: es, OutB: 1 + len(p.idx), ParB: 2 + len(p.idx),
		IStrVecs: 4 * len(p.idx), HasRegion: p.region >= 0, T: "u32"}
	if vec4 {
		v.T = "vec4<u32>"
	}
	if es < 4 {
		v.Per, v.Bits = int(per), 8*es
		v.Shift = map[int]int{1: 2, 2: 1}[es]
		v.SubMask = int(per) - 1
		v.Mask = uint32(1)<<v.Bits - 1
		for s := 0; s < int(per); s++ {
			v.Subs = append(v.Subs, s)
		}
	}
	for k := len(p.dims) - 1; k >= 0; k-- {
		v.Axes = append(v.Axes, gatherAxis{V: k / 4, C: k % 4, First: k == 0, Region: k == p.region})
	}
	ids := []int32{in.ID}
	for j, ix := range p.idx {
		v.Idx = append(v.Idx, gatherIdxBind{J: j, B: 1 + j})
		ids = append(ids, ix.id)
	}
	k, err := shaders.Render("gather.wgsl", v, "main", shaders.Layout(1+len(p.idx), 1, true), gatherWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(w1-w0), gatherWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var q Params
	q.U32(uint32(w1 - w0)).U32(uint32(numel)).U32(uint32(w0)).I32(int32(p.base))
	q.U32(uint32(max(p.lo, 0))).U32(uint32(max(p.hi, 0))).U32(0).U32(0)
	u := make([]uint32, len(p.dims))
	for i, d := range p.dims {
		u[i] = uint32(d)
	}
	q.U32s(u, gatherMaxRank)
	for i, s := range p.stride {
		u[i] = uint32(int32(s))
	}
	q.U32s(u, gatherMaxRank)
	for _, ix := range p.idx {
		for i, s := range ix.stride {
			u[i] = uint32(s)
		}
		q.U32s(u, gatherMaxRank)
	}
	for _, ix := range p.idx {
		q.I32(int32(ix.size)).I32(int32(ix.step)).U32(0).U32(0)
	}
	return b.Dispatch(k, ids, []int32{outID}, q.Bytes(), grid)
}

// gatherDim normalizes dim for a rank-rank tensor the torch way (negative
// counts from the end; a scalar accepts -1 and 0 as if it had rank 1).
func gatherDim(arg int, dim int64, rank int) (int, error) {
	r := int64(max(rank, 1))
	d := dim
	if d < 0 {
		d += r
	}
	if d < 0 || d >= r {
		return 0, Errorf(arg, "dim %d is out of range for rank %d", dim, rank)
	}
	return int(d), nil
}

// gatherDimArg reads the Int dim argument arg and normalizes it with
// gatherDim for a rank-rank tensor.
func gatherDimArg(b Builder, args []int32, arg int, rank int) (int, error) {
	d, err := gatherInt(b, args, arg, "dim")
	if err != nil {
		return 0, err
	}
	return gatherDim(arg, d, rank)
}

// gatherInput reads a tensor argument.
func gatherInput(b Builder, args []int32, arg int) (Tensor, error) {
	t, err := b.Tensor(args[arg])
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	return t, nil
}

// gatherInt reads an Int (or SymInt) argument.
func gatherInt(b Builder, args []int32, arg int, what string) (int64, error) {
	v, err := b.Int(args[arg])
	if err != nil {
		return 0, Errorf(arg, "%s: %s", what, argMsg(err))
	}
	return v, nil
}

// gatherArgs checks the arg count.
func gatherArgs(args []int32, want int, layout string) error {
	if len(args) != want {
		return Errorf(-1, "want %d args %s, have %d", want, layout, len(args))
	}
	return nil
}

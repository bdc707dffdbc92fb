package ops

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.add.Tensor args: [self, other, alpha, out]
// aten.sub.Tensor args: [self, other, alpha, out]
// aten.mul.Tensor args: [self, other, out]
// aten.div.Tensor args: [self, other, out]
//
// out = self + alpha*other, self - alpha*other, self*other, self/other, with
// NumPy/PyTorch broadcasting of self and other to out's dims. alpha may be
// Int or Double (the exporter deduplicates 1 and 1.0) or Null (1).
//
// Elements are float32 or int32, mixed freely. add, sub and mul compute in
// out's type, so an int32 out wraps like int32; an int32 out with a float32
// input is refused, as torch refuses to cast the float result. div is true
// division: it computes in float32 and out must be float32.
func init() {
	Register("aten.add.Tensor", func(b Builder, args []int32) error { return binaryOp(b, "add", args) })
	Register("aten.sub.Tensor", func(b Builder, args []int32) error { return binaryOp(b, "sub", args) })
	Register("aten.mul.Tensor", func(b Builder, args []int32) error { return binaryOp(b, "mul", args) })
	Register("aten.div.Tensor", func(b Builder, args []int32) error { return binaryOp(b, "div", args) })
}

const (
	// binaryWG: on llvmpipe 256 ran a 4M-element add about twice as fast as
	// 64 (fewer, longer workgroups; see BenchmarkAdd in ops/opstest).
	binaryWG = 256
	// binaryMaxRank is how many coalesced dims the strided kernel's params
	// hold (two vec4<u32> per array).
	binaryMaxRank = 8
)

// binaryVariant is the template data of shaders/binary.wgsl.
type binaryVariant struct {
	Op               string // add, sub, mul, div
	ABuf, BBuf, OBuf string // array element types of the bindings
	CS, CT           string // compute scalar type, and its W-wide value type
	W                int    // outputs per invocation: 1 or 4
	AVec, BVec       bool   // input read W-wide (else one element, splatted)
	Rank             int    // coalesced dims: 1 is plain elementwise
	WG               int
}

// binaryParams is the Go twin of binary.wgsl's Params: 4 scalars then three
// array<vec4<u32>, 2>, 112 bytes with no implicit padding.
type binaryParams struct {
	N      uint32 // invocations with work: out elements / W
	Rank   uint32 // coalesced rank; the kernel bakes it in, so this is for debugging
	AlphaF float32
	AlphaI int32
	Dims   [binaryMaxRank]uint32 // coalesced out dims, innermost first
	SA, SB [binaryMaxRank]uint32 // element strides, 0 where broadcast
}

func (p *binaryParams) bytes() []byte {
	var q Params
	q.U32(p.N).U32(p.Rank).F32(p.AlphaF).I32(p.AlphaI)
	q.U32s(p.Dims[:], binaryMaxRank).U32s(p.SA[:], binaryMaxRank).U32s(p.SB[:], binaryMaxRank)
	return q.Bytes()
}

// wgslElem maps the element types the elementwise kernels handle.
func wgslElem(dt serialization.DataType) (string, bool) {
	switch dt {
	case serialization.Float32:
		return "f32", true
	case serialization.Int32:
		return "i32", true
	}
	return "", false
}

func binaryOp(b Builder, op string, args []int32) error {
	hasAlpha := op == "add" || op == "sub"
	want, layout := 3, "[self, other, out]"
	if hasAlpha {
		want, layout = 4, "[self, other, alpha, out]"
	}
	if len(args) != want {
		return Errorf(-1, "want %d args %s, have %d", want, layout, len(args))
	}
	outArg := want - 1
	var ts [3]Tensor
	var ty [3]string
	for i, arg := range []int{0, 1, outArg} {
		t, err := b.Tensor(args[arg])
		if err != nil {
			return argErr(arg, err)
		}
		s, ok := wgslElem(t.DType)
		if !ok {
			return Errorf(arg, "unsupported dtype %v (want float32 or int32)", t.DType)
		}
		ts[i], ty[i] = t, s
	}
	self, other, out := ts[0], ts[1], ts[2]
	cs := ty[2]
	switch {
	case op == "div" && cs != "f32":
		return Errorf(outArg, "div is true division and yields float32, but out is %v", out.DType)
	case cs == "i32" && (ty[0] == "f32" || ty[1] == "f32"):
		return Errorf(outArg, "out is int32 but an input is float32 (torch does not cast the float result to int)")
	}

	bc, ok := BroadcastShape(self.Dims, other.Dims)
	if !ok {
		return Errorf(-1, "cannot broadcast self %v with other %v", self.Dims, other.Dims)
	}
	if !slices.Equal(bc, out.Dims) {
		return Errorf(outArg, "self %v and other %v broadcast to %v, but out is %v", self.Dims, other.Dims, bc, out.Dims)
	}
	if out.Numel >= 1<<32 {
		return Errorf(outArg, "%d elements exceed the kernel's 32-bit indexing", out.Numel)
	}

	p := binaryParams{AlphaF: 1, AlphaI: 1}
	if hasAlpha && !b.IsNull(args[2]) {
		if cs == "i32" {
			alpha, err := b.Int(args[2])
			if err != nil {
				return Errorf(2, "alpha for an int32 result: %s", argMsg(err))
			}
			if alpha != int64(int32(alpha)) {
				return Errorf(2, "alpha %d overflows int32", alpha)
			}
			p.AlphaI = int32(alpha)
		} else {
			alpha, err := b.Float(args[2])
			if err != nil {
				return Errorf(2, "alpha: %s", argMsg(err))
			}
			p.AlphaF = float32(alpha)
		}
	}
	if out.Numel == 0 {
		return nil
	}

	dims, sa, sb := coalesceBroadcast(out.Dims, self.Dims, other.Dims)
	if len(dims) > binaryMaxRank {
		return Errorf(outArg, "broadcast of %v and %v into %v needs %d dims after merging, the kernel holds %d",
			self.Dims, other.Dims, out.Dims, len(dims), binaryMaxRank)
	}
	v := binaryVariant{Op: op, CS: cs, W: 1, WG: binaryWG, Rank: len(dims)}
	if dims[0]%4 == 0 {
		v.W = 4
	}
	v.AVec, v.BVec = sa[0] == 1, sb[0] == 1
	v.CT = vecType(cs, v.W)
	v.ABuf, v.BBuf, v.OBuf = ty[0], ty[1], vecType(ty[2], v.W)
	if v.AVec {
		v.ABuf = vecType(ty[0], v.W)
	}
	if v.BVec {
		v.BBuf = vecType(ty[1], v.W)
	}

	p.N = uint32(out.Numel) / uint32(v.W)
	if v.Rank > 1 {
		p.Rank = uint32(len(dims))
		for k := range dims {
			p.Dims[k], p.SA[k], p.SB[k] = uint32(dims[k]), uint32(sa[k]), uint32(sb[k])
		}
	}
	k, err := shaders.Render("binary.wgsl", v, "main", shaders.Layout(2, 1, true), binaryWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(p.N), binaryWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	// self and other may be the same value (x*x): binding one buffer
	// read-only twice is legal.
	return b.Dispatch(k, []int32{args[0], args[1]}, []int32{args[outArg]}, p.bytes(), grid)
}

// argMsg is err's message without the "ops: op:" prefix an accessor's
// *ArgError would print (its Op is not filled in yet).
func argMsg(err error) string {
	if ae, ok := err.(*ArgError); ok {
		return ae.Msg
	}
	return err.Error()
}

// argErr attributes an accessor's error to argument arg.
func argErr(arg int, err error) error { return Errorf(arg, "%s", argMsg(err)) }

func vecType(s string, w int) string {
	if w == 1 {
		return s
	}
	return fmt.Sprintf("vec%d<%s>", w, s)
}

// BroadcastShape returns the NumPy/PyTorch broadcast of shapes a and b:
// right-aligned, and a size-1 dim stretches to the other's size.
func BroadcastShape(a, b []int64) ([]int64, bool) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := 1; i <= n; i++ {
		da, db := int64(1), int64(1)
		if i <= len(a) {
			da = a[len(a)-i]
		}
		if i <= len(b) {
			db = b[len(b)-i]
		}
		switch {
		case da == db, db == 1:
			out[n-i] = da
		case da == 1:
			out[n-i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// coalesceBroadcast describes reading a and b broadcast to out (a valid
// broadcast) as few dims as possible. It returns out's dims innermost first
// and each input's element stride along them, 0 where the input is
// broadcast. Size-1 dims are dropped, and neighbours merge when both inputs
// step through them as one (stride[outer] == stride[inner]*dims[inner]).
// It always returns at least one dim: a one-element out is dims [1] with
// zero strides. Inputs are contiguous and row-major.
func coalesceBroadcast(out, a, b []int64) (dims, sa, sb []int64) {
	strides := func(x []int64) []int64 {
		s := make([]int64, len(out))
		step := int64(1)
		for i := 1; i <= len(out); i++ {
			if i > len(x) {
				break
			}
			if d := x[len(x)-i]; d != 1 {
				s[len(out)-i] = step
				step *= d
			}
		}
		return s
	}
	ta, tb := strides(a), strides(b)
	for i := len(out) - 1; i >= 0; i-- {
		d := out[i]
		if d == 1 {
			continue
		}
		if k := len(dims) - 1; k >= 0 && ta[i] == sa[k]*dims[k] && tb[i] == sb[k]*dims[k] {
			dims[k] *= d
			continue
		}
		dims, sa, sb = append(dims, d), append(sa, ta[i]), append(sb, tb[i])
	}
	if len(dims) == 0 {
		return []int64{1}, []int64{0}, []int64{0}
	}
	return dims, sa, sb
}

package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.{eq,ne,lt,le,gt,ge}.Tensor args:  [self, other, out]
// aten.{eq,ne,lt,le,gt,ge}.Scalar args:  [self, other(Int/Double/Bool), out]
// aten.logical_{and,or,xor}.default args: [self, other, out]
//
// Elementwise comparisons and logical ops with NumPy/PyTorch broadcasting;
// out is bool and its live shape the broadcast of the inputs'. Inputs are
// float32, int32 or bool, mixed freely. Comparisons compute in torch's
// promoted type: float32 when either side is float32 (an int32 is rounded
// to float32 first, as torch does), else int32 (bool as 0/1). A .Scalar
// other compares in float32 for a float32 self or a non-integral scalar,
// else in int32, where it must fit. NaN compares unequal to everything.
// Logical ops test each input against zero (NaN is true).
//
// bool tensors are packed four to a u32 word, so each invocation writes one
// whole word: four consecutive outputs.
func init() {
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		Register("aten."+op+".Tensor", func(b Builder, args []int32) error { return compareOp(b, op, false, args) })
		Register("aten."+op+".Scalar", func(b Builder, args []int32) error { return compareOp(b, op, true, args) })
	}
	for _, op := range []string{"and", "or", "xor"} {
		Register("aten.logical_"+op+".default", func(b Builder, args []int32) error { return compareOp(b, op, false, args) })
	}
}

// compareWG: one invocation handles four outputs.
const compareWG = 256

// compareVariant is the template data of shaders/compare.wgsl.
type compareVariant struct {
	Op           string // eq, ne, lt, le, gt, ge, and, or, xor
	AT, BT       string // element types: f32, i32, u8
	ABuf, BBuf   string // array element types of the bindings
	CS           string // compute type: f32 or i32
	BScalar      bool   // other is params.s_f / s_i, not a binding
	Rank         int    // merged dims
	OBind, PBind int
	WG           int
}

func compareOp(b Builder, op string, scalar bool, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, other, out], have %d", len(args))
	}
	self, at, err := ewTensor(b, args, 0)
	if err != nil {
		return err
	}
	if !scalar {
		other, _, err := ewTensor(b, args, 1)
		if err != nil {
			return err
		}
		return compareTensors(b, op, args, self, other)
	}
	sc, err := scalarArg(b, 1, args[1])
	if err != nil {
		return err
	}
	v := compareVariant{Op: op, AT: at, CS: "i32", BScalar: true, OBind: 1, PBind: 2, WG: compareWG}
	var p ewParams
	if self.DType == serialization.Float32 || !sc.Integral {
		v.CS = "f32"
		p.SF = float32(sc.F)
	} else {
		if !fitsInt32(sc.I) {
			return Errorf(1, "scalar %d does not fit the int32 comparison", sc.I)
		}
		p.SI = int32(sc.I)
	}
	v.BT = v.CS
	if _, err := Output(b, 2, args[2], serialization.Bool, self.Dims); err != nil {
		return err
	}
	dims, strides := coalesce(self.Dims, self.Dims)
	return compareDispatch(b, v, p, []int32{args[0]}, args[2], dims, strides)
}

// compareTensors records a bool-valued op of two tensors; args are
// [self, other, out].
func compareTensors(b Builder, op string, args []int32, self, other Tensor) error {
	at, _ := ewElem(self.DType)
	bt, _ := ewElem(other.DType)
	v := compareVariant{Op: op, AT: at, BT: bt, CS: "i32", OBind: 2, PBind: 3, WG: compareWG}
	if promote(self.DType, other.DType) == serialization.Float32 {
		v.CS = "f32"
	}
	bc, ok := BroadcastShape(self.Dims, other.Dims)
	if !ok {
		return Errorf(-1, "cannot broadcast self %v with other %v", self.Dims, other.Dims)
	}
	if _, err := Output(b, 2, args[2], serialization.Bool, bc); err != nil {
		return err
	}
	dims, strides := coalesce(bc, self.Dims, other.Dims)
	return compareDispatch(b, v, ewParams{}, []int32{args[0], args[1]}, args[2], dims, strides)
}

func compareDispatch(b Builder, v compareVariant, p ewParams, inputs []int32, outID int32, dims []int64, strides [][]int64) error {
	out, err := b.Tensor(outID)
	if err != nil {
		return argErr(2, err)
	}
	if out.Numel >= 1<<32-4 {
		return Errorf(2, "%d elements exceed the kernel's 32-bit indexing", out.Numel)
	}
	if out.Numel == 0 {
		return nil
	}
	if len(dims) > ewMaxRank {
		return Errorf(2, "the broadcast into %v needs %d dims after merging, the kernel holds %d", out.Dims, len(dims), ewMaxRank)
	}
	v.Rank = len(dims)
	v.ABuf, v.BBuf = ewBuf(v.AT), ewBuf(v.BT)
	p.Numel = uint32(out.Numel)
	p.N = uint32((out.Numel + 3) / 4)
	p.setShape(dims, strides)
	k, err := shaders.Render("compare.wgsl", v, "main", shaders.Layout(len(inputs), 1, true), compareWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(p.N), compareWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, inputs, []int32{outID}, p.bytes(), grid)
}

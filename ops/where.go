package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.where.self args: [condition, self, other, out]
//
// out = condition ? self : other elementwise, with all three broadcast
// together (NumPy/PyTorch rules); out's live shape is that broadcast.
// condition is bool. self and other are float32, int32 or bool, mixed
// freely; out's dtype must be their promotion (float32, else int32, else
// bool), and the chosen value is converted to it.
func init() {
	Register("aten.where.self", whereOp)
}

const whereWG = 256

// whereVariant is the template data of shaders/where.wgsl.
type whereVariant struct {
	AT, BT     string // element types of self and other: f32, i32, u8
	ABuf, BBuf string // array element types of their bindings
	OT         string // out's element type: f32, i32, u8
	OBuf       string
	Rank       int // merged dims
	WG         int
}

func whereOp(b Builder, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [condition, self, other, out], have %d", len(args))
	}
	cond, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	if cond.DType != serialization.Bool {
		return Errorf(0, "condition is %v, want bool", cond.DType)
	}
	self, at, err := ewTensor(b, args, 1)
	if err != nil {
		return err
	}
	other, bt, err := ewTensor(b, args, 2)
	if err != nil {
		return err
	}
	want := promote(self.DType, other.DType)
	bc, ok := BroadcastShape(cond.Dims, self.Dims)
	if ok {
		bc, ok = BroadcastShape(bc, other.Dims)
	}
	if !ok {
		return Errorf(-1, "cannot broadcast condition %v, self %v and other %v", cond.Dims, self.Dims, other.Dims)
	}
	out, err := Output(b, 3, args[3], want, bc)
	if err != nil {
		return err
	}
	if out.Numel >= 1<<32-4 {
		return Errorf(3, "%d elements exceed the kernel's 32-bit indexing", out.Numel)
	}
	if out.Numel == 0 {
		return nil
	}
	dims, strides := coalesce(bc, cond.Dims, self.Dims, other.Dims)
	if len(dims) > ewMaxRank {
		return Errorf(3, "the broadcast into %v needs %d dims after merging, the kernel holds %d", bc, len(dims), ewMaxRank)
	}
	ot, _ := ewElem(want)
	v := whereVariant{AT: at, BT: bt, ABuf: ewBuf(at), BBuf: ewBuf(bt), OT: ot, OBuf: ewBuf(ot), Rank: len(dims), WG: whereWG}
	p := ewParams{Numel: uint32(out.Numel), N: uint32(out.Numel)}
	if ot == "u8" {
		p.N = uint32((out.Numel + 3) / 4)
	}
	p.setShape(dims, strides)
	k, err := shaders.Render("where.wgsl", v, "main", shaders.Layout(3, 1, true), whereWG)
	if err != nil {
		return err
	}
	grid, err := Grid(uint64(p.N), whereWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, []int32{args[0], args[1], args[2]}, []int32{args[3]}, p.bytes(), grid)
}

package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten._softmax.default args:     [self, dim, half_to_float(Bool), out]
// aten._log_softmax.default args: [self, dim, half_to_float(Bool), out]
//
// out = softmax / log_softmax of float32 self along dim (any dim, negative
// counted from the end; a rank-0 self is one row of one element), out has
// self's dims. Numerically stable: m = max of the row, then
// exp(x - m) / sum(exp(x - m)) or x - m - log(sum(exp(x - m))). A NaN in a
// row makes the whole row NaN, as in torch. half_to_float must be false
// (there is no half on the device).
//
// Rows are indexed like the reductions (planReduce with the one reduced
// dim, shaders/softmax.wgsl): short rows take one invocation each, longer
// ones one workgroup with two shared-memory trees (max, then sum).
func init() {
	Register("aten._softmax.default", func(b Builder, a []int32) error { return softmaxOp(b, false, a) })
	Register("aten._log_softmax.default", func(b Builder, a []int32) error { return softmaxOp(b, true, a) })
}

// softmaxVariant is the template data of shaders/softmax.wgsl.
type softmaxVariant struct {
	Log          bool
	KAxes, RAxes []int
	NK, NR       int
	Tree         bool
	WG           int
	Strides      []int
}

func softmaxOp(b Builder, log bool, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [self, dim, half_to_float, out], have %d", len(args))
	}
	self, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	if self.DType != serialization.Float32 {
		return Errorf(0, "unsupported dtype %v (want float32)", self.DType)
	}
	if len(self.Dims) > reduceMaxRank {
		return Errorf(0, "rank %d exceeds %d", len(self.Dims), reduceMaxRank)
	}
	d, err := b.Int(args[1])
	if err != nil {
		return Errorf(1, "dim: %s", argMsg(err))
	}
	dim, err := reduceDim(1, d, len(self.Dims))
	if err != nil {
		return err
	}
	h, err := b.Bool(args[2])
	if err != nil {
		return Errorf(2, "half_to_float: %s", argMsg(err))
	}
	// half_to_float (torch: a half input, a float output) is valid only
	// for a FLOAT16 input; held as float32, its result is the same float
	// softmax.
	if h && !self.Half {
		return Errorf(2, "half_to_float is true, but the input is not float16")
	}
	if _, err := Output(b, 3, args[3], serialization.Float32, self.Dims); err != nil {
		return err
	}
	if self.Numel == 0 {
		return nil
	}
	if self.Numel >= 1<<32 {
		return Errorf(0, "%d elements exceed the kernel's 32-bit indexing", self.Numel)
	}
	red := make([]bool, len(self.Dims))
	if len(red) > 0 {
		red[dim] = true
	}
	plan := planReduce(self.Dims, red)
	v := softmaxVariant{Log: log, NK: len(plan.KSize), NR: len(plan.RSize),
		KAxes: permuteIota(len(plan.KSize) - 1), RAxes: permuteIota(len(plan.RSize) - 1)}
	grid, err := reduceGrid(b, &v.Tree, &v.WG, &v.Strides, plan, 3)
	if err != nil {
		return err
	}
	k, err := shaders.Render("softmax.wgsl", v, "main", shaders.Layout(1, 1, true), uint32(v.WG))
	if err != nil {
		return err
	}
	return b.Dispatch(k, []int32{args[0]}, []int32{args[3]}, plan.params(0, 0), grid)
}

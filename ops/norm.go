package ops

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// aten.native_layer_norm.default args: [input, normalized_shape(IntList), weight(tensor/Null), bias(tensor/Null), eps, ValueList[out, mean, rstd]]
// et_vk.rms_norm.default args: [x, weight(tensor/Null), eps, out]
// aten.native_group_norm.default args: [input, weight(tensor/Null), bias(tensor/Null), N, C, HxW, group, eps, ValueList[out, mean, rstd]]
// aten._native_batch_norm_legit_no_training.default args: [input, weight(tensor/Null), bias(tensor/Null), running_mean, running_var, momentum, eps, ValueList[out, save_mean, save_invstd]]
//
// All float32. layer_norm normalizes over the trailing dims named by
// normalized_shape (one or more; weight and bias hold that many elements);
// mean and rstd = 1/sqrt(biased var + eps) have input's dims with the
// normalized ones set to 1. rms_norm is x * 1/sqrt(mean(x²) + eps) * weight
// over the last dim. group_norm splits input [N, C, *] into N·group rows of
// C/group·HxW elements; weight and bias are per channel; mean and rstd are
// [N, group]. batch_norm (inference) is elementwise with channel dim 1:
// (x - running_mean) / sqrt(running_var + eps) * weight + bias. Its
// save_mean / save_invstd are what torch gives on CPU, size 0 — unless the
// graph declares them with C elements (an export on another device), then
// they are running_mean and 1/sqrt(running_var + eps). In every ValueList
// the statistics entries may also be non-tensors (then they are skipped).
//
// The row norms share shaders/norm.wgsl: rows are contiguous, each reduced
// by one invocation (short rows) or one workgroup with a shared-memory tree
// (as in ops/reduce.go), two passes for mean and variance (f32, mean
// first, then squared deviations), then the write pass.
func init() {
	Register("aten.native_layer_norm.default", layerNormOp)
	Register("et_vk.rms_norm.default", rmsNormOp)
	Register("aten.native_group_norm.default", groupNormOp)
	Register("aten._native_batch_norm_legit_no_training.default", batchNormOp)
}

const batchNormWG = 256

// normVariant is the template data of shaders/norm.wgsl.
type normVariant struct {
	Op         string // layer, rms, group, batch
	HasW, HasB bool
	Stats      bool // writes mean and rstd (save_mean, save_invstd for batch)
	Tree       bool
	WG         int
	Strides    []int
	// Binding numbers, set by bind: inputs x, (running_mean, running_var,)
	// weight, bias; outputs out, mean, rstd; then params.
	BX, BRM, BRV, BW, BB, BY, BM, BR, BP int
}

// bind numbers the bindings in the order Dispatch binds them.
func (v *normVariant) bind() {
	n := 0
	next := func() int { n++; return n - 1 }
	v.BX = next()
	if v.Op == "batch" {
		v.BRM, v.BRV = next(), next()
	}
	if v.HasW {
		v.BW = next()
	}
	if v.HasB {
		v.BB = next()
	}
	v.BY = next()
	if v.Stats {
		v.BM, v.BR = next(), next()
	}
	v.BP = next()
}

// normParams is the Go twin of norm.wgsl's Params (32 bytes).
type normParams struct {
	Rows, Len uint32 // rows and their length; batch: elements and C
	Eps       float32
	Groups    uint32 // group: groups; batch: inner size (elements per channel)
	HW, CPG   uint32 // group: HxW and channels per group
}

func (p *normParams) bytes() []byte {
	var q Params
	q.U32(p.Rows).U32(p.Len).F32(p.Eps).U32(p.Groups).U32(p.HW).U32(p.CPG)
	return q.Bytes()
}

// normOptional reads an optional tensor argument of n float32 elements.
func normOptional(b Builder, arg int, id int32, n int64, what string) (bool, error) {
	if b.IsNull(id) {
		return false, nil
	}
	t, err := b.Tensor(id)
	if err != nil {
		return false, Errorf(arg, "%s: %s", what, argMsg(err))
	}
	if t.DType != serialization.Float32 {
		return false, Errorf(arg, "%s is %v, want float32", what, t.DType)
	}
	if t.Numel != n {
		return false, Errorf(arg, "%s has %d elements (dims %v), want %d", what, t.Numel, t.Dims, n)
	}
	return true, nil
}

// normAffine reads the optional weight and bias at args wArg and wArg+1,
// each of n float32 elements, and returns ins with those present appended.
func normAffine(b Builder, args []int32, wArg int, n int64, ins []int32) (_ []int32, hasW, hasB bool, err error) {
	if hasW, err = normOptional(b, wArg, args[wArg], n, "weight"); err != nil {
		return nil, false, false, err
	}
	if hasB, err = normOptional(b, wArg+1, args[wArg+1], n, "bias"); err != nil {
		return nil, false, false, err
	}
	if hasW {
		ins = append(ins, args[wArg])
	}
	if hasB {
		ins = append(ins, args[wArg+1])
	}
	return ins, hasW, hasB, nil
}

// normFloat reads the Float argument arg (what names it in errors).
func normFloat(b Builder, args []int32, arg int, what string) (float64, error) {
	v, err := b.Float(args[arg])
	if err != nil {
		return 0, Errorf(arg, "%s: %s", what, argMsg(err))
	}
	return v, nil
}

// normRows is the number of rows of n elements in numel (0 when n is 0).
func normRows(numel, n int64) uint32 {
	if n == 0 {
		return 0
	}
	return uint32(numel / n)
}

// normInput reads the float32 input tensor at arg.
func normInput(b Builder, arg int, id int32) (Tensor, error) {
	t, err := b.Tensor(id)
	if err != nil {
		return Tensor{}, argErr(arg, err)
	}
	if t.DType != serialization.Float32 {
		return Tensor{}, Errorf(arg, "unsupported dtype %v (want float32)", t.DType)
	}
	if t.Numel >= 1<<32 {
		return Tensor{}, Errorf(arg, "%d elements exceed the kernel's 32-bit indexing", t.Numel)
	}
	return t, nil
}

// normOutputs reads ValueList[out, a, b], sets out's dims and, when the
// statistics entries are tensors, theirs; it returns the output ids to bind
// (out alone, or all three).
func normOutputs(b Builder, arg int, id int32, dims, stats []int64) ([]int32, error) {
	l, err := b.ValueList(id)
	if err != nil {
		return nil, Errorf(arg, "outputs: %s", argMsg(err))
	}
	if len(l) != 3 {
		return nil, Errorf(arg, "outputs: %d values, want [out, mean, rstd]", len(l))
	}
	if _, err := Output(b, arg, l[0], serialization.Float32, dims); err != nil {
		return nil, err
	}
	if b.Kind(l[1]) != serialization.KindTensor || b.Kind(l[2]) != serialization.KindTensor {
		return l[:1], nil
	}
	for _, s := range l[1:] {
		if _, err := Output(b, arg, s, serialization.Float32, stats); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// recordRowNorm dispatches the row kernel: rows rows of n contiguous
// elements of ins[0], weights and bias as v says.
func recordRowNorm(b Builder, v normVariant, p normParams, ins, outs []int32) error {
	if p.Rows == 0 {
		return nil
	}
	passes := int64(3)
	if v.Op == "rms" {
		passes = 2
	}
	plan := reducePlan{Rows: int64(p.Rows), Extent: int64(p.Len)}
	grid, err := reduceGrid(b, &v.Tree, &v.WG, &v.Strides, plan, passes)
	if err != nil {
		return err
	}
	v.Stats = len(outs) == 3
	v.bind()
	k, err := shaders.Render("norm.wgsl", v, "main", shaders.Layout(len(ins), len(outs), true), uint32(v.WG))
	if err != nil {
		return err
	}
	return b.Dispatch(k, ins, outs, p.bytes(), grid)
}

func layerNormOp(b Builder, args []int32) error {
	if len(args) != 6 {
		return Errorf(-1, "want 6 args [input, normalized_shape, weight, bias, eps, outputs], have %d", len(args))
	}
	in, err := normInput(b, 0, args[0])
	if err != nil {
		return err
	}
	ns, err := b.IntList(args[1])
	if err != nil {
		return Errorf(1, "normalized_shape: %s", argMsg(err))
	}
	r := len(in.Dims)
	if len(ns) == 0 || len(ns) > r || !slices.Equal(ns, in.Dims[r-len(ns):]) {
		return Errorf(1, "normalized_shape %v does not match the trailing dims of input %v", ns, in.Dims)
	}
	n := NumelOf(ns)
	ins, hasW, hasB, err := normAffine(b, args, 2, n, []int32{args[0]})
	if err != nil {
		return err
	}
	eps, err := normFloat(b, args, 4, "eps")
	if err != nil {
		return err
	}
	stats := slices.Clone(in.Dims)
	for i := r - len(ns); i < r; i++ {
		stats[i] = 1
	}
	outs, err := normOutputs(b, 5, args[5], in.Dims, stats)
	if err != nil {
		return err
	}
	if n == 0 && NumelOf(stats) > 0 {
		// Normalizing zero elements: torch gives NaN statistics; not
		// worth a kernel variant.
		return Errorf(1, "normalized_shape %v has no elements", ns)
	}
	return recordRowNorm(b, normVariant{Op: "layer", HasW: hasW, HasB: hasB},
		normParams{Rows: normRows(in.Numel, n), Len: uint32(n), Eps: float32(eps)}, ins, outs)
}

func rmsNormOp(b Builder, args []int32) error {
	in, hasW, eps, err := rmsNormParse(b, args)
	if err != nil {
		return err
	}
	n := in.Dims[len(in.Dims)-1]
	ins := []int32{args[0]}
	if hasW {
		ins = append(ins, args[1])
	}
	return recordRowNorm(b, normVariant{Op: "rms", HasW: hasW},
		normParams{Rows: normRows(in.Numel, n), Len: uint32(n), Eps: float32(eps)}, ins, []int32{args[3]})
}

// rmsNormParse checks rms_norm's args, sets its output's shape and returns
// its input, whether it has a weight, and eps.
func rmsNormParse(b Builder, args []int32) (in Tensor, hasW bool, eps float64, err error) {
	if len(args) != 4 {
		return in, false, 0, Errorf(-1, "want 4 args [x, weight, eps, out], have %d", len(args))
	}
	if in, err = normInput(b, 0, args[0]); err != nil {
		return in, false, 0, err
	}
	if len(in.Dims) == 0 {
		return in, false, 0, Errorf(0, "rms_norm needs rank >= 1")
	}
	n := in.Dims[len(in.Dims)-1]
	if hasW, err = normOptional(b, 1, args[1], n, "weight"); err != nil {
		return in, false, 0, err
	}
	if eps, err = normFloat(b, args, 2, "eps"); err != nil {
		return in, false, 0, err
	}
	_, err = Output(b, 3, args[3], serialization.Float32, in.Dims)
	return in, hasW, eps, err
}

func groupNormOp(b Builder, args []int32) error {
	if len(args) != 9 {
		return Errorf(-1, "want 9 args [input, weight, bias, N, C, HxW, group, eps, outputs], have %d", len(args))
	}
	in, err := normInput(b, 0, args[0])
	if err != nil {
		return err
	}
	var iv [4]int64 // N, C, HxW, group
	for i := range iv {
		if iv[i], err = b.Int(args[3+i]); err != nil {
			return Errorf(3+i, "%s", argMsg(err))
		}
	}
	nN, c, hw, g := iv[0], iv[1], iv[2], iv[3]
	if len(in.Dims) < 2 || in.Dims[0] != nN || in.Dims[1] != c || nN*c*hw != in.Numel {
		return Errorf(0, "input %v does not match N=%d C=%d HxW=%d", in.Dims, nN, c, hw)
	}
	if g <= 0 || c%g != 0 {
		return Errorf(6, "group %d does not divide C=%d", g, c)
	}
	ins, hasW, hasB, err := normAffine(b, args, 1, c, []int32{args[0]})
	if err != nil {
		return err
	}
	eps, err := normFloat(b, args, 7, "eps")
	if err != nil {
		return err
	}
	outs, err := normOutputs(b, 8, args[8], in.Dims, []int64{nN, g})
	if err != nil {
		return err
	}
	if (c/g)*hw == 0 && nN*g > 0 {
		return Errorf(0, "groups of input %v have no elements", in.Dims)
	}
	return recordRowNorm(b, normVariant{Op: "group", HasW: hasW, HasB: hasB},
		normParams{Rows: uint32(nN * g), Len: uint32(c / g * hw), Eps: float32(eps), Groups: uint32(g), HW: uint32(hw), CPG: uint32(c / g)},
		ins, outs)
}

func batchNormOp(b Builder, args []int32) error {
	if len(args) != 8 {
		return Errorf(-1, "want 8 args [input, weight, bias, running_mean, running_var, momentum, eps, outputs], have %d", len(args))
	}
	in, err := normInput(b, 0, args[0])
	if err != nil {
		return err
	}
	if len(in.Dims) < 2 {
		return Errorf(0, "input %v needs a channel dim (rank >= 2)", in.Dims)
	}
	c := in.Dims[1]
	ins, hasW, hasB, err := normAffine(b, args, 1, c, []int32{args[0], args[3], args[4]})
	if err != nil {
		return err
	}
	for i, what := range []string{"running_mean", "running_var"} {
		if b.IsNull(args[3+i]) {
			return Errorf(3+i, "%s is required without training", what)
		}
		if _, err := normOptional(b, 3+i, args[3+i], c, what); err != nil {
			return err
		}
	}
	if _, err := normFloat(b, args, 5, "momentum"); err != nil {
		return err
	}
	eps, err := normFloat(b, args, 6, "eps")
	if err != nil {
		return err
	}
	l, err := b.ValueList(args[7])
	if err != nil || len(l) != 3 {
		return Errorf(7, "outputs: want ValueList[out, save_mean, save_invstd]")
	}
	if _, err := Output(b, 7, l[0], serialization.Float32, in.Dims); err != nil {
		return err
	}
	outs := []int32{l[0]}
	stats := true
	for _, s := range l[1:] {
		t, err := b.Tensor(s)
		if err != nil {
			stats = false
			continue
		}
		if !slices.Equal(t.MaxDims, []int64{c}) {
			stats = false
		}
	}
	for _, s := range l[1:] {
		if b.Kind(s) != serialization.KindTensor {
			continue
		}
		dims := []int64{0}
		if stats {
			dims = []int64{c}
		}
		if _, err := Output(b, 7, s, serialization.Float32, dims); err != nil {
			return err
		}
	}
	if stats {
		outs = append(outs, l[1:]...)
	}
	n := in.Numel
	if stats {
		n = max(n, c)
	}
	if n == 0 {
		return nil
	}
	v := normVariant{Op: "batch", HasW: hasW, HasB: hasB, Stats: stats, WG: batchNormWG}
	v.bind()
	k, err := shaders.Render("norm.wgsl", v, "main", shaders.Layout(len(ins), len(outs), true), batchNormWG)
	if err != nil {
		return err
	}
	// Rows counts elements, Groups the elements per channel.
	p := normParams{Rows: uint32(in.Numel), Len: uint32(c), Eps: float32(eps), Groups: uint32(NumelOf(in.Dims[2:]))}
	grid, err := Grid(uint64(n), batchNormWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	return b.Dispatch(k, ins, outs, p.bytes(), grid)
}

package ops

// aten.t_copy.default args:      [self, out]
// aten.unfold_copy.default args: [self, dimension, size, step, out]
// aten.copy.default args:        [self, src, non_blocking, out]
//
// t_copy transposes a 2-D tensor (0-D and 1-D are returned as they are).
// unfold_copy returns every size-long window along dimension, stepping by
// step: dimension becomes the window count (n - size)/step + 1 and a new
// last dim of length size holds each window. copy writes src, broadcast to
// self's shape, into out (self's values are replaced; the partitioner
// only keeps it when it is a no-op). All three are strided views on the
// shared gather kernel.
func init() {
	Register("aten.t_copy.default", tCopy)
	Register("aten.unfold_copy.default", unfoldCopy)
	Register("aten.copy.default", copyOp)
}

func tCopy(b Builder, args []int32) error {
	if err := gatherArgs(args, 2, "[self, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	if len(in.Dims) > 2 {
		return Errorf(0, "t_copy takes a tensor of rank <= 2, have %v", in.Dims)
	}
	p := gatherView(in.Dims)
	dims := append([]int64(nil), in.Dims...)
	if len(dims) == 2 {
		dims[0], dims[1] = dims[1], dims[0]
		p.dims = dims
		p.stride = []int64{1, in.Dims[1]}
	}
	if _, err := Output(b, 1, args[1], in.DType, dims); err != nil {
		return err
	}
	return recordGather(b, p, in, args[1])
}

func unfoldCopy(b Builder, args []int32) error {
	if err := gatherArgs(args, 5, "[self, dimension, size, step, out]"); err != nil {
		return err
	}
	in, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	d, err := gatherInt(b, args, 1, "dimension")
	if err != nil {
		return err
	}
	size, err := gatherInt(b, args, 2, "size")
	if err != nil {
		return err
	}
	step, err := gatherInt(b, args, 3, "step")
	if err != nil {
		return err
	}
	k, err := gatherDim(1, d, len(in.Dims))
	if err != nil {
		return err
	}
	if step <= 0 {
		return Errorf(3, "step %d must be positive", step)
	}
	// A scalar unfolds as a 1-element vector.
	n, stride := int64(1), int64(1)
	p := gatherView(in.Dims)
	if len(in.Dims) > 0 {
		n, stride = in.Dims[k], p.stride[k]
	}
	if size < 0 || size > n {
		return Errorf(2, "size %d is outside [0, %d] for dim %d", size, n, k)
	}
	count := (n-size)/step + 1
	var dims, strides []int64
	if len(in.Dims) == 0 {
		dims, strides = []int64{size}, []int64{1}
	} else {
		dims = append(append([]int64(nil), in.Dims...), size)
		strides = append(append([]int64(nil), p.stride...), stride)
		dims[k], strides[k] = count, stride*step
	}
	p.dims, p.stride = dims, strides
	if _, err := Output(b, 4, args[4], in.DType, dims); err != nil {
		return err
	}
	return recordGather(b, p, in, args[4])
}

func copyOp(b Builder, args []int32) error {
	if err := gatherArgs(args, 4, "[self, src, non_blocking, out]"); err != nil {
		return err
	}
	self, err := gatherInput(b, args, 0)
	if err != nil {
		return err
	}
	src, err := gatherInput(b, args, 1)
	if err != nil {
		return err
	}
	if src.DType != self.DType {
		return Errorf(1, "src is %v, self %v (a dtype-changing copy is not supported)", src.DType, self.DType)
	}
	if len(src.Dims) > len(self.Dims) {
		return Errorf(1, "src dims %v do not broadcast to self's %v", src.Dims, self.Dims)
	}
	// src broadcasts to self's shape: missing leading and size-1 dims read
	// with stride 0.
	p := gatherView(self.Dims)
	sstr := gatherContig(src.Dims)
	off := len(self.Dims) - len(src.Dims)
	for i := range self.Dims {
		if i < off {
			p.stride[i] = 0
			continue
		}
		sd := src.Dims[i-off]
		switch {
		case sd == self.Dims[i]:
			p.stride[i] = sstr[i-off]
		case sd == 1:
			p.stride[i] = 0
		default:
			return Errorf(1, "src dims %v do not broadcast to self's %v", src.Dims, self.Dims)
		}
	}
	if _, err := Output(b, 3, args[3], self.DType, self.Dims); err != nil {
		return err
	}
	return recordGather(b, p, src, args[3])
}

package reference

import "fmt"

// et_vk.prepack.default [constant, out]; aten.clone.default [self,
// memory_format, out]; aten.alias_copy.default [self, out];
// dim_order_ops._clone_dim_order.default [self, non_blocking, dim_order,
// out]: copies of self with its shape.
// aten.view_copy.default [self, size, out]: self reshaped to size (one -1
// inferred). aten.squeeze_copy.dims [self, dims, out]: the listed size-1
// dims removed. aten.unsqueeze_copy.default [self, dim, out]: a size-1 dim
// inserted at dim.
func init() {
	Register("et_vk.prepack.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[1], nil) })
	Register("aten.clone.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[2], nil) })
	Register("aten.alias_copy.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[1], nil) })
	Register("dim_order_ops._clone_dim_order.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[3], nil) })
	Register("aten.view_copy.default", viewRef)
	Register("aten.squeeze_copy.dims", squeezeRef)
	Register("aten.unsqueeze_copy.default", unsqueezeRef)
}

// copyOp copies the values of in into out, shaped as shape (in's shape
// when nil).
func copyOp(e *Env, in, out int32, shape []int64) error {
	x, err := e.In(in)
	if err != nil {
		return err
	}
	if shape == nil {
		shape = x.Shape
	}
	y, err := e.NewOut(out, shape)
	if err != nil {
		return err
	}
	if len(y.V) != len(x.V) {
		return fmt.Errorf("copy of %d elements into shape %v", len(x.V), shape)
	}
	copy(y.V, x.V)
	e.Set(out, y)
	return nil
}

func viewRef(e *Env, a []int32) error {
	x, size, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	shape := append([]int64{}, size...)
	prod, minus := int64(1), -1
	for i, s := range size {
		if s == -1 {
			if minus >= 0 {
				return fmt.Errorf("view: two -1 in %v", size)
			}
			minus = i
			continue
		}
		if s < 0 {
			return fmt.Errorf("view: bad size %v", size)
		}
		prod *= s
	}
	if minus >= 0 {
		if prod == 0 || x.Numel()%prod != 0 {
			return fmt.Errorf("view: cannot infer -1 in %v for %d elements", size, x.Numel())
		}
		shape[minus] = x.Numel() / prod
	}
	return copyOp(e, a[0], a[2], shape)
}

func squeezeRef(e *Env, a []int32) error {
	x, dims, err := e.inInts(a[0], a[1])
	if err != nil {
		return err
	}
	rank := int64(len(x.Shape))
	gone := map[int64]bool{}
	for _, d := range dims {
		k, err := shWrapDim(d, int(rank))
		if err != nil {
			return fmt.Errorf("squeeze: %w", err)
		}
		if rank > 0 && x.Shape[k] == 1 {
			gone[int64(k)] = true
		}
	}
	shape := []int64{}
	for i, s := range x.Shape {
		if !gone[int64(i)] {
			shape = append(shape, s)
		}
	}
	return copyOp(e, a[0], a[2], shape)
}

func unsqueezeRef(e *Env, a []int32) error {
	x, d, err := e.inInt(a[0], a[1])
	if err != nil {
		return err
	}
	rank := int64(len(x.Shape))
	if d < -rank-1 || d > rank {
		return fmt.Errorf("unsqueeze: dim %d for rank %d", d, rank)
	}
	if d < 0 {
		d += rank + 1
	}
	shape := []int64{}
	shape = append(shape, x.Shape[:d]...)
	shape = append(shape, 1)
	shape = append(shape, x.Shape[d:]...)
	return copyOp(e, a[0], a[2], shape)
}

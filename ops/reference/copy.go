package reference

import "fmt"

// et_vk.prepack.default [constant, out]; aten.view_copy.default [self, size, out];
// aten.clone.default [self, memory_format, out]: all copy the values.
func init() {
	Register("et_vk.prepack.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[1]) })
	Register("aten.view_copy.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[2]) })
	Register("aten.clone.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[2]) })
	Register("aten.squeeze_copy.dims", func(e *Env, a []int32) error { return copyOp(e, a[0], a[2]) })
	Register("aten.unsqueeze_copy.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[2]) })
	Register("aten.alias_copy.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[1]) })
	Register("dim_order_ops._clone_dim_order.default", func(e *Env, a []int32) error { return copyOp(e, a[0], a[3]) })
}

func copyOp(e *Env, in, out int32) error {
	x, err := e.In(in)
	if err != nil {
		return err
	}
	y, err := e.Out(out)
	if err != nil {
		return err
	}
	if len(y.V) != len(x.V) {
		return fmt.Errorf("copy of %d elements into %d", len(x.V), len(y.V))
	}
	copy(y.V, x.V)
	e.Set(out, y)
	return nil
}

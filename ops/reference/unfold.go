package reference

import "fmt"

// aten.t_copy.default [self, out]; aten.unfold_copy.default [self,
// dimension, size, step, out]; aten.copy.default [self, src, non_blocking,
// out] (src broadcast to self's shape).
func init() {
	Register("aten.t_copy.default", func(e *Env, a []int32) error {
		x, err := e.In(a[0])
		if err != nil {
			return err
		}
		if len(x.Shape) > 2 {
			return fmt.Errorf("t_copy of rank %d", len(x.Shape))
		}
		shape := append([]int64(nil), x.Shape...)
		if len(shape) == 2 {
			shape[0], shape[1] = shape[1], shape[0]
		}
		out, err := e.NewOut(a[1], shape)
		if err != nil {
			return err
		}
		for i := range out.V {
			if len(shape) == 2 {
				r, c := int64(i)/shape[1], int64(i)%shape[1]
				out.V[i] = x.V[c*x.Shape[1]+r]
			} else {
				out.V[i] = x.V[i]
			}
		}
		e.Set(a[1], out)
		return nil
	})
	Register("aten.unfold_copy.default", func(e *Env, a []int32) error {
		x, d, err := e.inInt(a[0], a[1])
		if err != nil {
			return err
		}
		size, err := e.Int(a[2])
		if err != nil {
			return err
		}
		step, err := e.Int(a[3])
		if err != nil {
			return err
		}
		shape := x.Shape
		if len(shape) == 0 {
			shape = []int64{1}
		}
		k, err := shWrapDim(d, len(x.Shape))
		if err != nil {
			return err
		}
		if step <= 0 || size < 0 || size > shape[k] {
			return fmt.Errorf("bad unfold size %d step %d for %v", size, step, x.Shape)
		}
		out := append(append([]int64(nil), shape...), size)
		out[k] = (shape[k]-size)/step + 1
		if len(x.Shape) == 0 {
			out = []int64{size}
		}
		t, err := e.NewOut(a[4], out)
		if err != nil {
			return err
		}
		for i := range t.V {
			c := shCoords(int64(i), out)
			if len(x.Shape) == 0 {
				t.V[i] = x.V[0]
				continue
			}
			src := append([]int64(nil), c[:len(shape)]...)
			src[k] = c[k]*step + c[len(shape)]
			t.V[i] = x.V[shFlat(src, shape)]
		}
		e.Set(a[4], t)
		return nil
	})
	Register("aten.copy.default", func(e *Env, a []int32) error {
		self, src, err := e.in2(a[0], a[1])
		if err != nil {
			return err
		}
		idx := broadcastIndex(src.Shape, self.Shape)
		if idx == nil {
			return fmt.Errorf("cannot broadcast %v to %v", src.Shape, self.Shape)
		}
		out, err := e.NewOut(a[3], self.Shape)
		if err != nil {
			return err
		}
		for i := range out.V {
			out.V[i] = src.V[idx(i)]
		}
		e.Set(a[3], out)
		return nil
	})
}

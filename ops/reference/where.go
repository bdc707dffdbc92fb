package reference

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten.where.self [condition, self, other, out]: out = condition ? self :
// other, the three broadcast together; the chosen value is rounded to out's
// dtype by Set.
func init() {
	Register("aten.where.self", whereOp)
}

func whereOp(e *Env, args []int32) error {
	if len(args) != 4 {
		return fmt.Errorf("%d args, want 4", len(args))
	}
	var in [3]*Tensor
	for i := range in {
		t, err := e.In(args[i])
		if err != nil {
			return err
		}
		in[i] = t
	}
	if in[0].DType != serialization.Bool {
		return fmt.Errorf("condition is %v", in[0].DType)
	}
	shape, ok := broadcastShapes(in[0].Shape, in[1].Shape, in[2].Shape)
	if !ok {
		return fmt.Errorf("cannot broadcast %v, %v and %v", in[0].Shape, in[1].Shape, in[2].Shape)
	}
	z, err := e.NewOut(args[3], shape)
	if err != nil {
		return err
	}
	ci, ai, bi := broadcastIndex(in[0].Shape, shape), broadcastIndex(in[1].Shape, shape), broadcastIndex(in[2].Shape, shape)
	for i := range z.V {
		if in[0].V[ci(i)] != 0 {
			z.V[i] = in[1].V[ai(i)]
		} else {
			z.V[i] = in[2].V[bi(i)]
		}
	}
	e.Set(args[3], z)
	return nil
}

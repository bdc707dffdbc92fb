package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten.{eq,ne,lt,le,gt,ge}.Tensor [self, other, out];
// aten.{eq,ne,lt,le,gt,ge}.Scalar [self, other(Int/Double/Bool), out];
// aten.logical_{and,or,xor}.default [self, other, out].
//
// The output is bool, shaped as the broadcast of the inputs. Comparisons
// convert both sides to the common type first, as torch does: float32 if
// either is float32 (or the scalar is not integral), else integers (bool as
// 0/1), compared exactly in float64. Logical ops test each side against 0.
func init() {
	for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
		Register("aten."+op+".Tensor", func(e *Env, a []int32) error { return compareOp(e, op, false, a) })
		Register("aten."+op+".Scalar", func(e *Env, a []int32) error { return compareOp(e, op, true, a) })
	}
	for _, op := range []string{"and", "or", "xor"} {
		Register("aten.logical_"+op+".default", func(e *Env, a []int32) error { return compareOp(e, op, false, a) })
	}
}

func compareOp(e *Env, op string, scalar bool, args []int32) error {
	if len(args) != 3 {
		return fmt.Errorf("%d args, want 3", len(args))
	}
	x, err := e.In(args[0])
	if err != nil {
		return err
	}
	var y *Tensor
	float := isFloat(x.DType)
	if scalar {
		s, err := scalarValue(e, args[1])
		if err != nil {
			return err
		}
		float = float || s != math.Trunc(s)
		y = &Tensor{DType: serialization.Float64, Shape: []int64{}, V: []float64{s}}
	} else {
		if y, err = e.In(args[1]); err != nil {
			return err
		}
		float = float || isFloat(y.DType)
	}
	shape, ok := broadcastShapes(x.Shape, y.Shape)
	if !ok {
		return fmt.Errorf("cannot broadcast %v and %v", x.Shape, y.Shape)
	}
	z, err := e.NewOut(args[2], shape)
	if err != nil {
		return err
	}
	xi, yi := broadcastIndex(x.Shape, z.Shape), broadcastIndex(y.Shape, z.Shape)
	for i := range z.V {
		a, b := x.V[xi(i)], y.V[yi(i)]
		if float {
			a, b = float64(float32(a)), float64(float32(b))
		}
		var r bool
		switch op {
		case "eq":
			r = a == b
		case "ne":
			r = a != b
		case "lt":
			r = a < b
		case "le":
			r = a <= b
		case "gt":
			r = a > b
		case "ge":
			r = a >= b
		case "and":
			r = a != 0 && b != 0
		case "or":
			r = a != 0 || b != 0
		case "xor":
			r = (a != 0) != (b != 0)
		}
		if r {
			z.V[i] = 1
		}
	}
	e.Set(args[2], z)
	return nil
}

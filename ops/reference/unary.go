package reference

import (
	"fmt"
	"math"
)

// aten.relu.default / aten.sigmoid.default [self, out].
func init() {
	Register("aten.relu.default", func(e *Env, a []int32) error { return unaryOp(e, a, relu) })
	Register("aten.sigmoid.default", func(e *Env, a []int32) error { return unaryOp(e, a, sigmoid) })
}

// relu keeps NaN, as torch does.
func relu(v float64) float64 {
	if v < 0 {
		return 0
	}
	return v
}

// sigmoid never forms exp of a large positive number.
func sigmoid(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	ev := math.Exp(v)
	return ev / (1 + ev)
}

func unaryOp(e *Env, args []int32, f func(float64) float64) error {
	if len(args) != 2 {
		return fmt.Errorf("%d args, want 2", len(args))
	}
	x, err := e.In(args[0])
	if err != nil {
		return err
	}
	y, err := e.Out(args[1])
	if err != nil {
		return err
	}
	if len(x.V) != len(y.V) {
		return fmt.Errorf("%d elements into %d", len(x.V), len(y.V))
	}
	for i, v := range x.V {
		y.V[i] = f(v)
	}
	e.Set(args[1], y)
	return nil
}

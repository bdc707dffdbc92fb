package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// The fill ops: full, full_like, zeros(_like), ones(_like), scalar_tensor
// and arange.start_step. The result dtype is out's declared dtype.
func init() {
	// sizeFrom: 0 = args[0] is size, 1 = args[0] is a tensor to copy dims
	// from, 2 = rank 0. val: arg index of the value, or -1 with def.
	reg := func(name string, n, sizeFrom, val int, def float64) {
		Register(name, func(e *Env, a []int32) error { return fillRef(e, a, n, sizeFrom, val, def) })
	}
	reg("aten.full.default", 7, 0, 1, 0)
	reg("aten.full_like.default", 8, 1, 1, 0)
	reg("aten.zeros.default", 6, 0, -1, 0)
	reg("aten.ones.default", 6, 0, -1, 1)
	reg("aten.zeros_like.default", 7, 1, -1, 0)
	reg("aten.ones_like.default", 7, 1, -1, 1)
	reg("aten.scalar_tensor.default", 6, 2, 0, 0)
	Register("aten.arange.start_step", arangeRef)
}

func fillRef(e *Env, a []int32, n, sizeFrom, val int, def float64) error {
	if len(a) != n {
		return fmt.Errorf("%d args, want %d", len(a), n)
	}
	var shape []int64
	switch sizeFrom {
	case 0:
		s, err := e.IntList(a[0])
		if err != nil {
			return err
		}
		shape = s
	case 1:
		x, err := e.In(a[0])
		if err != nil {
			return err
		}
		shape = x.Shape
	default:
		shape = []int64{}
	}
	v := def
	if val >= 0 {
		f, err := scalar(e, a[val])
		if err != nil {
			return err
		}
		v = f
	}
	y, err := e.NewOut(a[n-1], shape)
	if err != nil {
		return err
	}
	c := convert(y.DType, v)
	for i := range y.V {
		y.V[i] = c
	}
	e.Set(a[n-1], y)
	return nil
}

// arangeRef: ceil((end-start)/step) values start + i*step, in float64
// (start and step truncated first for an integer out, as torch does).
func arangeRef(e *Env, a []int32) error {
	if len(a) != 8 {
		return fmt.Errorf("%d args, want 8", len(a))
	}
	var s [3]float64
	for k := range s {
		f, err := scalar(e, a[k])
		if err != nil {
			return err
		}
		s[k] = f
	}
	n := int64(math.Ceil((s[1] - s[0]) / s[2]))
	if n < 0 {
		return fmt.Errorf("arange(%v, %v, %v): bound and step sign disagree", s[0], s[1], s[2])
	}
	y, err := e.NewOut(a[7], []int64{n})
	if err != nil {
		return err
	}
	start, step := s[0], s[2]
	if !isFloat(y.DType) {
		// torch casts start and step to the integer type first.
		start, step = math.Trunc(start), math.Trunc(step)
	}
	for i := range y.V {
		y.V[i] = convert(y.DType, start+float64(i)*step)
	}
	e.Set(a[7], y)
	return nil
}

// scalar reads a Scalar: a SymInt's live value, else as scalarValue (Bool
// as 0/1, else a number).
func scalar(e *Env, id int32) (float64, error) {
	if e.Kind(id) == serialization.KindSymInt {
		i, err := e.Int(id)
		return float64(i), err
	}
	return scalarValue(e, id)
}

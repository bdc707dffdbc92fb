package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// sym_size.int [self, dim, out]; add/sub/mul/floordiv [a, b, out] on
// symbolic ints (floordiv is Python's //, rounding toward -inf).
func init() {
	size := func(e *Env, a []int32) error {
		if len(a) != 3 {
			return fmt.Errorf("%d args, want 3", len(a))
		}
		t, d, err := e.inInt(a[0], a[1])
		if err != nil {
			return err
		}
		r := int64(len(t.Shape))
		if d < 0 {
			d += r
		}
		if d < 0 || d >= r {
			return fmt.Errorf("dim %d out of range for %v", d, t.Shape)
		}
		return e.SetInt(a[2], t.Shape[d])
	}
	Register("sym_size.int", size)
	Register("aten.sym_size.int", size)
	for _, op := range []string{"add", "sub", "mul", "floordiv", "lt", "le", "gt", "ge", "eq", "ne"} {
		Register(op, func(e *Env, a []int32) error {
			if len(a) != 3 {
				return fmt.Errorf("%d args, want 3", len(a))
			}
			x, err := e.Int(a[0])
			if err != nil {
				return err
			}
			y, err := e.Int(a[1])
			if err != nil {
				return err
			}
			var v float64
			switch op {
			case "add":
				v = float64(x + y)
			case "sub":
				v = float64(x - y)
			case "mul":
				v = float64(x * y)
			case "lt", "le", "gt", "ge", "eq", "ne":
				c := map[string]bool{"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]
				if e.Kind(a[2]) != serialization.KindSymInt {
					return nil
				}
				if c {
					v = 1
				}
			case "floordiv":
				if y == 0 {
					return fmt.Errorf("floordiv by zero")
				}
				v = math.Floor(float64(x) / float64(y))
			}
			return e.SetInt(a[2], int64(v))
		})
	}
	Register("aten._assert_scalar.default", func(e *Env, a []int32) error { return nil })
	Register("et_vk.select_as_symint.default", func(e *Env, a []int32) error {
		x, d, err := e.inInt(a[0], a[1])
		if err != nil {
			return err
		}
		i, err := e.Int(a[2])
		if err != nil {
			return err
		}
		r := int64(len(x.Shape))
		if d < 0 {
			d += r
		}
		if r == 0 || d < 0 || d >= r || int64(len(x.V)) != x.Shape[d] {
			return fmt.Errorf("select_as_symint on %v dim %d", x.Shape, d)
		}
		if i < 0 {
			i += x.Shape[d]
		}
		if i < 0 || i >= x.Shape[d] {
			return fmt.Errorf("index %d out of range", i)
		}
		return e.SetInt(a[3], int64(x.V[i]))
	})
	Register("aten.sym_constrain_range_for_size.default", func(e *Env, a []int32) error { return nil })
}

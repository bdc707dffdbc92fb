package reference

import (
	"fmt"
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// aten._to_copy.default and dim_order_ops._to_dim_order_copy.default
// [self, dtype, layout, device, pin_memory, non_blocking, memory_format |
// dim_order, out]: self's values converted to out's declared dtype.
func init() {
	Register("aten._to_copy.default", toCopyRef)
	Register("dim_order_ops._to_dim_order_copy.default", toCopyRef)
}

func toCopyRef(e *Env, a []int32) error {
	if len(a) != 8 {
		return fmt.Errorf("%d args, want 8", len(a))
	}
	x, err := e.In(a[0])
	if err != nil {
		return err
	}
	y, err := e.NewOut(a[7], x.Shape)
	if err != nil {
		return err
	}
	for i, v := range x.V {
		y.V[i] = convert(y.DType, v)
	}
	e.Set(a[7], y)
	return nil
}

// convert casts v to dt as a C++ static_cast does for in-range values:
// float to integer truncates toward zero, integers narrow to their low
// bits, and anything to bool is v != 0.
func convert(dt serialization.DataType, v float64) float64 {
	switch dt {
	case serialization.Bool:
		if v != 0 {
			return 1
		}
		return 0
	case serialization.Int32:
		return float64(int32(int64(math.Trunc(v))))
	case serialization.Uint8:
		return float64(uint8(int64(math.Trunc(v))))
	case serialization.Int8:
		return float64(int8(int64(math.Trunc(v))))
	}
	return v
}

package ops

import (
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Values gives checked, kind-tolerant access to a graph's non-tensor values.
// The GPU builder and the plain-Go reference share it, so both read
// arguments by the same rules.
type Values struct {
	G *serialization.Graph
	// Sym, when set, returns the live value of a SymInt (ok false falls
	// back to the serialized value).
	Sym func(id int32) (v int64, ok bool)
}

func (v Values) value(id int32) *serialization.Value {
	if v.G == nil || id < 0 || int(id) >= len(v.G.Values) {
		return nil
	}
	return &v.G.Values[id]
}

func (v Values) kindErr(id int32, want string) error {
	x := v.value(id)
	if x == nil {
		return Errorf(-1, "value %d out of range", id)
	}
	return Errorf(-1, "value %d is %v, want %s", id, x.Kind, want)
}

// Kind returns the kind of value id, or KindNone when id is out of range.
func (v Values) Kind(id int32) serialization.ValueKind {
	if x := v.value(id); x != nil {
		return x.Kind
	}
	return serialization.KindNone
}

// Int accepts Int, an integral Double, or a SymInt.
func (v Values) Int(id int32) (int64, error) {
	x := v.value(id)
	if x != nil {
		switch x.Kind {
		case serialization.KindInt:
			return x.Int, nil
		case serialization.KindSymInt:
			if v.Sym != nil {
				if s, ok := v.Sym(id); ok {
					return s, nil
				}
			}
			return int64(x.SymInt), nil
		case serialization.KindDouble:
			if x.Double == math.Trunc(x.Double) && math.Abs(x.Double) < 1<<53 {
				return int64(x.Double), nil
			}
			return 0, Errorf(-1, "value %d is the non-integral Double %v, want an int", id, x.Double)
		}
	}
	return 0, v.kindErr(id, "Int")
}

// Float accepts Double or Int (the exporter deduplicates 1 and 1.0).
func (v Values) Float(id int32) (float64, error) {
	x := v.value(id)
	if x != nil {
		switch x.Kind {
		case serialization.KindDouble:
			return x.Double, nil
		case serialization.KindInt:
			return float64(x.Int), nil
		}
	}
	return 0, v.kindErr(id, "Double or Int")
}

// Bool accepts Bool.
func (v Values) Bool(id int32) (bool, error) {
	x := v.value(id)
	if x != nil && x.Kind == serialization.KindBool {
		return x.Bool, nil
	}
	return false, v.kindErr(id, "Bool")
}

// IntList accepts IntList or a ValueList of Int/SymInt values.
func (v Values) IntList(id int32) ([]int64, error) {
	x := v.value(id)
	if x == nil {
		return nil, v.kindErr(id, "IntList")
	}
	switch x.Kind {
	case serialization.KindIntList:
		return append([]int64(nil), x.Ints...), nil
	case serialization.KindValueList:
		out := make([]int64, len(x.IDs))
		for i, it := range x.IDs {
			n, err := v.Int(it)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, v.kindErr(id, "IntList")
}

// DoubleList accepts DoubleList, or an IntList (whose items it converts).
func (v Values) DoubleList(id int32) ([]float64, error) {
	x := v.value(id)
	if x != nil {
		switch x.Kind {
		case serialization.KindDoubleList:
			return append([]float64(nil), x.Doubles...), nil
		case serialization.KindIntList:
			out := make([]float64, len(x.Ints))
			for i, n := range x.Ints {
				out[i] = float64(n)
			}
			return out, nil
		}
	}
	return nil, v.kindErr(id, "DoubleList")
}

// ValueList accepts ValueList.
func (v Values) ValueList(id int32) ([]int32, error) {
	x := v.value(id)
	if x != nil && x.Kind == serialization.KindValueList {
		return append([]int32(nil), x.IDs...), nil
	}
	return nil, v.kindErr(id, "ValueList")
}

// String accepts String.
func (v Values) String(id int32) (string, error) {
	x := v.value(id)
	if x != nil && x.Kind == serialization.KindString {
		return x.String, nil
	}
	return "", v.kindErr(id, "String")
}

// IsNull reports whether id is a Null (or NONE) value.
func (v Values) IsNull(id int32) bool {
	x := v.value(id)
	return x != nil && (x.Kind == serialization.KindNull || x.Kind == serialization.KindNone)
}

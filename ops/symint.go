package ops

import (
	"github.com/wgdelegate/wgdelegate/serialization"
)

// sym_size.int args:                 [self, dim, out(SymInt)]
// add / sub / mul / floordiv args:   [a, b, out(SymInt)] (Python operators
// on symbolic ints; the exporter gives them bare names and no schema)
// lt / le / gt / ge / eq / ne args:  [a, b, out] (a symbolic bool, held as
// a SymInt 0/1)
// et_vk.select_as_symint.default args: [x, dim, index, out(SymInt)]:
// x.select(dim, index).item(), where the selection holds one element; x must
// be a graph input or a constant (its values are read on the host while
// recording, and a new value re-records the graph)
// aten._assert_scalar.default, aten.sym_constrain_range_for_size.default:
// no-ops (the exporter normally removes them)
//
// These run on the host while the graph is recorded: they read live tensor
// sizes and SymInt values and set SymInt outputs, which later ops read as
// sizes (view_copy, slice_copy, ...). They record no dispatch. floordiv
// rounds toward negative infinity, like Python's //.
func init() {
	Register("sym_size.int", symSize)
	Register("aten.sym_size.int", symSize)
	for _, op := range []string{"add", "sub", "mul", "floordiv", "lt", "le", "gt", "ge", "eq", "ne"} {
		Register(op, symArith(op))
	}
	RegisterOp(Op{Name: "et_vk.select_as_symint.default", Run: selectAsSymInt, HostReads: []int{0}})
	noop := func(b Builder, args []int32) error { return nil }
	Register("aten._assert_scalar.default", noop)
	Register("aten.sym_constrain_range_for_size.default", noop)
}

func symSize(b Builder, args []int32) error {
	if len(args) != 3 {
		return Errorf(-1, "want 3 args [self, dim, out], have %d", len(args))
	}
	t, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	d, err := b.Int(args[1])
	if err != nil {
		return argErr(1, err)
	}
	if len(t.Dims) == 0 {
		return Errorf(0, "sym_size of a scalar tensor")
	}
	dim, err := NormDim(d, len(t.Dims))
	if err != nil {
		return argErr(1, err)
	}
	return setSym(b, 2, args[2], t.Dims[dim])
}

func symArith(op string) Func {
	return func(b Builder, args []int32) error {
		if len(args) != 3 {
			return Errorf(-1, "want 3 args [a, b, out], have %d", len(args))
		}
		eval := func(b Builder) error {
			x, err := b.Int(args[0])
			if err != nil {
				return argErr(0, err)
			}
			y, err := b.Int(args[1])
			if err != nil {
				return argErr(1, err)
			}
			v, err := symEval(op, x, y)
			if err != nil {
				return err
			}
			if cmp := op != "add" && op != "sub" && op != "mul" && op != "floordiv"; cmp && b.Kind(args[2]) == serialization.KindBool {
				return nil // a folded SymBool: nothing to set
			}
			return setSym(b, 2, args[2], v)
		}
		b.OnRefresh(eval)
		return eval(b)
	}
}

// symEval computes x op y.
func symEval(op string, x, y int64) (int64, error) {
	switch op {
	case "add":
		return x + y, nil
	case "sub":
		return x - y, nil
	case "mul":
		return x * y, nil
	case "lt", "le", "gt", "ge", "eq", "ne":
		return boolInt(map[string]bool{"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]), nil
	case "floordiv":
		if y == 0 {
			return 0, Errorf(1, "floordiv by zero")
		}
		v := x / y
		if (x%y != 0) && ((x < 0) != (y < 0)) {
			v--
		}
		return v, nil
	}
	return 0, Errorf(-1, "no symbolic op %s", op)
}

// setSym sets a SymInt output; an Int output (a constant the exporter
// folded) must already hold v.
func setSym(b Builder, arg int, id int32, v int64) error {
	switch b.Kind(id) {
	case serialization.KindSymInt:
		return b.SetInt(id, v)
	case serialization.KindInt:
		if got, _ := b.Int(id); got != v {
			return Errorf(arg, "out is the constant Int %d but the value is %d", got, v)
		}
		return nil
	}
	return Errorf(arg, "out is %v, want a SymInt", b.Kind(id))
}

func boolInt(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// NormDim turns a possibly negative dim into an index into a shape of the
// given rank, the torch way (a scalar accepts dims 0 and -1).
func NormDim(d int64, rank int) (int, error) {
	r := int64(rank)
	if r == 0 {
		r = 1
	}
	if d < -r || d >= r {
		return 0, Errorf(-1, "dim %d out of range for rank %d", d, rank)
	}
	if d < 0 {
		d += r
	}
	return int(d), nil
}

func selectAsSymInt(b Builder, args []int32) error {
	if len(args) != 4 {
		return Errorf(-1, "want 4 args [x, dim, index, out], have %d", len(args))
	}
	x, err := b.Tensor(args[0])
	if err != nil {
		return argErr(0, err)
	}
	d, err := b.Int(args[1])
	if err != nil {
		return argErr(1, err)
	}
	idx, err := b.Int(args[2])
	if err != nil {
		return argErr(2, err)
	}
	if len(x.Dims) == 0 {
		return Errorf(0, "select_as_symint of a scalar tensor")
	}
	dim, err := NormDim(d, len(x.Dims))
	if err != nil {
		return argErr(1, err)
	}
	n := x.Dims[dim]
	if idx < -n || idx >= n {
		return Errorf(2, "index %d out of range for dim %d of size %d", idx, dim, n)
	}
	if idx < 0 {
		idx += n
	}
	if x.Numel != n {
		return Errorf(0, "select_as_symint needs a selection of one element; x is %v", x.Dims)
	}
	eval := func(b Builder) error {
		v, err := b.HostElement(args[0], idx)
		if err != nil {
			return argErr(0, err)
		}
		return setSym(b, 3, args[3], int64(v))
	}
	b.OnRefresh(eval)
	return eval(b)
}

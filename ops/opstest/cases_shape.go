package opstest

import (
	"math/rand/v2"
	"strings"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// shapeIn describes one random input of a shape-op case.
type shapeIn struct {
	dt     serialization.DataType
	shape  []int64
	lo, hi float64 // value range; 0, 0 picks one for the dtype
}

// shapeRange is a random-value range that exercises dtype dt.
func shapeRange(dt serialization.DataType) (float64, float64) {
	switch dt {
	case serialization.Bool:
		return 0, 2
	case serialization.Uint8:
		return 0, 256
	case serialization.Int8:
		return -128, 128
	case serialization.Float32:
		return -100, 100
	}
	return -1000, 1000
}

// shapeCase runs op on random inputs ins: args returns the op's schema
// arguments given the input ids, and out is the shape torch gives the
// result. The op writes an intermediate declared flat with spare capacity
// (the serialized dims of an output are only an upper bound, the op must
// compute its shape); a clone then gives the graph output its exact shape.
func shapeCase(name, op string, ins []shapeIn, args func(b *serialization.Builder, x []int32) []int32, out []int64) Case {
	return Case{
		Name: name,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			ids := make([]int32, len(ins))
			vals := make([]*reference.Tensor, len(ins))
			for i, x := range ins {
				ids[i] = b.Tensor(x.dt, Dims(x.shape), -1)
				lo, hi := x.lo, x.hi
				if lo == hi {
					lo, hi = shapeRange(x.dt)
				}
				vals[i] = RandTensor(r, x.dt, x.shape, lo, hi)
			}
			dt := ins[0].dt
			n := uint32(reference.New(dt, out).Numel())
			mid := b.Tensor(dt, []uint32{n + 3}, -1)
			b.Op(op, append(args(b, ids), mid)...)
			y := b.Tensor(dt, Dims(out), -1)
			b.Op("aten.clone.default", mid, b.Null(), y)
			b.Inputs(ids...)
			b.Outputs(y)
			return vals
		},
	}
}

// shapeDirect is shapeCase without the intermediate: the op writes the graph
// output, declared with its exact shape (for the large cases).
func shapeDirect(c Case, op string, ins []shapeIn, args func(b *serialization.Builder, x []int32) []int32, out []int64) Case {
	c.Build = func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
		ids := make([]int32, len(ins))
		vals := make([]*reference.Tensor, len(ins))
		for i, x := range ins {
			ids[i] = b.Tensor(x.dt, Dims(x.shape), -1)
			lo, hi := shapeRange(x.dt)
			if x.lo != x.hi {
				lo, hi = x.lo, x.hi
			}
			vals[i] = RandTensor(r, x.dt, x.shape, lo, hi)
		}
		y := b.Tensor(ins[0].dt, Dims(out), -1)
		b.Op(op, append(args(b, ids), y)...)
		b.Inputs(ids...)
		b.Outputs(y)
		return vals
	}
	return c
}

// shp is a shape literal.
func shp(d ...int64) []int64 { return d }

// shapeDT is a short dtype name for case names.
func shapeDT(dt serialization.DataType) string { return strings.ToLower(dt.String()) }

// shapeDTypes are the dtypes every shape op is run on.
var shapeDTypes = []serialization.DataType{serialization.Float32, serialization.Int32, serialization.Bool, serialization.Uint8}

func init() {
	f32, i32, bl, u8 := serialization.Float32, serialization.Int32, serialization.Bool, serialization.Uint8
	i8, i64, f64 := serialization.Int8, serialization.Int64, serialization.Float64
	allT := shapeDTypes
	// cat: different sizes along dim, negative dim, sub-word dtypes with
	// slabs that do not start on a word, skipped empty 1-D inputs.
	catCase := func(dt serialization.DataType, dim int64, out []int64, shapes ...[]int64) Case {
		ins := make([]shapeIn, len(shapes))
		var names []string
		for i, s := range shapes {
			ins[i] = shapeIn{dt: dt, shape: s}
			names = append(names, shapeName(s))
		}
		return shapeCase("cat/"+shapeDT(dt)+"/"+strings.Join(names, "+")+"/"+itoa(dim), "aten.cat.default", ins,
			func(b *serialization.Builder, x []int32) []int32 { return []int32{b.ValueList(x...), b.Int(dim)} }, out)
	}
	for _, dt := range allT {
		Cases = append(Cases,
			catCase(dt, 0, shp(3, 5), shp(1, 5), shp(2, 5)),
			catCase(dt, 1, shp(3, 12), shp(3, 5), shp(3, 7)),
			catCase(dt, -1, shp(2, 3, 13), shp(2, 3, 1), shp(2, 3, 5), shp(2, 3, 7)),
			catCase(dt, -2, shp(2, 9, 3), shp(2, 4, 3), shp(0), shp(2, 0, 3), shp(2, 5, 3)),
		)
	}
	Cases = append(Cases,
		catCase(i8, 1, shp(3, 6, 3), shp(3, 1, 3), shp(3, 5, 3)),
		catCase(i8, 2, shp(2, 1, 3, 1, 1, 7), shp(2, 1, 1, 1, 1, 7), shp(2, 1, 2, 1, 1, 7)),
		catCase(f32, 0, shp(7), shp(7)),
		catCase(f32, 0, shp(0), shp(0), shp(0)),
		catCase(i32, 0, shp(0, 4), shp(0, 4), shp(0, 4)),
		catCase(f64, 0, shp(5, 3), shp(2, 3), shp(3, 3)),
		// Rows of whole vec4s (the kernel's vec4<u32> variant).
		catCase(f32, 0, shp(3, 8), shp(1, 8), shp(2, 8)),
		catCase(u8, 1, shp(2, 48), shp(2, 16), shp(2, 32)),
	)

	// slice_copy: negative, clamped and Null bounds, steps.
	sliceCase := func(dt serialization.DataType, shape []int64, dim int64, start, end *int64, step int64, out []int64) Case {
		bound := func(b *serialization.Builder, v *int64) int32 {
			if v == nil {
				return b.Null()
			}
			return b.Int(*v)
		}
		name := "slice/" + shapeDT(dt) + "/" + shapeName(shape) + "/" + itoa(dim) + "/" + shapeOpt(start) + ":" + shapeOpt(end) + ":" + itoa(step)
		return shapeCase(name, "aten.slice_copy.Tensor", []shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.Int(dim), bound(b, start), bound(b, end), b.Int(step)}
			}, out)
	}
	p := func(v int64) *int64 { return &v }
	for _, dt := range allT {
		Cases = append(Cases,
			sliceCase(dt, shp(7, 13), 1, p(2), p(11), 1, shp(7, 9)),
			sliceCase(dt, shp(7, 13), -1, p(-5), nil, 2, shp(7, 3)),
			sliceCase(dt, shp(7, 13), 0, nil, p(1<<62), 3, shp(3, 13)),
		)
	}
	Cases = append(Cases,
		sliceCase(f32, shp(5, 6), 0, p(-100), p(100), 1, shp(5, 6)),
		sliceCase(f32, shp(5, 6), 1, p(4), p(2), 1, shp(5, 0)),
		sliceCase(i32, shp(2, 3, 1, 4, 5, 6), -3, p(1), p(3), 1, shp(2, 3, 1, 2, 5, 6)),
		sliceCase(bl, shp(33), 0, p(1), p(-1), 1, shp(31)),
		sliceCase(u8, shp(3, 8), 1, p(4), nil, 1, shp(3, 4)),
		sliceCase(i8, shp(3, 9), 1, p(1), nil, 2, shp(3, 4)),
		sliceCase(i64, shp(4, 5), 1, p(1), p(4), 1, shp(4, 3)),
		sliceCase(f32, shp(5, 16), 1, p(4), p(12), 1, shp(5, 8)),
		sliceCase(bl, shp(3, 64), -1, p(16), p(48), 1, shp(3, 32)),
		// A SymInt end, as the exporter writes for dynamic bounds.
		shapeCase("slice/float32/symint_end", "aten.slice_copy.Tensor", []shapeIn{{dt: f32, shape: shp(9, 4)}},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.Int(0), b.Int(2), b.SymInt(7), b.Int(1)}
			}, shp(5, 4)),
	)

	// select_copy: negative dims and indices, down to a scalar.
	selectCase := func(dt serialization.DataType, shape []int64, dim, index int64, out []int64) Case {
		return shapeCase("select/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+itoa(dim)+"/"+itoa(index), "aten.select_copy.int",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(dim), b.Int(index)} }, out)
	}
	for _, dt := range allT {
		Cases = append(Cases,
			selectCase(dt, shp(7), 0, 3, shp()),
			selectCase(dt, shp(7), -1, -1, shp()),
			selectCase(dt, shp(5, 7, 3), 1, -2, shp(5, 3)),
			selectCase(dt, shp(5, 7, 3), -1, 2, shp(5, 7)),
		)
	}
	Cases = append(Cases,
		selectCase(f32, shp(2, 3, 4, 1, 5, 6), 3, 0, shp(2, 3, 4, 5, 6)),
		selectCase(i32, shp(4, 0, 3), 0, 1, shp(0, 3)),
	)

	// split_with_sizes_copy and split_copy: tuple outputs.
	splitCase := func(name, op string, dt serialization.DataType, shape []int64, arg func(b *serialization.Builder) int32, dim int64, outs ...[]int64) Case {
		return Case{
			Name: name,
			Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
				x := b.Tensor(dt, Dims(shape), -1)
				var ys []int32
				for _, o := range outs {
					ys = append(ys, b.Tensor(dt, Dims(o), -1))
				}
				b.Op(op, x, arg(b), b.Int(dim), b.ValueList(ys...))
				b.Inputs(x)
				b.Outputs(ys...)
				lo, hi := shapeRange(dt)
				return []*reference.Tensor{RandTensor(r, dt, shape, lo, hi)}
			},
		}
	}
	for _, dt := range allT {
		Cases = append(Cases,
			splitCase("split_with_sizes/"+shapeDT(dt)+"/7x13/1", "aten.split_with_sizes_copy.default", dt, shp(7, 13),
				func(b *serialization.Builder) int32 { return b.IntList(3, 0, 9, 1) }, -1, shp(7, 3), shp(7, 0), shp(7, 9), shp(7, 1)),
			splitCase("split/"+shapeDT(dt)+"/13x3/0", "aten.split_copy.Tensor", dt, shp(13, 3),
				func(b *serialization.Builder) int32 { return b.Int(5) }, 0, shp(5, 3), shp(5, 3), shp(3, 3)),
		)
	}
	Cases = append(Cases,
		splitCase("split_with_sizes/float32/rank6", "aten.split_with_sizes_copy.default", f32, shp(2, 1, 3, 5, 2, 3),
			func(b *serialization.Builder) int32 { return b.IntList(2, 3) }, 3, shp(2, 1, 3, 2, 2, 3), shp(2, 1, 3, 3, 2, 3)),
		splitCase("split/int32/7/7", "aten.split_copy.Tensor", i32, shp(7),
			func(b *serialization.Builder) int32 { return b.Int(7) }, 0, shp(7)),
	)

	// expand_copy: -1 keeps, new leading dims, size-0 expansion.
	expandCase := func(dt serialization.DataType, shape, size, out []int64) Case {
		return shapeCase("expand/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+shapeName(size), "aten.expand_copy.default",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.IntList(size...), b.Bool(false)}
			}, out)
	}
	for _, dt := range allT {
		Cases = append(Cases,
			expandCase(dt, shp(3, 1), shp(3, 7), shp(3, 7)),
			expandCase(dt, shp(1, 5), shp(2, 7, -1), shp(2, 7, 5)),
			expandCase(dt, shp(), shp(3, 5), shp(3, 5)),
		)
	}
	Cases = append(Cases,
		expandCase(f32, shp(1, 3, 1, 1, 2), shp(2, -1, 3, 5, 1, 2), shp(2, 1, 3, 5, 1, 2)),
		expandCase(i32, shp(4, 1), shp(4, 0), shp(4, 0)),
		expandCase(f64, shp(1, 3), shp(5, 3), shp(5, 3)),
	)

	// repeat: more repeats than dims, zeros, scalars.
	repeatCase := func(dt serialization.DataType, shape, reps, out []int64) Case {
		return shapeCase("repeat/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+shapeName(reps), "aten.repeat.default",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(reps...)} }, out)
	}
	for _, dt := range allT {
		Cases = append(Cases,
			repeatCase(dt, shp(3, 5), shp(2, 3), shp(6, 15)),
			repeatCase(dt, shp(7), shp(2, 1, 3), shp(2, 1, 21)),
		)
	}
	Cases = append(Cases,
		repeatCase(f32, shp(), shp(3), shp(3)),
		repeatCase(i32, shp(2, 4), shp(3, 1), shp(6, 4)),
		repeatCase(i32, shp(2, 3), shp(0, 2), shp(0, 6)),
		repeatCase(bl, shp(1, 2, 1, 3, 1, 1), shp(2, 1, 3, 1, 2, 5), shp(2, 2, 3, 3, 2, 5)),
	)

	// repeat_interleave.self_int: along a dim, and flattened (dim Null).
	riCase := func(dt serialization.DataType, shape []int64, reps int64, dim *int64, out []int64) Case {
		return shapeCase("repeat_interleave/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+itoa(reps)+"/"+shapeOpt(dim), "aten.repeat_interleave.self_int",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 {
				d := b.Null()
				if dim != nil {
					d = b.Int(*dim)
				}
				return []int32{x[0], b.Int(reps), d, b.Null()}
			}, out)
	}
	for _, dt := range allT {
		Cases = append(Cases,
			riCase(dt, shp(3, 5), 3, p(0), shp(9, 5)),
			riCase(dt, shp(3, 5), 2, p(-1), shp(3, 10)),
			riCase(dt, shp(3, 5), 3, nil, shp(45)),
		)
	}
	Cases = append(Cases,
		riCase(f32, shp(), 4, nil, shp(4)),
		riCase(i32, shp(2, 3), 0, p(1), shp(2, 0)),
		shapeCase("repeat_interleave/float32/output_size", "aten.repeat_interleave.self_int", []shapeIn{{dt: f32, shape: shp(4, 3)}},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.SymInt(2), b.Int(0), b.Int(8)}
			}, shp(8, 3)),
	)

	// flip: negative and several dims, rank 0 and 6.
	flipCase := func(dt serialization.DataType, shape []int64, dims ...int64) Case {
		var n []string
		for _, d := range dims {
			n = append(n, itoa(d))
		}
		return shapeCase("flip/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+strings.Join(n, ","), "aten.flip.default",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(dims...)} }, shape)
	}
	for _, dt := range allT {
		Cases = append(Cases,
			flipCase(dt, shp(13), 0),
			flipCase(dt, shp(3, 7), -1),
			flipCase(dt, shp(3, 5, 7), 0, -1),
		)
	}
	Cases = append(Cases,
		flipCase(f32, shp(), 0),
		flipCase(f32, shp(2, 3, 1, 2, 3, 5), 0, 2, 3, -1),
		flipCase(i32, shp(3, 0, 2), 1),
		flipCase(f32, shp(4, 8), 0),
		flipCase(u8, shp(4, 8), 0),
		// > 65535 workgroups: 4099·4095 int32 words (rows too odd for
		// vec4s) in 256-wide groups.
		shapeDirect(Case{Name: "flip/int32/4099x4095/big"}, "aten.flip.default", []shapeIn{{dt: i32, shape: shp(4099, 4095)}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(0)} }, shp(4099, 4095)),
	)
}

// shapeOpt names an optional int.
func shapeOpt(v *int64) string {
	if v == nil {
		return "none"
	}
	return itoa(*v)
}

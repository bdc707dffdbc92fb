package opstest

import (
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func init() {
	for _, dt := range []serialization.DataType{serialization.Float32, serialization.Int32} {
		for _, shape := range [][]int64{{1}, {7}, {3, 5}, {2, 3, 7}, {1000, 77}} {
			Cases = append(Cases, Case{
				Name: "view_copy/" + dt.String() + "/" + shapeName(shape),
				Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
					x := b.Tensor(dt, Dims(shape), -1)
					flat := []int64{reference.New(dt, shape).Numel()}
					y := b.Tensor(dt, Dims(flat), -1)
					b.Op("aten.view_copy.default", x, b.IntList(flat...), y)
					z := b.Tensor(dt, Dims(flat), -1)
					b.Op("aten.clone.default", y, b.Null(), z)
					b.Inputs(x)
					b.Outputs(y, z)
					return []*reference.Tensor{RandTensor(r, dt, shape, -100, 100)}
				},
			})
		}
	}
	// The shape-only copies, on an odd-sized int32 tensor.
	Cases = append(Cases, Case{
		Name: "squeeze_unsqueeze_alias_clone_dim_order",
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			dt := serialization.Int32
			x := b.Tensor(dt, []uint32{3, 1, 5}, -1)
			s := b.Tensor(dt, []uint32{3, 5}, -1)
			b.Op("aten.squeeze_copy.dims", x, b.IntList(1), s)
			u := b.Tensor(dt, []uint32{1, 3, 5}, -1)
			b.Op("aten.unsqueeze_copy.default", s, b.Int(0), u)
			a := b.Tensor(dt, []uint32{1, 3, 5}, -1)
			b.Op("aten.alias_copy.default", u, a)
			c := b.Tensor(dt, []uint32{1, 3, 5}, -1)
			b.Op("dim_order_ops._clone_dim_order.default", a, b.Bool(false), b.Null(), c)
			b.Inputs(x)
			b.Outputs(s, c)
			return []*reference.Tensor{RandTensor(r, dt, []int64{3, 1, 5}, -1000, 1000)}
		},
	})
	// Output shapes computed from the arguments: each op writes an
	// intermediate declared flat with spare capacity (shapeCase).
	view := func(dt serialization.DataType, shape []int64, size func(b *serialization.Builder) int32, sizeName string, out []int64) Case {
		return shapeCase("view_copy/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+sizeName, "aten.view_copy.default",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], size(b)} }, out)
	}
	list := func(v ...int64) func(b *serialization.Builder) int32 {
		return func(b *serialization.Builder) int32 { return b.IntList(v...) }
	}
	for _, dt := range shapeDTypes {
		Cases = append(Cases,
			view(dt, []int64{3, 5, 7}, list(-1, 7), "-1,7", []int64{15, 7}),
			view(dt, []int64{13}, list(1, 13, 1), "1,13,1", []int64{1, 13, 1}),
			view(dt, []int64{1}, list(), "scalar", []int64{}),
			view(dt, []int64{}, list(1, -1, 1), "1,-1,1", []int64{1, 1, 1}),
		)
	}
	Cases = append(Cases,
		view(serialization.Float32, []int64{2, 3, 4, 5, 6, 7}, list(6, -1, 35), "rank6", []int64{6, 24, 35}),
		view(serialization.Int32, []int64{4, 0, 3}, list(-1, 12), "-1,12", []int64{0, 12}),
		// A ValueList of Int and SymInt values, as exported for dynamic sizes.
		view(serialization.Float32, []int64{6, 5}, func(b *serialization.Builder) int32 {
			return b.ValueList(b.SymInt(3), b.Int(-1), b.Int(5))
		}, "symint", []int64{3, 2, 5}),
	)
	squeeze := func(dt serialization.DataType, shape []int64, dims []int64, out []int64) Case {
		return shapeCase("squeeze_copy/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+shapeName(dims), "aten.squeeze_copy.dims",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(dims...)} }, out)
	}
	unsqueeze := func(dt serialization.DataType, shape []int64, dim int64, out []int64) Case {
		return shapeCase("unsqueeze_copy/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+itoa(dim), "aten.unsqueeze_copy.default",
			[]shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(dim)} }, out)
	}
	same := func(op string, dt serialization.DataType, shape []int64, extra func(b *serialization.Builder) []int32) Case {
		return shapeCase(op+"/"+shapeDT(dt)+"/"+shapeName(shape), op, []shapeIn{{dt: dt, shape: shape}},
			func(b *serialization.Builder, x []int32) []int32 { return append([]int32{x[0]}, extra(b)...) }, shape)
	}
	for _, dt := range shapeDTypes {
		Cases = append(Cases,
			squeeze(dt, []int64{3, 1, 5, 1}, []int64{1, -1}, []int64{3, 5}),
			squeeze(dt, []int64{3, 1, 5, 1}, []int64{0, 2, -3}, []int64{3, 5, 1}),
			squeeze(dt, []int64{1}, []int64{0}, []int64{}),
			unsqueeze(dt, []int64{3, 5}, -1, []int64{3, 5, 1}),
			unsqueeze(dt, []int64{3, 5}, -3, []int64{1, 3, 5}),
			unsqueeze(dt, []int64{3, 5}, 1, []int64{3, 1, 5}),
			unsqueeze(dt, []int64{}, 0, []int64{1}),
			same("aten.clone.default", dt, []int64{7, 3}, func(b *serialization.Builder) []int32 { return []int32{b.Null()} }),
			same("aten.alias_copy.default", dt, []int64{}, func(b *serialization.Builder) []int32 { return nil }),
			same("dim_order_ops._clone_dim_order.default", dt, []int64{2, 1, 3, 1, 2, 5},
				func(b *serialization.Builder) []int32 { return []int32{b.Bool(false), b.Null()} }),
		)
	}
	Cases = append(Cases,
		squeeze(serialization.Float32, []int64{}, []int64{-1}, []int64{}),
		squeeze(serialization.Float32, []int64{1, 2, 1, 3, 1, 1}, []int64{0, 2, 4, 5}, []int64{2, 3}),
		squeeze(serialization.Int32, []int64{0, 1, 4}, []int64{0, 1}, []int64{0, 4}),
		unsqueeze(serialization.Float32, []int64{}, -1, []int64{1}),
		unsqueeze(serialization.Float32, []int64{2, 3, 1, 4, 5}, 5, []int64{2, 3, 1, 4, 5, 1}),
	)
	// A constant that feeds prepack, then a copy: exercises materialisation.
	Cases = append(Cases, Case{
		Name: "prepack/named",
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			w := RandTensor(r, serialization.Float32, []int64{5, 3}, -1, 1)
			c, _ := b.NamedConst(serialization.Float32, Dims(w.Shape), w.Encode())
			p := b.Tensor(serialization.Float32, Dims(w.Shape), -1)
			b.Op("et_vk.prepack.default", c, p)
			x := b.Tensor(serialization.Float32, []uint32{1}, -1)
			b.Inputs(x)
			b.Outputs(p)
			return []*reference.Tensor{RandTensor(r, serialization.Float32, []int64{1}, 0, 1)}
		},
	})
}

func shapeName(s []int64) string {
	out := ""
	for i, d := range s {
		if i > 0 {
			out += "x"
		}
		out += itoa(d)
	}
	return out
}

func itoa(d int64) string {
	if d == 0 {
		return "0"
	}
	neg := d < 0
	if neg {
		d = -d
	}
	var b []byte
	for d > 0 {
		b = append([]byte{byte('0' + d%10)}, b...)
		d /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

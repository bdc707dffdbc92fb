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

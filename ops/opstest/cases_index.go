package opstest

import (
	"strings"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// idxIn is an int32 index input of shape with values in [-n, n): negative
// values count from the end. wild widens that to [-3n, 3n), so some are
// out of range (the ops then give zero elements, as documented).
func idxIn(shape []int64, n int64, wild bool) shapeIn {
	f := float64(n)
	if wild {
		f *= 3
	}
	return shapeIn{dt: serialization.Int32, shape: shape, lo: -f, hi: f}
}

func init() {
	f32, i32, bl, u8 := serialization.Float32, serialization.Int32, serialization.Bool, serialization.Uint8

	// index_select: 1-D and 0-D indices, negative dims, a scalar self.
	isCase := func(dt serialization.DataType, shape []int64, dim int64, ix shapeIn, out []int64) Case {
		return shapeCase("index_select/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+itoa(dim)+"/"+shapeName(ix.shape), "aten.index_select.default",
			[]shapeIn{{dt: dt, shape: shape}, ix},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.Int(dim), x[1]} }, out)
	}
	for _, dt := range shapeDTypes {
		Cases = append(Cases,
			isCase(dt, shp(5, 7), 0, idxIn(shp(9), 5, false), shp(9, 7)),
			isCase(dt, shp(5, 7), -1, idxIn(shp(3), 7, false), shp(5, 3)),
			isCase(dt, shp(5, 7, 3), 1, idxIn(shp(), 7, false), shp(5, 1, 3)),
		)
	}
	Cases = append(Cases,
		isCase(f32, shp(), 0, idxIn(shp(1), 1, false), shp()),
		isCase(i32, shp(2, 3, 1, 4, 5, 3), -2, idxIn(shp(7), 5, false), shp(2, 3, 1, 4, 7, 3)),
		isCase(f32, shp(4, 6), 0, idxIn(shp(0), 4, false), shp(0, 6)),
		isCase(f32, shp(5, 7), 0, idxIn(shp(13), 5, true), shp(13, 7)),
	)

	// gather: out shaped like index, which may be smaller than self
	// outside dim.
	gCase := func(dt serialization.DataType, shape []int64, dim int64, ix shapeIn) Case {
		return shapeCase("gather/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+itoa(dim)+"/"+shapeName(ix.shape), "aten.gather.default",
			[]shapeIn{{dt: dt, shape: shape}, ix},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], b.Int(dim), x[1], b.Bool(false)}
			}, ix.shape)
	}
	for _, dt := range shapeDTypes {
		Cases = append(Cases,
			gCase(dt, shp(5, 7), 0, idxIn(shp(9, 7), 5, false)),
			gCase(dt, shp(5, 7), -1, idxIn(shp(4, 3), 7, false)),
		)
	}
	Cases = append(Cases,
		gCase(f32, shp(), 0, idxIn(shp(), 1, false)),
		gCase(i32, shp(2, 3, 4, 1, 5, 3), 4, idxIn(shp(2, 2, 4, 1, 9, 3), 5, false)),
		gCase(f32, shp(3, 4), 1, idxIn(shp(3, 0), 4, false)),
		gCase(u8, shp(3, 11), 1, idxIn(shp(3, 13), 11, true)),
	)

	// index.Tensor: Null entries, broadcasting index tensors, consecutive
	// and separated indexed dims.
	ixCase := func(dt serialization.DataType, shape []int64, out []int64, ixs ...*shapeIn) Case {
		ins := []shapeIn{{dt: dt, shape: shape}}
		var names []string
		for _, ix := range ixs {
			if ix == nil {
				names = append(names, "none")
				continue
			}
			ins = append(ins, *ix)
			names = append(names, "["+shapeName(ix.shape)+"]")
		}
		return shapeCase("index/"+shapeDT(dt)+"/"+shapeName(shape)+"/"+strings.Join(names, ","), "aten.index.Tensor", ins,
			func(b *serialization.Builder, x []int32) []int32 {
				var list []int32
				k := 1
				for _, ix := range ixs {
					if ix == nil {
						list = append(list, b.Null())
						continue
					}
					list = append(list, x[k])
					k++
				}
				return []int32{x[0], b.ValueList(list...)}
			}, out)
	}
	ix := func(shape []int64, n int64) *shapeIn { v := idxIn(shape, n, false); return &v }
	for _, dt := range shapeDTypes {
		Cases = append(Cases,
			ixCase(dt, shp(7, 5), shp(3, 5), ix(shp(3), 7)),
			ixCase(dt, shp(4, 5, 6), shp(4, 2, 3, 6), nil, ix(shp(2, 3), 5)),
			ixCase(dt, shp(4, 5, 6), shp(2, 3, 6), ix(shp(2, 1), 4), ix(shp(3), 5)),
			ixCase(dt, shp(4, 5, 6), shp(3, 5), ix(shp(3), 4), nil, ix(shp(1), 6)),
		)
	}
	Cases = append(Cases,
		ixCase(f32, shp(4, 5, 6, 7), shp(4, 2, 7), nil, ix(shp(2), 5), ix(shp(), 6)),
		ixCase(i32, shp(5, 6), shp(6), ix(shp(), 5)),
		ixCase(f32, shp(3, 4, 5), shp(2, 2), ix(shp(2, 1), 3), ix(shp(1, 2), 4), ix(shp(2, 2), 5)),
		ixCase(bl, shp(2, 3, 4, 5, 2, 3), shp(2, 3, 7, 2, 3), nil, nil, ix(shp(7), 4), ix(shp(7), 5)),
		ixCase(f32, shp(6, 4), shp(0, 4), ix(shp(0), 6)),
		func() Case {
			w := idxIn(shp(3, 4), 6, true)
			return ixCase(f32, shp(6, 4), shp(3, 4, 4), &w)
		}(),
	)

	// embedding: int32 indices of any rank into a 2-D weight.
	embCase := func(dt serialization.DataType, v, d int64, ix shapeIn) Case {
		return shapeCase("embedding/"+shapeDT(dt)+"/"+itoa(v)+"x"+itoa(d)+"/"+shapeName(ix.shape), "aten.embedding.default",
			[]shapeIn{{dt: dt, shape: shp(v, d)}, ix},
			func(b *serialization.Builder, x []int32) []int32 {
				return []int32{x[0], x[1], b.Int(-1), b.Bool(false), b.Bool(false)}
			}, append(append([]int64{}, ix.shape...), d))
	}
	Cases = append(Cases,
		embCase(f32, 11, 7, idxIn(shp(3, 4), 11, false)),
		embCase(f32, 11, 8, idxIn(shp(5), 11, false)),
		embCase(f32, 11, 7, idxIn(shp(), 11, false)),
		embCase(i32, 5, 3, idxIn(shp(2, 1, 3), 5, false)),
		embCase(bl, 6, 5, idxIn(shp(7), 6, false)),
		embCase(u8, 6, 8, idxIn(shp(7), 6, false)),
		embCase(f32, 11, 7, idxIn(shp(13), 11, true)),
		embCase(f32, 11, 7, idxIn(shp(0, 2), 11, false)),
	)
}

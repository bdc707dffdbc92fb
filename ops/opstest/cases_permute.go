package opstest

import (
	"math/rand/v2"
	"strings"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// permuteCase permutes a random tensor of shape by dims (exactly as
// serialized, negative entries included).
func permuteCase(dt serialization.DataType, shape []int64, dims ...int64) Case {
	rank := int64(len(shape))
	outShape := make([]int64, len(dims))
	name := make([]string, len(dims))
	for i, d := range dims {
		name[i] = itoa(d)
		if d < 0 {
			d += rank
		}
		outShape[i] = shape[d]
	}
	lo, hi := -100.0, 100.0
	switch dt {
	case serialization.Bool:
		lo, hi = 0, 2
	case serialization.Uint8:
		lo, hi = 0, 256
	case serialization.Int8:
		lo, hi = -128, 128
	case serialization.Int64:
		lo, hi = -1e12, 1e12
	case serialization.Float32, serialization.Float64:
		lo, hi = -1, 1
	}
	return Case{
		Name: "permute/" + dt.String() + "/" + shapeName(shape) + "/" + strings.Join(name, ","),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			x := b.Tensor(dt, Dims(shape), -1)
			y := b.Tensor(dt, Dims(outShape), -1)
			b.Op("aten.permute_copy.default", x, b.IntList(dims...), y)
			b.Inputs(x)
			b.Outputs(y)
			return []*reference.Tensor{RandTensor(r, dt, shape, lo, hi)}
		},
	}
}

func init() {
	f32, i32 := serialization.Float32, serialization.Int32
	Cases = append(Cases,
		permuteCase(f32, []int64{7}, 0),
		permuteCase(i32, []int64{7}, -1),
		permuteCase(f32, []int64{3, 5}, 1, 0),
		permuteCase(i32, []int64{1, 9}, -1, 0),
		permuteCase(f32, []int64{2, 3, 7}, 2, 0, 1),
		permuteCase(i32, []int64{2, 3, 7}, 1, 2, 0),
		permuteCase(f32, []int64{3, 5, 7}, -1, -3, -2),
		permuteCase(f32, []int64{4, 5, 6}, 0, 1, 2),
		permuteCase(f32, []int64{64, 33, 17}, 2, 0, 1),
		permuteCase(f32, []int64{2, 3, 4, 5}, 0, 2, 3, 1),
		permuteCase(i32, []int64{3, 1, 4, 2}, 3, 2, 1, 0),
		permuteCase(f32, []int64{2, 3, 1, 4, 5}, 4, 1, 3, 0, 2),
		permuteCase(i32, []int64{2, 3, 4, 5, 6}, 0, 3, 1, 4, 2),
		permuteCase(f32, []int64{2, 1, 3, 2, 1, 2, 3, 2}, 7, 5, 3, 1, 6, 4, 2, 0),
		// Sub-word elements: odd element counts so packed output words
		// straddle rows and the last word is partly padding.
		permuteCase(serialization.Bool, []int64{3, 5, 7}, 2, 0, 1),
		permuteCase(serialization.Bool, []int64{5}, 0),
		permuteCase(serialization.Uint8, []int64{3, 5, 7}, 1, 2, 0),
		permuteCase(serialization.Uint8, []int64{3, 3, 1, 5}, -1, 0, 2, 1),
		permuteCase(serialization.Int8, []int64{7, 9}, 1, 0),
		// 8-byte elements as two words each.
		permuteCase(serialization.Int64, []int64{3, 5, 7}, 2, 0, 1),
		permuteCase(serialization.Float64, []int64{4, 3}, -1, -2),
		permuteCase(f32, []int64{}),
		permuteCase(i32, []int64{3, 0, 5}, 2, 0, 1),
		permuteCase(serialization.Bool, []int64{2, 3, 1, 5, 2, 3}, 5, 3, 1, 0, 4, 2),
	)
	// aten.permute.default, writing an intermediate declared flat so the
	// op must compute the permuted shape itself.
	for _, dt := range shapeDTypes {
		Cases = append(Cases, shapeCase("permute.default/"+shapeDT(dt)+"/3x5x7/-1,0,1", "aten.permute.default",
			[]shapeIn{{dt: dt, shape: []int64{3, 5, 7}}},
			func(b *serialization.Builder, x []int32) []int32 { return []int32{x[0], b.IntList(-1, 0, 1)} }, []int64{7, 3, 5}))
	}
}

package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// unaryCase is one aten.relu / aten.sigmoid graph: out = op(x).
type unaryCase struct {
	name   string // optional qualifier
	op     string // relu, sigmoid
	dt     serialization.DataType
	shape  []int64
	lo, hi float64   // random input range
	fixed  []float64 // fixed inputs instead of random ones
}

func (c unaryCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(c.dt, Dims(c.shape), -1)
	y := b.Tensor(c.dt, Dims(c.shape), -1)
	b.Op("aten."+c.op+".default", x, y)
	b.Inputs(x)
	b.Outputs(y)
	if c.fixed != nil {
		t := reference.New(c.dt, c.shape)
		copy(t.V, c.fixed)
		return []*reference.Tensor{t}
	}
	return []*reference.Tensor{RandTensor(r, c.dt, c.shape, c.lo, c.hi)}
}

func init() {
	var cs []unaryCase
	// {7}, {3,5}, {2,3,7} take the scalar kernel, the rest vec4.
	shapes := [][]int64{{1}, {7}, {3, 5}, {2, 3, 7}, {4}, {2, 3, 8}, {1000, 77}}
	for _, sh := range shapes {
		cs = append(cs,
			unaryCase{op: "relu", dt: serialization.Float32, shape: sh, lo: -10, hi: 10},
			unaryCase{op: "relu", dt: serialization.Int32, shape: sh, lo: math.MinInt32, hi: math.MaxInt32 + 1},
			unaryCase{op: "sigmoid", dt: serialization.Float32, shape: sh, lo: -20, hi: 20},
		)
	}
	inf, nan, negz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	// Saturation and the edges: exp(1000) overflows float32, so a naive
	// sigmoid gives NaN at -1000; sigmoid(-100) is a float32 denormal that
	// llvmpipe may flush to 0, well inside the absolute tolerance.
	special := []float64{100, -100, 1000, -1000, 0, negz, 1e-8, -1e-8, 20, -20, 88, -88, 89, -89, inf, -inf, nan, 0.5}
	for _, n := range []int{len(special), 16} { // scalar and vec4 kernels
		cs = append(cs,
			unaryCase{name: "special", op: "sigmoid", dt: serialization.Float32, shape: []int64{int64(n)}, fixed: special[:n]},
			unaryCase{name: "special", op: "relu", dt: serialization.Float32, shape: []int64{int64(n)}, fixed: special[:n]},
		)
	}
	cs = append(cs, unaryCase{name: "special", op: "relu", dt: serialization.Int32, shape: []int64{5},
		fixed: []float64{math.MinInt32, -1, 0, 1, math.MaxInt32}})
	for _, c := range cs {
		name := c.op + "/"
		if c.name != "" {
			name += c.name + "/"
		}
		Cases = append(Cases, Case{Name: name + c.dt.String() + "/" + shapeName(c.shape), Build: c.build})
	}
}

package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// toCopyCase is one aten._to_copy / _to_dim_order_copy graph converting
// self to out's dtype.
type toCopyCase struct {
	name     string
	dimOrder bool // _to_dim_order_copy instead of _to_copy
	order    []int64
	xt, yt   serialization.DataType
	shape    []int64
	lo, hi   float64
	fixed    []float64
}

func (c toCopyCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(c.xt, Dims(c.shape), -1)
	y := b.Tensor(c.yt, Dims(c.shape), -1)
	if c.dimOrder {
		order := b.Null()
		if c.order != nil {
			order = b.IntList(c.order...)
		}
		b.Op("dim_order_ops._to_dim_order_copy.default", x, b.Null(), b.Null(), b.Null(), b.Null(), b.Bool(false), order, y)
	} else {
		b.Op("aten._to_copy.default", x, b.Null(), b.Null(), b.Null(), b.Null(), b.Bool(false), b.Null(), y)
	}
	b.Inputs(x)
	b.Outputs(y)
	return []*reference.Tensor{unaryInput(r, c.xt, c.shape, c.lo, c.hi, c.fixed)}
}

// toCopyRange is a random input range for dt that stays inside what every
// target can hold without undefined behaviour (float to int32 out of
// range is undefined in C++ and torch).
func toCopyRange(dt serialization.DataType) (float64, float64) {
	switch dt {
	case serialization.Float32:
		return -1000, 1000
	case serialization.Int32:
		return math.MinInt32, math.MaxInt32 + 1
	case serialization.Uint8:
		return 0, 256
	case serialization.Int8:
		return -128, 128
	}
	return 0, 2 // bool
}

func init() {
	dts := []serialization.DataType{uF32, uI32, uBool, uU8, uI8}
	var cs []toCopyCase
	// Every pair, through rank 0, an odd count (partial last word), a
	// multiple of 4 (vec4 on the 4-byte side) and rank 5.
	for _, xt := range dts {
		for _, yt := range dts {
			lo, hi := toCopyRange(xt)
			for _, sh := range [][]int64{{}, {7}, {2, 1, 3, 1, 4}} {
				cs = append(cs, toCopyCase{xt: xt, yt: yt, shape: sh, lo: lo, hi: hi})
			}
		}
	}
	// Float edges: truncation toward zero, signed zero, NaN to bool, and
	// float32 values whose int32 conversion wraps into uint8/int8.
	edges := []float64{0.9, -0.9, 1.5, -1.5, 2.99, -2.99, 255.7, 256.2, -129.5, 127.9, 0, math.Copysign(0, -1), 1e6, -1e6, 3e9 / 2}
	for _, yt := range []serialization.DataType{uI32, uU8, uI8} {
		cs = append(cs, toCopyCase{name: "edges", xt: uF32, yt: yt, shape: []int64{int64(len(edges))}, fixed: edges})
	}
	cs = append(cs, toCopyCase{name: "edges", xt: uF32, yt: uBool, shape: []int64{8},
		fixed: []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-30, -1e-30, 0.5}})
	cs = append(cs, toCopyCase{name: "edges", xt: uI32, yt: uF32, shape: []int64{6},
		fixed: []float64{math.MinInt32, math.MaxInt32, 16777217, -16777217, 16777219, 0}})
	cs = append(cs, toCopyCase{name: "edges", xt: uI32, yt: uI8, shape: []int64{6},
		fixed: []float64{math.MinInt32, math.MaxInt32, 128, -129, 255, 256}})
	// _to_dim_order_copy: Null and identity dim orders, and an empty
	// tensor.
	cs = append(cs,
		toCopyCase{dimOrder: true, xt: uF32, yt: uI32, shape: []int64{3, 5}, lo: -100, hi: 100},
		toCopyCase{dimOrder: true, order: []int64{0, 1, 2}, xt: uI32, yt: uF32, shape: []int64{2, 3, 5}, lo: -100, hi: 100},
		toCopyCase{dimOrder: true, order: []int64{0, 2, 3, 1}, xt: uBool, yt: uF32, shape: []int64{1, 3, 2, 2}, lo: 0, hi: 2},
		toCopyCase{dimOrder: true, xt: uF32, yt: uF32, shape: []int64{33}, lo: -1, hi: 1},
		toCopyCase{xt: uF32, yt: uBool, shape: []int64{0, 3}},
	)
	for _, c := range cs {
		op := "_to_copy"
		if c.dimOrder {
			op = "_to_dim_order_copy"
		}
		name := op + "/" + c.xt.String() + "-" + c.yt.String()
		if c.name != "" {
			name += "/" + c.name
		}
		sh := shapeName(c.shape)
		if len(c.shape) == 0 {
			sh = "scalar"
		}
		Cases = append(Cases, Case{Name: name + "/" + sh, Build: c.build})
	}
}

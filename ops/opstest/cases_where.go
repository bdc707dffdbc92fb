package opstest

import (
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// whereCase is one aten.where.self graph: out = cond ? a : b, all three
// broadcast together.
type whereCase struct {
	name       string
	at, bt     serialization.DataType
	cs, as, bs []int64
	c, a, b    []float64 // fixed inputs
}

func (c whereCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	bl := serialization.Bool
	cond := b.Tensor(bl, Dims(c.cs), -1)
	x := b.Tensor(c.at, Dims(c.as), -1)
	y := b.Tensor(c.bt, Dims(c.bs), -1)
	ot := bl
	switch {
	case c.at == serialization.Float32 || c.bt == serialization.Float32:
		ot = serialization.Float32
	case c.at == serialization.Int32 || c.bt == serialization.Int32:
		ot = serialization.Int32
	}
	z := b.Tensor(ot, Dims(binaryBroadcast(binaryBroadcast(c.cs, c.as), c.bs)), -1)
	b.Op("aten.where.self", cond, x, y, z)
	b.Inputs(cond, x, y)
	b.Outputs(z)
	return []*reference.Tensor{
		binaryInput(r, "where", 0, bl, c.cs, c.c),
		binaryInput(r, "where", 0, c.at, c.as, c.a),
		binaryInput(r, "where", 1, c.bt, c.bs, c.b),
	}
}

func init() {
	f, i, bl := serialization.Float32, serialization.Int32, serialization.Bool
	// (cond, self, other): three-way broadcasts with each operand
	// broadcast in turn, rank 0 and 6, odd sizes, size 0.
	shapes := [][3][]int64{
		{{13}, {13}, {13}},
		{{2, 3, 8}, {2, 3, 8}, {2, 3, 8}},
		{{}, {}, {}},
		{{}, {5, 7}, {5, 7}},
		{{5, 7}, {}, {}},
		{{4, 1, 1}, {1, 3, 1}, {1, 1, 5}},
		{{1, 3, 5}, {4, 1, 5}, {4, 3, 1}},
		{{7}, {3, 1}, {}},
		{{2, 1, 3, 1, 5, 1}, {1, 4, 1, 3, 1, 2}, {2, 4, 3, 1, 1, 2}},
		{{33, 65}, {65}, {33, 1}},
		{{0, 3}, {3}, {1}},
		{{6, 1}, {1, 0}, {1}},
	}
	var cs []whereCase
	for _, dts := range [][2]serialization.DataType{{f, f}, {i, i}, {bl, bl}} {
		for _, s := range shapes {
			cs = append(cs, whereCase{at: dts[0], bt: dts[1], cs: s[0], as: s[1], bs: s[2]})
		}
	}
	for _, dts := range [][2]serialization.DataType{{f, i}, {i, f}, {bl, i}, {f, bl}} {
		cs = append(cs,
			whereCase{at: dts[0], bt: dts[1], cs: []int64{13}, as: []int64{13}, bs: []int64{13}},
			whereCase{at: dts[0], bt: dts[1], cs: []int64{4, 1, 1}, as: []int64{1, 3, 1}, bs: []int64{1, 1, 5}},
		)
	}
	// NaN, infinities and -0 pass through unchanged.
	inf, nan, negz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	cs = append(cs, whereCase{name: "edges", at: f, bt: f, cs: []int64{6}, as: []int64{6}, bs: []int64{6},
		c: []float64{1, 0, 1, 0, 1, 0}, a: []float64{nan, 1, inf, 2, negz, 3}, b: []float64{4, nan, 5, -inf, 6, negz}})
	for _, c := range cs {
		name := "where/"
		if c.name != "" {
			name += c.name + "/"
		}
		name += c.at.String() + "_" + c.bt.String() + "/" + binaryShapeName(c.cs) + "+" + binaryShapeName(c.as) + "+" + binaryShapeName(c.bs)
		Cases = append(Cases, Case{Name: name, Build: c.build})
	}
}

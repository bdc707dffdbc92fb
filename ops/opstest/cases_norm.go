package opstest

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// normTol: outputs are O(1) values normalized with f32 row statistics.
var normTol = Tolerance{Abs: 1e-5, Rel: 1e-4}

// normCase is one normalization graph. Weight, bias and the running
// statistics are graph inputs (random, running_var positive).
type normCase struct {
	name   string
	op     string // layer, rms, group, batch
	shape  []int64
	ns     []int64 // layer: normalized_shape
	groups int64   // group
	noW    bool    // weight is Null
	noB    bool    // bias is Null
	cStats bool    // batch: declare save_mean / save_invstd with C elements
	lo, hi float64
	tol    Tolerance
}

func (c normCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	f32 := serialization.Float32
	x := b.Tensor(f32, Dims(c.shape), -1)
	y := b.Tensor(f32, Dims(c.shape), -1)
	inputs := []int32{x}
	vals := []*reference.Tensor{RandTensor(r, f32, c.shape, c.lo, c.hi)}
	param := func(n int64, lo, hi float64, null bool) int32 {
		if null {
			return b.Null()
		}
		id := b.Tensor(f32, Dims([]int64{n}), -1)
		inputs = append(inputs, id)
		vals = append(vals, RandTensor(r, f32, []int64{n}, lo, hi))
		return id
	}
	rank := len(c.shape)
	switch c.op {
	case "layer":
		n := int64(1)
		for _, d := range c.ns {
			n *= d
		}
		w, bias := param(n, -2, 2, c.noW), param(n, -1, 1, c.noB)
		st := append([]int64(nil), c.shape...)
		for i := rank - len(c.ns); i < rank; i++ {
			st[i] = 1
		}
		m, s := b.Tensor(f32, Dims(st), -1), b.Tensor(f32, Dims(st), -1)
		b.Op("aten.native_layer_norm.default", x, b.IntList(c.ns...), w, bias, b.Double(1e-5), b.ValueList(y, m, s))
		b.Inputs(inputs...)
		b.Outputs(y, m, s)
	case "rms":
		w := param(c.shape[rank-1], -2, 2, c.noW)
		b.Op("et_vk.rms_norm.default", x, w, b.Double(1e-6), y)
		b.Inputs(inputs...)
		b.Outputs(y)
	case "group":
		ch := c.shape[1]
		hw := int64(1)
		for _, d := range c.shape[2:] {
			hw *= d
		}
		w, bias := param(ch, -2, 2, c.noW), param(ch, -1, 1, c.noB)
		st := []int64{c.shape[0], c.groups}
		m, s := b.Tensor(f32, Dims(st), -1), b.Tensor(f32, Dims(st), -1)
		b.Op("aten.native_group_norm.default", x, w, bias, b.Int(c.shape[0]), b.Int(ch), b.Int(hw), b.Int(c.groups),
			b.Double(1e-5), b.ValueList(y, m, s))
		b.Inputs(inputs...)
		b.Outputs(y, m, s)
	case "batch":
		ch := c.shape[1]
		w, bias := param(ch, -2, 2, c.noW), param(ch, -1, 1, c.noB)
		rm, rv := param(ch, -1, 1, false), param(ch, 0.1, 2, false)
		st := []int64{0}
		if c.cStats {
			st = []int64{ch}
		}
		m, s := b.Tensor(f32, Dims(st), -1), b.Tensor(f32, Dims(st), -1)
		b.Op("aten._native_batch_norm_legit_no_training.default", x, w, bias, rm, rv, b.Double(0.1), b.Double(1e-5),
			b.ValueList(y, m, s))
		b.Inputs(inputs...)
		b.Outputs(y, m, s)
	}
	return vals
}

func init() {
	ds := func(d ...int64) []int64 { return d }
	layer := func(shape, ns []int64) normCase {
		return normCase{op: "layer", shape: shape, ns: ns, lo: -3, hi: 3}
	}
	cs := []normCase{
		layer(ds(7), ds(7)),
		layer(ds(3, 5), ds(5)),
		layer(ds(2, 3, 7), ds(7)),
		layer(ds(2, 3, 7), ds(3, 7)),
		layer(ds(2, 3, 7), ds(2, 3, 7)),
		layer(ds(2, 3, 4, 5, 6), ds(5, 6)),
		layer(ds(13, 33), ds(33)),      // tree
		layer(ds(4, 1000), ds(1000)),   // tree
		layer(ds(2, 70001), ds(70001)), // WG 256, a row past 65535
		layer(ds(70000, 20), ds(20)),   // many rows: folded grid
		{op: "layer", name: "noaffine", shape: ds(5, 9), ns: ds(9), noW: true, noB: true, lo: -3, hi: 3},
		{op: "layer", name: "nobias", shape: ds(5, 40), ns: ds(40), noB: true, lo: -3, hi: 3},
		// Offset rows: the two-pass variance keeps its precision.
		{op: "layer", name: "offset", shape: ds(6, 33), ns: ds(33), lo: 10, hi: 11, tol: Tolerance{Abs: 1e-4, Rel: 1e-3}},
		{op: "rms", shape: ds(7), lo: -3, hi: 3},
		{op: "rms", shape: ds(3, 5), lo: -3, hi: 3},
		{op: "rms", shape: ds(2, 3, 33), lo: -3, hi: 3},
		{op: "rms", shape: ds(2, 1, 3, 2, 1000), lo: -3, hi: 3},
		{op: "rms", name: "noweight", shape: ds(4, 9), noW: true, lo: -3, hi: 3},
		{op: "group", shape: ds(2, 6, 5), groups: 3, lo: -3, hi: 3},
		{op: "group", shape: ds(2, 4, 3, 3), groups: 2, lo: -3, hi: 3},
		{op: "group", shape: ds(1, 8, 7, 7), groups: 8, lo: -3, hi: 3},
		{op: "group", shape: ds(3, 6), groups: 2, lo: -3, hi: 3},
		{op: "group", shape: ds(2, 4, 100), groups: 2, lo: -3, hi: 3}, // tree
		{op: "group", shape: ds(2, 4, 3, 1, 5), groups: 1, lo: -3, hi: 3},
		{op: "group", name: "noaffine", shape: ds(2, 6, 5), groups: 3, noW: true, noB: true, lo: -3, hi: 3},
		{op: "batch", shape: ds(2, 3), lo: -3, hi: 3},
		{op: "batch", shape: ds(2, 3, 7), lo: -3, hi: 3},
		{op: "batch", shape: ds(2, 3, 4, 5), lo: -3, hi: 3},
		{op: "batch", shape: ds(1, 5, 3, 3, 2), lo: -3, hi: 3},
		{op: "batch", name: "cstats", shape: ds(2, 3, 7), cStats: true, lo: -3, hi: 3},
		{op: "batch", name: "noaffine", shape: ds(3, 4, 5), noW: true, noB: true, lo: -3, hi: 3},
		{op: "batch", name: "nobias", shape: ds(3, 4, 5), noB: true, cStats: true, lo: -3, hi: 3},
	}
	for _, c := range cs {
		name := c.op + "_norm/"
		if c.name != "" {
			name += c.name + "/"
		}
		name += shapeName(c.shape)
		switch c.op {
		case "layer":
			name += "/" + shapeName(c.ns)
		case "group":
			name += fmt.Sprintf("/g%d", c.groups)
		}
		tol := c.tol
		if tol == (Tolerance{}) {
			tol = normTol
		}
		Cases = append(Cases, Case{Name: name, Build: c.build, Tol: tol})
	}
}

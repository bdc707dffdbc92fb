package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// reduceTol covers f32 accumulation (in a different order from the float64
// reference) over rows of up to a few hundred values in [-1, 1].
var reduceTol = Tolerance{Abs: 1e-5, Rel: 1e-4}

// reduceCase is one reduction graph: out = op(x, dims...).
type reduceCase struct {
	name   string // optional qualifier
	op     string // sum, mean, amax, amin, argmax, argmin, var.dim, var.correction
	dt     serialization.DataType
	outDT  serialization.DataType // 0: as torch gives for dt
	shape  []int64
	dims   []int64 // nil: Null (all / flattened); for argmax one entry
	empty  bool    // dims is an empty IntList (all) instead of Null
	keep   bool
	extra  any     // var.dim: bool unbiased; var.correction: nil, int64 or float64
	dtype  bool    // sum/mean: serialize a dtype Int (6, float32) instead of Null
	lo, hi float64 // random input range
	fixed  []float64
	tol    Tolerance
}

func (c reduceCase) outShape() []int64 {
	red := make([]bool, len(c.shape))
	if c.dims == nil {
		for i := range red {
			red[i] = true
		}
	}
	for _, d := range c.dims {
		if len(c.shape) > 0 {
			red[(d+int64(len(c.shape)))%int64(len(c.shape))] = true
		}
	}
	out := []int64{}
	for i, d := range c.shape {
		if !red[i] {
			out = append(out, d)
		} else if c.keep {
			out = append(out, 1)
		}
	}
	return out
}

func (c reduceCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	outDT := c.outDT
	if outDT == 0 {
		outDT = c.dt
		switch c.op {
		case "argmax", "argmin":
			outDT = serialization.Int32
		case "mean", "var.dim", "var.correction":
			outDT = serialization.Float32
		}
	}
	x := b.Tensor(c.dt, Dims(c.shape), -1)
	y := b.Tensor(outDT, Dims(c.outShape()), -1)
	var dim int32
	switch {
	case c.empty:
		dim = b.IntList()
	case c.dims == nil:
		dim = b.Null()
	case c.op == "argmax" || c.op == "argmin":
		dim = b.Int(c.dims[0])
	default:
		dim = b.IntList(c.dims...)
	}
	keep := b.Bool(c.keep)
	switch c.op {
	case "sum", "mean":
		dt := b.Null()
		if c.dtype {
			dt = b.Int(6)
		}
		b.Op(map[string]string{"sum": "aten.sum.dim_IntList", "mean": "aten.mean.dim"}[c.op], x, dim, keep, dt, y)
	case "var.dim":
		b.Op("aten.var.dim", x, dim, b.Bool(c.extra.(bool)), keep, y)
	case "var.correction":
		corr := b.Null()
		switch v := c.extra.(type) {
		case int64:
			corr = b.Int(v)
		case float64:
			corr = b.Double(v)
		}
		b.Op("aten.var.correction", x, dim, corr, keep, y)
	default:
		b.Op("aten."+c.op+".default", x, dim, keep, y)
	}
	b.Inputs(x)
	b.Outputs(y)
	if c.fixed != nil {
		t := reference.New(c.dt, c.shape)
		copy(t.V, c.fixed)
		return []*reference.Tensor{t}
	}
	return []*reference.Tensor{RandTensor(r, c.dt, c.shape, c.lo, c.hi)}
}

func (c reduceCase) caseName() string {
	var d string
	switch {
	case c.empty:
		d = "[]"
	case c.dims == nil:
		d = "null"
	default:
		s := make([]string, len(c.dims))
		for i, v := range c.dims {
			s[i] = itoa(v)
		}
		d = strings.Join(s, ",")
	}
	name := c.op + "/"
	if c.name != "" {
		name += c.name + "/"
	}
	name += c.dt.String() + "/" + shapeName(c.shape) + "/" + d
	if c.keep {
		name += "/keep"
	}
	if c.extra != nil {
		name += fmt.Sprintf("/%v", c.extra)
	}
	return name
}

func init() {
	f32, i32 := serialization.Float32, serialization.Int32
	nan, inf := math.NaN(), math.Inf(1)
	var cs []reduceCase
	f := func(op string, shape []int64, dims []int64, keep bool) reduceCase {
		return reduceCase{op: op, dt: f32, shape: shape, dims: dims, keep: keep, lo: -1, hi: 1}
	}
	ds := func(d ...int64) []int64 { return d }
	for _, op := range []string{"sum", "mean"} {
		cs = append(cs,
			f(op, ds(7), ds(0), false),
			f(op, ds(3, 5), ds(1), true),
			f(op, ds(3, 5), ds(0), false),
			f(op, ds(2, 3, 7), ds(-1), false),
			f(op, ds(2, 3, 7), ds(0, 2), false),
			f(op, ds(2, 3, 7), ds(-2), true),
			f(op, ds(5, 7, 9), nil, false),
			f(op, ds(2, 3, 1, 4, 5), ds(1, 3), false),
			f(op, ds(2, 3, 1, 4, 5), ds(-4, -1, 0), true),
			// Rank 8, alternating: four kept and four reduced runs.
			f(op, ds(2, 3, 2, 3, 2, 3, 2, 3), ds(1, 3, 5, 7), false),
			f(op, ds(3, 2, 3, 2, 3, 2, 3, 2), ds(0, -2, 2, 4), true),
			f(op, ds(13, 33), ds(-1), false), // tree, WG 64
			f(op, ds(33, 13), ds(0), true),   // tree over a strided dim
			f(op, ds(), nil, false),          // rank 0
			f(op, ds(), ds(0), true),
			f(op, ds(), ds(-1), false),
			reduceCase{op: op, dt: f32, shape: ds(5, 33), empty: true, lo: -1, hi: 1},
		)
	}
	cs = append(cs,
		// A row past 65535 elements (tree, WG 256, 274 trips each). Values
		// in [0, 1) keep the sum well conditioned.
		reduceCase{name: "long", op: "sum", dt: f32, shape: ds(70001), dims: ds(0), lo: 0, hi: 1},
		reduceCase{name: "long", op: "mean", dt: f32, shape: ds(2, 70001), dims: ds(1), lo: 0, hi: 1},
		// More than 65535 rows, each one workgroup: a folded 2-D grid.
		reduceCase{name: "rows", op: "sum", dt: f32, shape: ds(70000, 17), dims: ds(1), lo: -1, hi: 1},
		// int32 sums wrap like int32 (torch's int64 downcast).
		reduceCase{op: "sum", dt: i32, shape: ds(13, 33), dims: ds(1), lo: -2e9, hi: 2e9},
		reduceCase{op: "sum", dt: i32, shape: ds(3, 5, 7), dims: ds(0, 2), keep: true, lo: -1000, hi: 1000},
		reduceCase{op: "sum", dt: i32, shape: ds(), lo: -1000, hi: 1000},
		reduceCase{name: "dtype", op: "sum", dt: i32, outDT: f32, dtype: true, shape: ds(4, 9), dims: ds(1), lo: -1000, hi: 1000},
		// 1-byte selves read from packed words; odd rows straddle words.
		reduceCase{op: "sum", dt: serialization.Bool, outDT: i32, shape: ds(5, 33), dims: ds(1), lo: 0, hi: 2},
		reduceCase{op: "sum", dt: serialization.Uint8, outDT: i32, shape: ds(7, 9), dims: ds(0), lo: 0, hi: 256},
		reduceCase{op: "sum", dt: serialization.Int8, outDT: i32, shape: ds(3, 13, 5), dims: nil, lo: -128, hi: 128},
		reduceCase{name: "dtype", op: "sum", dt: serialization.Int8, outDT: f32, dtype: true, shape: ds(3, 13), dims: ds(-1), lo: -128, hi: 128},
		reduceCase{name: "dtype", op: "mean", dt: serialization.Uint8, outDT: f32, dtype: true, shape: ds(3, 40), dims: ds(-1), lo: 0, hi: 256, tol: Tolerance{Abs: 1e-5, Rel: 1e-5}},
		// Empty tensors: a sum over an empty dim is 0, a mean NaN; empty
		// outputs record nothing.
		reduceCase{name: "empty", op: "sum", dt: f32, shape: ds(3, 0), dims: ds(1)},
		reduceCase{name: "empty", op: "mean", dt: f32, shape: ds(3, 0), dims: ds(1), keep: true},
		reduceCase{name: "empty", op: "sum", dt: f32, shape: ds(0, 4), dims: ds(1)},
		reduceCase{name: "dtype", op: "mean", dt: i32, outDT: f32, dtype: true, shape: ds(4, 33), dims: ds(-1), lo: -1000, hi: 1000, tol: Tolerance{Abs: 1e-5, Rel: 1e-5}},
	)
	for _, op := range []string{"amax", "amin"} {
		cs = append(cs,
			f(op, ds(7, 9), ds(1), false),
			f(op, ds(2, 3, 7), ds(0, 2), true),
			f(op, ds(3, 40), ds(-1), false),
			f(op, ds(2, 3, 1, 4, 5), ds(4, 1), false),
			f(op, ds(), ds(0), false),
			reduceCase{op: op, dt: f32, shape: ds(5, 33), empty: true, lo: -1, hi: 1},
			reduceCase{op: op, dt: i32, shape: ds(13, 33), dims: ds(0), lo: math.MinInt32, hi: math.MaxInt32 + 1},
			reduceCase{op: op, dt: i32, shape: ds(5, 7), dims: ds(1), keep: true, lo: -9, hi: 9},
		)
		// NaN wins in the serial and the tree kernel; ±Inf are ordinary.
		for _, n := range []int64{5, 40} {
			fx := make([]float64, 4*n)
			for i := range fx {
				fx[i] = float64((i*7)%11) - 5
			}
			fx[n+2] = nan        // row 1
			fx[2*n+1] = inf      // row 2
			fx[3*n+n-1] = -inf   // row 3
			fx[3*n] = math.NaN() // row 3 too
			cs = append(cs, reduceCase{name: "special", op: op, dt: f32, shape: ds(4, n), dims: ds(1), fixed: fx})
		}
	}
	for _, op := range []string{"argmax", "argmin"} {
		cs = append(cs,
			f(op, ds(7, 9), ds(1), false),
			f(op, ds(7, 9), ds(0), true),
			f(op, ds(2, 3, 7), ds(-2), false),
			f(op, ds(5, 33), nil, false),
			f(op, ds(5, 33), nil, true),
			f(op, ds(2, 3, 1, 4, 5), ds(3), false),
			f(op, ds(), nil, false),
			f(op, ds(), ds(-1), true),
			f(op, ds(3, 1000), ds(1), false),
			// Ties: the first index wins, in both kernels.
			reduceCase{name: "ties", op: op, dt: i32, shape: ds(6, 9), dims: ds(1), lo: 0, hi: 3},
			reduceCase{name: "ties", op: op, dt: i32, shape: ds(6, 300), dims: ds(1), lo: 0, hi: 3},
			reduceCase{name: "ties", op: op, dt: i32, shape: ds(300, 6), dims: ds(0), keep: true, lo: 0, hi: 3},
			reduceCase{op: op, dt: serialization.Bool, shape: ds(5, 7), dims: ds(1), lo: 0, hi: 2},
			reduceCase{op: op, dt: serialization.Uint8, shape: ds(3, 37), dims: ds(1), lo: 0, hi: 256},
			reduceCase{op: op, dt: serialization.Int8, shape: ds(9, 5), dims: ds(0), lo: -128, hi: 128},
		)
		for _, n := range []int64{5, 40} {
			fx := make([]float64, 3*n)
			for i := range fx {
				fx[i] = float64((i * 7) % 5)
			}
			fx[n+3], fx[n+n-1] = nan, nan // row 1: the first NaN
			fx[2*n+1] = inf
			fx[2*n+2] = -inf
			cs = append(cs, reduceCase{name: "special", op: op, dt: f32, shape: ds(3, n), dims: ds(1), fixed: fx})
		}
	}
	cs = append(cs,
		reduceCase{op: "var.dim", dt: f32, shape: ds(7, 9), dims: ds(1), extra: true, lo: -1, hi: 1},
		reduceCase{op: "var.dim", dt: f32, shape: ds(2, 3, 2, 3, 2, 3, 2, 3), dims: ds(1, 3, 5, 7), extra: true, lo: -1, hi: 1},
		reduceCase{op: "var.dim", dt: f32, shape: ds(3, 5, 40), dims: ds(0, 2), keep: true, extra: false, lo: -1, hi: 1},
		reduceCase{op: "var.dim", dt: f32, shape: ds(2, 3, 1, 4, 5), dims: nil, extra: true, lo: 10, hi: 12},
		// One element, unbiased: 0/0 is NaN as in torch.
		reduceCase{op: "var.dim", dt: f32, shape: ds(4, 1), dims: ds(1), extra: true, lo: -1, hi: 1},
		reduceCase{op: "var.correction", dt: f32, shape: ds(6, 13), dims: ds(-1), lo: -1, hi: 1},
		reduceCase{op: "var.correction", dt: f32, shape: ds(6, 13), dims: ds(0), keep: true, extra: int64(0), lo: -1, hi: 1},
		reduceCase{op: "var.correction", dt: f32, shape: ds(33, 6), dims: ds(0), extra: 2.5, lo: -1, hi: 1},
		reduceCase{name: "long", op: "var.correction", dt: f32, shape: ds(70001), dims: ds(0), lo: -1, hi: 1},
	)
	for _, c := range cs {
		tol := c.tol
		if tol == (Tolerance{}) {
			tol = reduceTol
		}
		Cases = append(Cases, Case{Name: c.caseName(), Build: c.build, Tol: tol})
	}
}

// softmaxCase is one aten._softmax / aten._log_softmax graph along dim.
type softmaxCase struct {
	name   string
	log    bool
	shape  []int64
	dim    int64
	lo, hi float64
	fixed  []float64
}

func (c softmaxCase) build(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
	x := b.Tensor(serialization.Float32, Dims(c.shape), -1)
	y := b.Tensor(serialization.Float32, Dims(c.shape), -1)
	op := "aten._softmax.default"
	if c.log {
		op = "aten._log_softmax.default"
	}
	b.Op(op, x, b.Int(c.dim), b.Bool(false), y)
	b.Inputs(x)
	b.Outputs(y)
	if c.fixed != nil {
		t := reference.New(serialization.Float32, c.shape)
		copy(t.V, c.fixed)
		return []*reference.Tensor{t}
	}
	return []*reference.Tensor{RandTensor(r, serialization.Float32, c.shape, c.lo, c.hi)}
}

func init() {
	ds := func(d ...int64) []int64 { return d }
	var cs []softmaxCase
	for _, log := range []bool{false, true} {
		s := func(shape []int64, dim int64) softmaxCase {
			return softmaxCase{log: log, shape: shape, dim: dim, lo: -10, hi: 10}
		}
		cs = append(cs,
			s(ds(7), 0),
			s(ds(3, 5), -1),
			s(ds(3, 5), 0),
			s(ds(2, 3, 7), 1),
			s(ds(2, 3, 7), -3),
			s(ds(2, 3, 4, 5, 6), 2),
			s(ds(2, 3, 4, 5, 6), -1),
			s(ds(), 0),
			s(ds(), -1),
			s(ds(1, 9), 0),
			s(ds(13, 33), 1),     // tree
			s(ds(300, 7, 2), 0),  // tree, strided dim
			s(ds(4, 1000), -1),   // tree
			s(ds(2, 70001), -1),  // WG 256, past 65535 elements a row
			s(ds(70000, 3), 1),   // many rows, serial
			s(ds(70000, 20), -1), // many rows, tree: folded grid
			// Large magnitudes: without the max subtraction exp overflows.
			softmaxCase{name: "big", log: log, shape: ds(5, 9), dim: 1, lo: -1000, hi: 1000},
			softmaxCase{name: "big", log: log, shape: ds(5, 40), dim: 1, lo: -1000, hi: 1000},
		)
		// NaN poisons its row; -Inf is an ordinary zero probability; an
		// all -Inf row is NaN (0/0) as in torch.
		for _, n := range []int64{6, 40} {
			fx := make([]float64, 4*n)
			for i := range fx {
				fx[i] = float64((i*5)%7) - 3
			}
			fx[2] = math.NaN()
			fx[n+1] = math.Inf(-1)
			for i := 2 * n; i < 3*n; i++ {
				fx[i] = math.Inf(-1)
			}
			fx[3*n+3] = 1e30
			cs = append(cs, softmaxCase{name: "special", log: log, shape: ds(4, n), dim: -1, fixed: fx})
		}
	}
	for _, c := range cs {
		name := "softmax/"
		if c.log {
			name = "log_softmax/"
		}
		if c.name != "" {
			name += c.name + "/"
		}
		// exp and log are evaluated in f32 by llvmpipe's approximations.
		Cases = append(Cases, Case{Name: name + shapeName(c.shape) + "/" + itoa(c.dim), Build: c.build,
			Tol: Tolerance{Abs: 1e-6, Rel: 1e-4}})
	}
}

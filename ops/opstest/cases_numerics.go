package opstest

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The numerics cases (issue 25, style habit 11): the edges where WGSL lets
// an adapter differ from PyTorch, each through the op that meets it. NaN,
// ±Inf and ±0 through every NaN-propagating helper (unary ops, fused
// chains, reductions, pooling, softmax, minimum/maximum); float32
// subnormals through the ops that must stay exact on every adapter
// (comparisons, minimum/maximum, where, abs, neg, relu and the clamps,
// amax/argmax, max_pool: SubnormalExact) and through arithmetic (the
// allowance applies where an adapter flushes); correctly rounded division
// at near-integer quotients, ties and subnormal results; trigonometry up
// to 1e4·pi and the largest float32; q8ta requantization at many awkward
// scales. Named numerics/... so that -run 'TestConformance/numerics' runs
// them all.

var (
	numInf = math.Inf(1)
	numNaN = math.NaN()
	// numSub and numSub3 are float32 subnormals; numTiny the smallest.
	numSub  = float64(float32(1e-39))
	numSub3 = float64(float32(3e-39))
	numTiny = float64(math.SmallestNonzeroFloat32)
	// numEdge are float32 values at every edge the helpers handle.
	numEdge = f32s(0, math.Copysign(0, -1), numSub, -numSub, numSub3, -numSub3, numTiny, -numTiny,
		0x1p-126, -0x1p-126, 0x1p-127, 1, -1, 0.5, -2.5, 3.25, 6, 7, -7, 1e38, -1e38,
		numInf, -numInf, numNaN)
)

// f32s rounds values to float32, so a fixed input is exactly what the
// device reads.
func f32s(vs ...float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(float32(v))
	}
	return out
}

// cycle repeats vs to n values.
func cycle(vs []float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = vs[i%len(vs)]
	}
	return out
}

func numCase(c Case, exact bool) Case {
	c.Name = "numerics/" + c.Name
	c.SubnormalExact = exact
	return c
}

func init() {
	f := serialization.Float32
	var cs []Case

	// Unary ops on the edges, through the scalar kernel (len(numEdge)
	// elements) and the vec4 one (96). The selections are exact (bits
	// copied, compared on keys) on every adapter; trigonometry of a value
	// below 2^-12 is the value itself.
	type uop struct {
		op    string
		sc    func(*serialization.Builder) []int32
		exact bool // exact on subnormals on every adapter
		tol   Tolerance
	}
	for _, o := range []uop{
		{op: "abs", exact: true, tol: binaryExact},
		{op: "neg", exact: true, tol: binaryExact},
		{op: "relu", exact: true, tol: binaryExact},
		{op: "relu6", exact: true, tol: binaryExact},
		{op: "hardtanh", sc: uDouble(-1, 1), exact: true, tol: binaryExact},
		{op: "clamp", sc: uDouble(-2.5, 3.25), exact: true, tol: binaryExact},
		// Subnormal bounds, and a lower bound above the upper.
		{op: "clamp", sc: uDouble(numSub, numSub3), exact: true, tol: binaryExact},
		{op: "clamp", sc: uDouble(2, -numSub), exact: true, tol: binaryExact},
		{op: "clamp", sc: uArgs(uNull, uDbl(-numTiny)), exact: true, tol: binaryExact},
		{op: "hardshrink", sc: uDouble(numSub), exact: true, tol: binaryExact},
		{op: "logical_not", exact: true},
		{op: "round", exact: true, tol: binaryExact},
		{op: "sin", exact: true},
		{op: "cos", exact: true},
		{op: "tan", exact: true},
		{op: "leaky_relu", sc: uDouble(0.5)},
		{op: "hardsigmoid"},
		{op: "hardswish"},
	} {
		for _, n := range []int64{int64(len(numEdge)), 96} {
			yt := f
			if o.op == "logical_not" {
				yt = uBool
			}
			c := unaryCase{name: "edges", op: "aten." + o.op + ".default", scalars: o.sc, xt: f, yt: yt,
				shape: []int64{n}, fixed: numEdge}
			cs = append(cs, numCase(Case{Name: c.caseName(), Build: c.build, Tol: o.tol}, o.exact))
		}
	}
	// pow(x, -1) is 1/x correctly rounded (div_rn).
	{
		c := unaryCase{name: "-1", op: "aten.pow.Tensor_Scalar", scalars: uArgs(uInt(-1)), xt: f, yt: f, shape: []int64{96},
			fixed: append(f32s(3, -7, 0.1, 10, 1e-30, 49, 1.0/3, 0x1p126, 0x1p127), numEdge...)}
		cs = append(cs, numCase(Case{Name: c.caseName(), Build: c.build, Tol: binaryExact}, false))
	}

	// Trigonometry: float32s next to multiples of pi/2 up to 1e4·pi (the
	// hardest to reduce: sin and cos then are tiny, tan huge), random ones
	// in ±1e4·pi, huge ones up to the largest float32, and the edges.
	{
		r := rand.New(rand.NewPCG(25, 25))
		var xs []float64
		for i := 0; i < 400; i++ {
			k := r.IntN(20001)
			b := math.Float32bits(float32(float64(k) * math.Pi / 2))
			xs = append(xs, float64(math.Float32frombits(uint32(int64(b)+int64(r.IntN(5)-2)))))
		}
		for i := 0; i < 200; i++ {
			xs = append(xs, float64(float32((r.Float64()*2-1)*1e4*math.Pi)))
		}
		xs = append(xs, f32s(1e4*math.Pi, -1e4*math.Pi, 5e4, 1e5*math.Pi, 1e6, 1e9, 1e15, 1e25, 1e35, 3.4028235e38)...)
		xs = append(xs, numEdge...)
		for _, op := range []string{"sin", "cos", "tan"} {
			for _, n := range []int64{int64(len(xs)) | 1, int64(len(xs)) &^ 3} {
				c := unaryCase{name: "reduction", op: "aten." + op + ".default", xt: f, yt: f, shape: []int64{n}, fixed: xs}
				cs = append(cs, numCase(Case{Name: c.caseName(), Build: c.build}, false))
			}
		}
	}

	// Division, correctly rounded: near-integer quotients (x = n·y
	// rounded, from either side) for div and div_scalar, and the IEEE
	// edges with subnormal operands and results, ties in the subnormal
	// range, overflow and underflow.
	{
		nr := rand.New(rand.NewPCG(25, 7))
		na, nb := make([]float64, 1001), make([]float64, 1001)
		for k := range na {
			y := float64(float32((0.01 + 3*nr.Float64()) * float64(1-2*nr.IntN(2))))
			nb[k], na[k] = y, float64(float32(float64(nr.IntN(2001)-1000)*y))
		}
		n := func(v []float64) []int64 { return []int64{int64(len(v))} }
		for _, op := range []string{"div", "true", "floor", "trunc"} {
			c := binaryCase{name: "near_integer", op: op, at: f, bt: f, ot: f, as: n(na), bs: n(nb), a: na, b: nb, tol: binaryExact}
			cs = append(cs, numCase(Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol}, false))
		}
		// x = n·0.1 rounded, divided by the Scalar 0.1 (float32(0.1)).
		sa := make([]float64, 1000)
		for k := range sa {
			sa[k] = float64(float32(float64(k-500) * float64(float32(0.1))))
		}
		c := binaryCase{name: "near_integer", op: "div", at: f, ot: f, as: n(sa), a: sa, tol: binaryExact,
			scalar: func(b *serialization.Builder) int32 { return b.Double(0.1) }}
		cs = append(cs, numCase(Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol}, false))
		c = binaryCase{name: "subnormal_scalar", op: "div", at: f, ot: f, as: []int64{int64(len(numEdge))}, a: numEdge, tol: binaryExact,
			scalar: func(b *serialization.Builder) int32 { return b.Double(numSub) }}
		cs = append(cs, numCase(Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol}, false))

		t := numTiny
		da := f32s(numSub, numSub, 1, 3e38, 1e-38, -1e-30, 0x1p-126, 3*t, 5*t, 7*t, -3*t, numSub3, 1e-45, 1, -1e30, 0x1p-149*9)
		db := f32s(3, numSub, numSub, 0.5, 1e10, 1e10, 2, 2, 2, 2, 2, numSub, 1e10, 1e-45, 1e-10, 4)
		var ea, eb []float64
		for _, x := range numEdge {
			for _, y := range numEdge {
				ea, eb = append(ea, x), append(eb, y)
			}
		}
		for _, op := range []string{"div", "floor", "trunc"} {
			for _, p := range [][2][]float64{{da, db}, {ea, eb}} {
				c := binaryCase{name: "ieee", op: op, at: f, bt: f, ot: f, as: n(p[0]), bs: n(p[1]), a: p[0], b: p[1], tol: binaryExact}
				cs = append(cs, numCase(Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol}, false))
			}
		}
		// minimum and maximum over every pair of edges: NaN wins, +0 above
		// -0, subnormals ordered.
		for _, op := range []string{"minimum", "maximum"} {
			c := binaryCase{name: "all_edges", op: op, at: f, bt: f, ot: f, as: n(ea), bs: n(eb), a: ea, b: eb, tol: binaryExact}
			cs = append(cs, numCase(Case{Name: binaryCaseName(c), Build: c.build, Tol: c.tol}, true))
		}
		// Comparisons over every pair of edges, and against subnormal and
		// signed-zero Scalars.
		for _, op := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
			c := compareCase{name: "all_edges", op: op, at: f, bt: f, as: n(ea), bs: n(eb), a: ea, b: eb}
			cs = append(cs, numCase(Case{Name: op + "/all_edges", Build: c.build}, true))
			for _, s := range []float64{numSub, -numTiny, math.Copysign(0, -1)} {
				c := compareCase{name: "subnormal", op: op, at: f, as: n(numEdge), a: numEdge,
					scalar: func(b *serialization.Builder) int32 { return b.Double(s) }}
				cs = append(cs, numCase(Case{Name: op + "_scalar/edges/" + numName(s), Build: c.build}, true))
			}
		}
		// where passes subnormals, NaN and -0 through.
		cond := cycle([]float64{1, 0, 0, 1, 1}, len(numEdge))
		w := whereCase{name: "edges", at: f, bt: f, cs: n(numEdge), as: n(numEdge), bs: n(numEdge),
			c: cond, a: numEdge, b: cycle(append([]float64{numTiny}, numEdge...), len(numEdge))}
		cs = append(cs, numCase(Case{Name: "where/edges", Build: w.build, Tol: binaryExact}, true))
	}

	// A fused chain over the edges: relu, clamp with subnormal bounds,
	// maximum and minimum with another tensor, div by it, neg; one kernel,
	// every step exact.
	for _, d := range [][]uint32{{int32Len(numEdge)}, {4, int32Len(numEdge)}} {
		dims := d
		cs = append(cs, numCase(Case{Name: "fuse/edges" + shapeName(toShape(dims)), Tol: binaryExact,
			Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
				x := b.Tensor(f, dims, -1)
				y := b.Tensor(f, dims, -1)
				outs := chain(b, x, dims, nil, u("relu"), ud("clamp", -numSub, 1e38), tt("aten.maximum.default", y, false),
					tt("aten.div.Tensor", y, false), tt("aten.minimum.default", y, true), u("neg"), ud("hardtanh", -7, 6))
				b.Inputs(x, y)
				b.Outputs(outs[len(outs)-1])
				xs, ys := reference.New(f, toShape(dims)), reference.New(f, toShape(dims))
				rev := append([]float64(nil), numEdge...)
				for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
					rev[i], rev[j] = rev[j], rev[i]
				}
				copy(xs.V, cycle(numEdge, len(xs.V)))
				copy(ys.V, cycle(append(rev[3:], rev[:3]...), len(ys.V)))
				return []*reference.Tensor{xs, ys}
			}}, false))
	}

	// Reductions: rows whose extremes are subnormals or signed zeros, and
	// a row with +Inf and NaN, in the serial (5) and tree (40) kernels.
	for _, op := range []string{"amax", "amin", "argmax", "argmin"} {
		for _, n := range []int64{5, 40} {
			rows := [][]float64{
				{-numSub, 0, math.Copysign(0, -1), -numSub3, -numTiny},
				{numSub, numSub3, numTiny, 0, math.Copysign(0, -1)},
				{-numTiny, math.Copysign(0, -1), 0, numTiny, -numSub3},
				{1, numInf, -numInf, numNaN, numSub},
			}
			fx := make([]float64, 0, 4*n)
			for ri, row := range rows {
				for i := int64(0); i < n; i++ {
					if i < int64(len(row)) {
						fx = append(fx, row[i])
					} else if ri == 1 {
						fx = append(fx, -float64(i)) // below the row's subnormals
					} else {
						fx = append(fx, float64(float32(math.Copysign(0x1p-127, float64(2*(i%2)-1)))))
					}
				}
			}
			c := reduceCase{name: "subnormal", op: op, dt: f, shape: []int64{4, n}, dims: []int64{1}, fixed: fx}
			cs = append(cs, numCase(Case{Name: c.caseName(), Build: c.build, Tol: binaryExact}, true))
		}
	}
	// max_pool over windows of subnormals and signed zeros (values and
	// indices exact), and one with +Inf, -Inf and NaN.
	{
		l := func(v ...int64) []int64 { return v }
		vals := []float64{-numSub, -numSub3, 0, math.Copysign(0, -1), numTiny, numSub, -numTiny, numSub3,
			-numSub3, -numSub, numNaN, 1, math.Copysign(0, -1), -numTiny, numInf, -numInf}
		for _, op := range []string{"max", "maxidx"} {
			c := poolCase{op: op, in: l(1, 1, 4, 4), k: l(2), s: l(2), p: l(0), d: l(1), name: "subnormal", values: vals}
			pc := c.caseOf()
			pc.Tol = binaryExact
			cs = append(cs, numCase(pc, true))
		}
	}
	// Softmax rows with +Inf (NaN: Inf - Inf), subnormals, -Inf only
	// (0/0), NaN, in the serial (5) and tree (40) kernels.
	for _, log := range []bool{false, true} {
		for _, n := range []int64{5, 40} {
			fx := make([]float64, 4*n)
			for i := range fx {
				fx[i] = float64((i*5)%9)/4 - 1
			}
			fx[1] = numInf
			fx[n] = numSub
			fx[n+1] = -numSub
			for i := int64(0); i < n; i++ {
				fx[2*n+i] = -numInf
			}
			fx[3*n+2] = numNaN
			c := softmaxCase{name: "numerics", log: log, shape: []int64{4, n}, dim: -1, fixed: fx}
			name := "softmax"
			if log {
				name = "log_softmax"
			}
			cs = append(cs, numCase(Case{Name: name + "/edges" + shapeName(c.shape), Build: c.build}, false))
		}
	}

	// q8ta_add at many awkward scales and alphas over 4096 random codes:
	// each step rounds to float32 as the reference does (no fma), so
	// codes near a .5 boundary land as the reference's.
	for _, s := range [][4]float64{
		{0.0123457, 0.0271828, 0.0314159, 1},
		{0.0173205, 0.0141421, 0.0223607, 1},
		{0.05, 0.07, 0.11, 0.7},
		{0.003, 0.0071, 0.0097, -1.3},
	} {
		c := q8AddCase([]int64{4, 1024}, []int64{4, 1024}, s[0], 3, s[1], -7, s[2], 5, s[3], "double")
		cs = append(cs, numCase(c, true))
	}

	// Dynamic int8 activations whose quotients x/scale sit on or next to
	// halves: each row spans [-1, 1] (scale 2/255) and its other values are
	// (k + 1/2)·scale rounded, so the quantizers' fast path (the adapter's
	// quotient) must defer to the exact one: through the one-row kernel
	// (M = 1) and the tiled one (M = 3). A code off by one moves the output
	// far past the tolerance.
	for _, m := range []int64{1, 3} {
		cs = append(cs, numCase(dq8caTiesCase(m), false))
	}

	// Attention with a NaN in one query row and one key: the NaN reaches
	// the outputs it touches through the row maxima (fmax) as the
	// reference's softmax gives it, and leaves the other rows alone.
	for _, aten := range []bool{true, false} {
		c := sdpaCase(aten, []int64{1, 2, 5, 8}, []int64{1, 2, 7, 8}, []int64{1, 2, 7, 8}, maskNone, nil, 0, false, false)
		inner := c.Build
		c.Build = func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			in := inner(b, r)
			in[0].V[8] = numNaN         // q: head 0, row 1
			in[1].V[7*8+3*8+2] = numNaN // k: head 1, key 3
			return in
		}
		c.Name += "/nan"
		cs = append(cs, numCase(c, false))
	}

	Cases = append(Cases, cs...)
}

// dq8caTiesCase is choose_qparams_affine → linear_dq8ca_q4gsw on an [m,
// 256] input of near-half quotients (see above).
func dq8caTiesCase(m int64) Case {
	const k, n, g = 256, 40, 64
	return Case{
		Name: "linear_dq8ca_q4gsw/ties/" + shapeName([]int64{m, k}),
		Tol:  Tolerance{Abs: quantTol(k).Abs * 4, Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			sc := float64(float32(2) / float32(255))
			xv := reference.New(f, []int64{m, k})
			for row := int64(0); row < m; row++ {
				for j := int64(0); j < k; j++ {
					q := float64(r.IntN(241)-120) + 0.5
					xv.V[row*k+j] = float64(float32(q * sc))
				}
				xv.V[row*k], xv.V[row*k+1] = -1, 1
			}
			x := b.Tensor(f, Dims(xv.Shape), -1)
			b.Inputs(x)
			scale := b.Tensor(f, []uint32{uint32(m)}, -1)
			zp := b.Tensor(serialization.Int8, []uint32{uint32(m)}, -1)
			b.Op("torchao.choose_qparams_affine.default", x, b.String("ASYMMETRIC"), b.IntList(1, k), b.Null(),
				b.Int(-128), b.Int(127), b.Null(), b.Null(), b.Null(), b.Bool(false), b.ValueList(scale, zp))
			w, ws, s, bv := dq8caWeights(b, r, n, k, g, true)
			out := b.Tensor(f, []uint32{uint32(m), n}, -1)
			b.Op("et_vk.linear_dq8ca_q4gsw.default", x, scale, zp, w, ws, s, b.Int(g), bv, out)
			b.Outputs(out, scale, zp)
			return []*reference.Tensor{xv}
		},
	}
}

// numName names a float in a case name (-0 keeps its sign).
func numName(v float64) string {
	if v == 0 && math.Signbit(v) {
		return "-0"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func int32Len(v []float64) uint32 { return uint32(len(v)) }

func toShape(d []uint32) []int64 {
	s := make([]int64, len(d))
	for i, x := range d {
		s[i] = int64(x)
	}
	return s
}

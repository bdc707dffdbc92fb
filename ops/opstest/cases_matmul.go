package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// matmulSizes are the edge sizes every matmul dimension is drawn from: 1,
// odd sizes that leave partial vec4s and row blocks, exact multiples of 4
// and 8, and sizes one past a block.
var matmulSizes = []int64{1, 3, 4, 7, 8, 33, 64, 129}

// matmulTol is the float32 tolerance of a K-long dot product of inputs in
// [-1, 1]: rounding errors of a K-term sum grow like sqrt(K).
func matmulTol(k int64) Tolerance {
	return Tolerance{Abs: 1e-5 * math.Sqrt(float64(max(k, 1))), Rel: 1e-5}
}

// weightSrc says where mat2 / weight comes from.
type weightSrc int

const (
	weightInput   weightSrc = iota // a graph input (an activation)
	weightNamed                    // a named constant bound directly (no prepack)
	weightInline                   // an inline constant bound directly
	weightPrepack                  // a named constant copied by et_vk.prepack into its own tensor
)

func (o weightSrc) String() string {
	return [...]string{"input", "named", "inline", "prepack"}[o]
}

// graphInput declares a graph input shaped and typed like xv and returns
// its id and a list of the graph's inputs' values that starts with xv.
func graphInput(b *serialization.Builder, xv *reference.Tensor) (int32, []*reference.Tensor) {
	x := b.Tensor(xv.DType, Dims(xv.Shape), -1)
	b.Inputs(x)
	return x, []*reference.Tensor{xv}
}

// addWeight adds t to b as o says and returns the value id the op reads;
// inputs collects graph inputs.
func addWeight(b *serialization.Builder, t *reference.Tensor, o weightSrc, inputs *[]*reference.Tensor) int32 {
	switch o {
	case weightNamed:
		id, _ := b.NamedConst(t.DType, Dims(t.Shape), t.Encode())
		return id
	case weightInline:
		return b.InlineConst(t.DType, Dims(t.Shape), t.Encode())
	case weightPrepack:
		c, _ := b.NamedConst(t.DType, Dims(t.Shape), t.Encode())
		p := b.Tensor(t.DType, Dims(t.Shape), -1)
		b.Op("et_vk.prepack.default", c, p)
		return p
	}
	id := b.Tensor(t.DType, Dims(t.Shape), -1)
	b.Inputs(id)
	*inputs = append(*inputs, t)
	return id
}

// linearPathName names the kernel a linear of m rows uses (ops/matmul.go
// useGEMV: GEMV for one row, and for at most 16 rows with K%4 == 0 and
// N%4 != 0).
func linearPathName(m, k, n int64) string {
	if m == 1 || (m <= 16 && k%4 == 0 && n%4 != 0) {
		return "gemv"
	}
	return matmulPathName(k, n)
}

// numel is the element count of shape.
func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

func matmulPathName(k, n int64) string {
	if k > 0 && k%4 == 0 && n%4 == 0 {
		return "vec4"
	}
	return "scalar"
}

func mmCase(m, k, n int64, mat2 weightSrc) Case {
	return Case{
		Name: fmt.Sprintf("mm/M%d_K%d_N%d/%s/%s", m, k, n, mat2, matmulPathName(k, n)),
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, []int64{m, k}, -1, 1)
			x, inputs := graphInput(b, xv)
			y := addWeight(b, RandTensor(r, f, []int64{k, n}, -1, 1), mat2, &inputs)
			out := b.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
			b.Op("aten.mm.default", x, y, out)
			b.Outputs(out)
			return inputs
		},
	}
}

func linearCase(in []int64, n int64, bias bool, weight weightSrc) Case {
	k := in[len(in)-1]
	name := fmt.Sprintf("linear/%s_N%d/%s/%s/%s", shapeName(in), n, weight, map[bool]string{true: "bias", false: "nobias"}[bias], linearPathName(numel(in[:len(in)-1]), k, n))
	return Case{
		Name: name,
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, in, -1, 1)
			x, inputs := graphInput(b, xv)
			w := addWeight(b, RandTensor(r, f, []int64{n, k}, -1, 1), weight, &inputs)
			bv := b.Null()
			if bias {
				// Bias comes the way the exporter hands it over: a constant
				// bound directly, inline or named like the weight.
				o := weightNamed
				if weight == weightInline {
					o = weightInline
				}
				bv = addWeight(b, RandTensor(r, f, []int64{n}, -1, 1), o, &inputs)
			}
			outShape := append(append([]int64(nil), in[:len(in)-1]...), n)
			out := b.Tensor(f, Dims(outShape), -1)
			b.Op("aten.linear.default", x, w, bv, out)
			b.Outputs(out)
			return inputs
		},
	}
}

// mlpCase chains linear → linear through a shared (mem_obj_id) hidden
// tensor. The second layer's inputs are sums of k1 terms, so its tolerance
// is scaled by both reductions.
// mlpLayers starts a two-linear MLP block: the input x [m, k1], the first
// linear's weight [k2, k1] and bias [k2] (named constants) and the second
// one's weight [n, k2] from w2Src. ins are the values of the graph's
// inputs, x's first.
func mlpLayers(b *serialization.Builder, r *rand.Rand, m, k1, k2, n int64, w2Src weightSrc) (x, w1, b1, w2 int32, ins []*reference.Tensor) {
	f := serialization.Float32
	x, ins = graphInput(b, RandTensor(r, f, []int64{m, k1}, -1, 1))
	w1 = addWeight(b, RandTensor(r, f, []int64{k2, k1}, -1, 1), weightNamed, &ins)
	b1 = addWeight(b, RandTensor(r, f, []int64{k2}, -1, 1), weightNamed, &ins)
	w2 = addWeight(b, RandTensor(r, f, []int64{n, k2}, -1, 1), w2Src, &ins)
	return x, w1, b1, w2, ins
}

func mlpCase(m int64, dims [3]int64) Case {
	k1, k2, n := dims[0], dims[1], dims[2]
	return Case{
		Name: fmt.Sprintf("linear/mlp/M%d_%d-%d-%d", m, k1, k2, n),
		Tol:  Tolerance{Abs: 1e-5 * math.Sqrt(float64(k1*k2)), Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			x, w1, b1, w2, ins := mlpLayers(b, r, m, k1, k2, n, weightPrepack)
			h := b.Tensor(f, []uint32{uint32(m), uint32(k2)}, 0)
			y := b.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
			b.Op("aten.linear.default", x, w1, b1, h)
			b.Op("aten.linear.default", h, w2, b.Null(), y)
			b.Outputs(y)
			return ins
		},
	}
}

func init() {
	s := matmulSizes
	vec := []int64{4, 8, 64}
	for i, m := range s {
		// Rotations cover every size in every position; the first set
		// never has K and N both multiples of 4 (scalar kernel), the
		// second always does (vec4 kernel).
		Cases = append(Cases,
			mmCase(m, s[(i+2)%len(s)], s[(i+5)%len(s)], weightSrc(i%2)),
			mmCase(m, vec[i%3], vec[(i+1)%3], weightSrc((i+1)%2)),
			linearCase([]int64{m, s[(i+3)%len(s)]}, s[(i+6)%len(s)], i%2 == 0, weightSrc(i%4)),
			linearCase([]int64{m, vec[(i+1)%3]}, vec[(i+2)%3], i%2 == 1, weightSrc((i+1)%4)),
		)
	}
	Cases = append(Cases,
		mmCase(1, 1, 1, weightInput),
		mmCase(129, 129, 129, weightNamed),
		mmCase(129, 64, 64, weightInput),
		mmCase(33, 128, 36, weightNamed),
		// 1-D and 3-D linear inputs.
		linearCase([]int64{7}, 3, true, weightNamed),
		linearCase([]int64{64}, 8, false, weightPrepack),
		linearCase([]int64{33}, 129, false, weightInput),
		linearCase([]int64{2, 3, 33}, 7, true, weightPrepack),
		linearCase([]int64{2, 3, 64}, 64, true, weightNamed),
		linearCase([]int64{3, 1, 8}, 4, false, weightInline),
		linearCase([]int64{129, 129}, 129, true, weightNamed),
		linearCase([]int64{64, 64}, 64, true, weightPrepack),
		// K past llvmpipe's 65535 loop trips per invocation, which would
		// silently truncate one dispatch: split into accumulating chunks
		// (vec4: 300000/4 = 75000 trips; scalar: 70001 trips).
		heavy(mmCase(2, 300000, 4, weightNamed)),
		heavy(mmCase(3, 70001, 3, weightNamed)),
		linearCase([]int64{2, 270000}, 4, true, weightNamed),
		linearCase([]int64{70001}, 5, true, weightPrepack),
		// One-row linears big enough for the GEMV kernel (N·K >= 4M):
		// K split into chunks (600000/4 = 150000 vec4s > 8 lanes × 16384
		// trips), and more than 65535·32 columns (a folded 2-D grid).
		linearCase([]int64{600000}, 14, true, weightNamed),
		heavy(linearCase([]int64{1, 4}, 2100000, false, weightInput)),
		// Below the cap but more than one chunk.
		linearCase([]int64{9, 40000}, 8, false, weightNamed),
		// Around the GEMV kernel's choice (one row, or at most 16 rows
		// with K%4 == 0 and N%4 != 0) and the edges of its tiles: M from
		// 1 to 17, odd K (scalar loads) and K%4 == 0 (vec4), N not a
		// multiple of the 4 or 8 columns of an invocation, with and
		// without bias, 3-D inputs. TestLinearGEMVRowBlocks runs the
		// others with the GEMV kernel forced.
		linearCase([]int64{2, 13}, 7, true, weightNamed),
		linearCase([]int64{3, 20}, 10, false, weightInline),
		linearCase([]int64{5, 36}, 17, true, weightInput),
		linearCase([]int64{11, 9}, 12, false, weightPrepack),
		linearCase([]int64{16, 36}, 9, true, weightNamed),
		linearCase([]int64{17, 36}, 9, true, weightNamed),
		linearCase([]int64{2, 6, 12}, 5, true, weightPrepack),
		linearCase([]int64{1, 1, 3}, 33, false, weightNamed),
		// MLP-ish chains, one per kernel family, then mixed.
		mlpCase(5, [3]int64{64, 128, 36}),
		mlpCase(3, [3]int64{33, 64, 7}),
		mlpCase(1, [3]int64{8, 33, 4}),
	)
}

func bmmCase(bs, m, k, n int64, mat2 weightSrc) Case {
	return Case{
		Name: fmt.Sprintf("bmm/B%d_M%d_K%d_N%d/%s/%s", bs, m, k, n, mat2, matmulPathName(k, n)),
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, []int64{bs, m, k}, -1, 1)
			x, inputs := graphInput(b, xv)
			y := addWeight(b, RandTensor(r, f, []int64{bs, k, n}, -1, 1), mat2, &inputs)
			out := b.Tensor(f, Dims([]int64{bs, m, n}), -1)
			b.Op("aten.bmm.default", x, y, out)
			b.Outputs(out)
			return inputs
		},
	}
}

// addmmCase: bias shaped bias (broadcast to M×N), beta and alpha. With
// nanBias the bias is all NaN, which beta = 0 must ignore.
func addmmCase(bias []int64, m, k, n int64, beta, alpha float64, nanBias bool) Case {
	return Case{
		Name: fmt.Sprintf("addmm/bias%s_M%d_K%d_N%d/beta%g_alpha%g/%s", shapeName(bias), m, k, n, beta, alpha, matmulPathName(k, n)),
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, []int64{m, k}, -1, 1)
			x, inputs := graphInput(b, xv)
			bv := RandTensor(r, f, bias, -1, 1)
			if nanBias {
				for i := range bv.V {
					bv.V[i] = math.NaN()
				}
			}
			bid := addWeight(b, bv, weightNamed, &inputs)
			y := addWeight(b, RandTensor(r, f, []int64{k, n}, -1, 1), weightPrepack, &inputs)
			out := b.Tensor(f, Dims([]int64{m, n}), -1)
			b.Op("aten.addmm.default", bid, x, y, b.Double(beta), b.Double(alpha), out)
			b.Outputs(out)
			return inputs
		},
	}
}

// matmulShape is torch.matmul's result shape for inputs shaped x and y.
func matmulShape(x, y []int64) []int64 {
	xb, yb := x[:max(len(x)-2, 0)], y[:max(len(y)-2, 0)]
	rank := max(len(xb), len(yb))
	out := make([]int64, rank)
	for i := range out {
		a, c := int64(1), int64(1)
		if j := i - (rank - len(xb)); j >= 0 {
			a = xb[j]
		}
		if j := i - (rank - len(yb)); j >= 0 {
			c = yb[j]
		}
		out[i] = max(a, c)
	}
	if len(x) > 1 {
		out = append(out, x[len(x)-2])
	}
	if len(y) > 1 {
		out = append(out, y[len(y)-1])
	}
	return out
}

func matmulCase(x, y []int64, other weightSrc) Case {
	k, n := x[len(x)-1], int64(1)
	if len(y) > 1 {
		n = y[len(y)-1]
	}
	return Case{
		Name: fmt.Sprintf("matmul/%s@%s/%s/%s", shapeName(x), shapeName(y), other, matmulPathName(k, n)),
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			xv := RandTensor(r, f, x, -1, 1)
			xi, inputs := graphInput(b, xv)
			yi := addWeight(b, RandTensor(r, f, y, -1, 1), other, &inputs)
			out := b.Tensor(f, Dims(matmulShape(x, y)), -1)
			b.Op("aten.matmul.default", xi, yi, out)
			b.Outputs(out)
			return inputs
		},
	}
}

func init() {
	Cases = append(Cases,
		bmmCase(1, 1, 1, 1, weightInput),
		bmmCase(3, 7, 13, 5, weightInput),
		bmmCase(2, 33, 64, 8, weightNamed),
		bmmCase(5, 4, 8, 4, weightPrepack),
		bmmCase(4, 129, 3, 33, weightInput),
		// More batches than workgroups per grid dimension: two z ranges.
		heavy(bmmCase(70000, 1, 4, 4, weightInput)),
		// K past the loop budget, batched.
		heavy(bmmCase(2, 2, 70001, 3, weightInput)),

		addmmCase([]int64{5}, 7, 13, 5, 1, 1, false),
		addmmCase([]int64{7, 5}, 7, 13, 5, 0.5, 2, false),
		addmmCase([]int64{7, 1}, 7, 13, 5, -1, 0.25, false),
		addmmCase([]int64{1, 5}, 7, 13, 5, 2, -1, false),
		addmmCase([]int64{}, 7, 13, 5, 1.5, 1, false),
		addmmCase([]int64{1}, 33, 64, 8, 1, 1, false),
		addmmCase([]int64{8}, 33, 64, 8, 0.5, 3, false),
		addmmCase([]int64{33, 8}, 33, 64, 8, 1, 1, false),
		addmmCase([]int64{33, 1}, 33, 64, 8, 2, 0.5, false),
		addmmCase([]int64{8}, 33, 64, 8, 0, 1, true),
		addmmCase([]int64{5}, 7, 13, 5, 0, 2, true),
		heavy(addmmCase([]int64{4}, 3, 70000, 4, 1, 0.5, false)),

		matmulCase([]int64{13}, []int64{13}, weightInput),
		matmulCase([]int64{64}, []int64{64}, weightNamed),
		matmulCase([]int64{7}, []int64{7, 5}, weightInput),
		matmulCase([]int64{8}, []int64{8, 12}, weightNamed),
		matmulCase([]int64{5, 7}, []int64{7}, weightInput),
		matmulCase([]int64{7, 13}, []int64{13, 5}, weightInput),
		matmulCase([]int64{3, 7, 13}, []int64{13, 5}, weightNamed),
		matmulCase([]int64{2, 3, 8, 16}, []int64{16, 8}, weightPrepack),
		matmulCase([]int64{13}, []int64{3, 13, 5}, weightInput),
		matmulCase([]int64{3, 5, 13}, []int64{13}, weightInput),
		matmulCase([]int64{2, 1, 7, 13}, []int64{3, 13, 5}, weightInput),
		matmulCase([]int64{2, 1, 3, 4, 8}, []int64{1, 2, 1, 8, 4}, weightInput),
		matmulCase([]int64{3, 1, 33, 64}, []int64{1, 2, 64, 8}, weightNamed),
		matmulCase([]int64{1, 1, 1}, []int64{1, 1, 1}, weightInput),
		// K = 0: empty sums, the output is all zeros (or beta·bias).
		matmulCase([]int64{2, 3, 0}, []int64{0, 4}, weightInput),
		bmmCase(2, 3, 0, 5, weightInput),
		addmmCase([]int64{5}, 3, 0, 5, 0.5, 1, false),
	)
}

// edgeMatmulCase: mm and linear on inputs sprinkled with NaN, ±Inf, ±0,
// big and tiny values. Big values stay small enough that no product
// overflows float32 (the float64 reference would not overflow where the
// device does); sums of +Inf and -Inf are NaN in any order, so the special
// values come out the same on both.
func edgeMatmulCase(op string, m, k, n int64) Case {
	return Case{
		Name: fmt.Sprintf("%s/edge/M%d_K%d_N%d/%s", op, m, k, n, matmulPathName(k, n)),
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e18, -1e-30}
			sprinkle := func(t *reference.Tensor) *reference.Tensor {
				for i := range t.V {
					if r.IntN(5) == 0 {
						t.V[i] = reference.Round(f, special[r.IntN(len(special))])
					}
				}
				return t
			}
			xv := sprinkle(RandTensor(r, f, []int64{m, k}, -1, 1))
			x, inputs := graphInput(b, xv)
			out := b.Tensor(f, Dims([]int64{m, n}), -1)
			if op == "mm" {
				y := addWeight(b, sprinkle(RandTensor(r, f, []int64{k, n}, -1, 1)), weightInput, &inputs)
				b.Op("aten.mm.default", x, y, out)
			} else {
				w := addWeight(b, sprinkle(RandTensor(r, f, []int64{n, k}, -1, 1)), weightInput, &inputs)
				bias := addWeight(b, sprinkle(RandTensor(r, f, []int64{n}, -1, 1)), weightInput, &inputs)
				b.Op("aten.linear.default", x, w, bias, out)
			}
			b.Outputs(out)
			return inputs
		},
	}
}

func init() {
	Cases = append(Cases,
		edgeMatmulCase("mm", 7, 5, 9),
		edgeMatmulCase("mm", 9, 8, 8),
		edgeMatmulCase("linear", 7, 5, 9),
		edgeMatmulCase("linear", 9, 8, 8),
	)
}

// epilogueForm says how an activation follows its matmul.
type epilogueForm int

const (
	epiFused  epilogueForm = iota // the activation is the intermediate's sole reader: fused
	epiOutput                     // the intermediate is also a graph output: not fused
	epiShared                     // the intermediate has a second reader (neg): not fused
)

func (f epilogueForm) String() string { return [...]string{"fused", "output", "shared"}[f] }

// addAct records activation act (relu, relu6, sigmoid, clamp..., hardtanh,
// gelu, gelu_tanh) of x into a new tensor shaped dims and returns it.
func addAct(b *serialization.Builder, act string, x int32, dims []int64) int32 {
	f := serialization.Float32
	y := b.Tensor(f, Dims(dims), -1)
	switch act {
	case "relu", "relu6", "sigmoid":
		b.Op("aten."+act+".default", x, y)
	case "clamp":
		b.Op("aten.clamp.default", x, b.Double(-0.5), b.Double(2), y)
	case "clamp_min":
		b.Op("aten.clamp.default", x, b.Int(0), b.Null(), y)
	case "clamp_max":
		b.Op("aten.clamp.default", x, b.Null(), b.Double(0.25), y)
	case "clamp_inverted": // min > max: everything becomes max, as torch
		b.Op("aten.clamp.default", x, b.Double(1), b.Double(-1), y)
	case "hardtanh":
		b.Op("aten.hardtanh.default", x, b.Double(-1), b.Double(1), y)
	case "gelu":
		b.Op("aten.gelu.default", x, b.String("none"), y)
	case "gelu_tanh":
		b.Op("aten.gelu.default", x, b.String("tanh"), y)
	default:
		panic("unknown activation " + act)
	}
	return y
}

// epilogueCase runs op (linear, mm, addmm, bmm or matmul) on [m, k] ·
// [k, n] operands (bmm: two batches) followed by activation act, in the
// given form. The weight comes from w; with edge set, the input is
// sprinkled with NaN, ±Inf and ±0.
func epilogueCase(op string, m, k, n int64, w weightSrc, act string, form epilogueForm, edge bool) Case {
	path := matmulPathName(k, n)
	if op == "linear" {
		path = linearPathName(m, k, n)
	}
	name := fmt.Sprintf("%s/epilogue/%s/%s/M%d_K%d_N%d/%s/%s", op, act, form, m, k, n, w, path)
	if edge {
		name += "/edge"
	}
	return Case{
		Name: name,
		Tol:  matmulTol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			lead := []int64{m}
			if op == "bmm" || op == "matmul" {
				lead = []int64{2, m}
			}
			xs := append(append([]int64(nil), lead...), k)
			outDims := append(append([]int64(nil), lead...), n)
			xv := RandTensor(r, f, xs, -1, 1)
			if edge {
				special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
				for i := range xv.V {
					if r.IntN(7) == 0 {
						xv.V[i] = special[r.IntN(len(special))]
					}
				}
			}
			x := b.Tensor(f, Dims(xs), -1)
			b.Inputs(x)
			inputs := []*reference.Tensor{xv}
			h := b.Tensor(f, Dims(outDims), -1)
			switch op {
			case "linear":
				wt := addWeight(b, RandTensor(r, f, []int64{n, k}, -1, 1), w, &inputs)
				bias := addWeight(b, RandTensor(r, f, []int64{n}, -1, 1), weightNamed, &inputs)
				b.Op("aten.linear.default", x, wt, bias, h)
			case "mm":
				y := addWeight(b, RandTensor(r, f, []int64{k, n}, -1, 1), w, &inputs)
				b.Op("aten.mm.default", x, y, h)
			case "addmm":
				y := addWeight(b, RandTensor(r, f, []int64{k, n}, -1, 1), w, &inputs)
				bias := addWeight(b, RandTensor(r, f, []int64{n}, -1, 1), weightNamed, &inputs)
				b.Op("aten.addmm.default", bias, x, y, b.Double(0.5), b.Double(2), h)
			case "bmm":
				y := addWeight(b, RandTensor(r, f, []int64{2, k, n}, -1, 1), w, &inputs)
				b.Op("aten.bmm.default", x, y, h)
			case "matmul":
				y := addWeight(b, RandTensor(r, f, []int64{k, n}, -1, 1), w, &inputs)
				b.Op("aten.matmul.default", x, y, h)
			}
			out := addAct(b, act, h, outDims)
			switch form {
			case epiFused:
				b.Outputs(out)
			case epiOutput:
				b.Outputs(h, out)
			case epiShared:
				neg := b.Tensor(f, Dims(outDims), -1)
				b.Op("aten.neg.default", h, neg)
				b.Outputs(out, neg)
			}
			return inputs
		},
	}
}

// mlpActCase is linear → act → linear with the hidden tensors in shared
// memory objects, the shape of a real MLP block.
func mlpActCase(m, k1, k2, n int64, act string) Case {
	return Case{
		Name: fmt.Sprintf("linear/epilogue/mlp/%s/M%d_%d-%d-%d", act, m, k1, k2, n),
		Tol:  Tolerance{Abs: 1e-5 * math.Sqrt(float64(k1*k2)), Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			x, w1, b1, w2, ins := mlpLayers(b, r, m, k1, k2, n, weightInline)
			h := b.Tensor(f, []uint32{uint32(m), uint32(k2)}, 0)
			a := b.Tensor(f, []uint32{uint32(m), uint32(k2)}, 1)
			y := b.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
			b.Op("aten.linear.default", x, w1, b1, h)
			switch act {
			case "gelu":
				b.Op("aten.gelu.default", h, b.String("none"), a)
			default:
				b.Op("aten."+act+".default", h, a)
			}
			b.Op("aten.linear.default", a, w2, b.Null(), y)
			b.Outputs(y)
			return ins
		},
	}
}

func init() {
	acts := []string{"relu", "relu6", "sigmoid", "clamp", "clamp_min", "clamp_max", "clamp_inverted", "hardtanh", "gelu", "gelu_tanh"}
	for i, act := range acts {
		// Each activation fused on a vec4 and a scalar shape, with the
		// weight from each source in turn.
		Cases = append(Cases,
			epilogueCase("linear", 7, 64, 36, weightSrc(i%4), act, epiFused, false),
			epilogueCase("linear", 5, 13, 9, weightSrc((i+1)%4), act, epiFused, false),
		)
	}
	Cases = append(Cases,
		// Not fused: the intermediate is a graph output, or has two readers.
		epilogueCase("linear", 7, 64, 36, weightNamed, "relu", epiOutput, false),
		epilogueCase("linear", 5, 13, 9, weightInline, "clamp", epiOutput, false),
		epilogueCase("linear", 7, 64, 36, weightInline, "gelu", epiShared, false),
		epilogueCase("mm", 9, 8, 12, weightInput, "relu", epiShared, false),
		// Other producers.
		epilogueCase("mm", 33, 64, 8, weightNamed, "relu", epiFused, false),
		epilogueCase("mm", 7, 13, 5, weightInput, "hardtanh", epiFused, false),
		epilogueCase("addmm", 33, 64, 8, weightPrepack, "clamp", epiFused, false),
		epilogueCase("addmm", 7, 13, 5, weightNamed, "sigmoid", epiFused, false),
		epilogueCase("bmm", 7, 16, 8, weightInput, "relu", epiFused, false),
		epilogueCase("matmul", 3, 13, 5, weightNamed, "gelu", epiFused, false),
		// One-row (decode) linear.
		epilogueCase("linear", 1, 64, 129, weightNamed, "relu6", epiFused, false),
		epilogueCase("linear", 1, 64, 128, weightInline, "gelu_tanh", epiFused, false),
		epilogueCase("linear", 1, 4096, 2049, weightNamed, "clamp", epiFused, false), // GEMV kernel
		// GEMV kernel with 12 and 16 rows.
		epilogueCase("linear", 12, 20, 6, weightNamed, "gelu", epiFused, false),
		epilogueCase("linear", 16, 20, 10, weightInline, "sigmoid", epiFused, false),
		// NaN and ±Inf through the epilogue.
		epilogueCase("linear", 9, 8, 8, weightNamed, "relu", epiFused, true),
		epilogueCase("linear", 9, 8, 8, weightNamed, "clamp", epiFused, true),
		epilogueCase("mm", 7, 5, 9, weightInput, "hardtanh", epiFused, true),
		epilogueCase("linear", 9, 8, 8, weightNamed, "sigmoid", epiFused, true),
		// K split into accumulating chunks: the epilogue applies only to the
		// final sums (vec4: 270000/4 = 67500 trips; scalar 70001 trips).
		epilogueCase("linear", 2, 270000, 4, weightNamed, "clamp", epiFused, false),
		heavy(epilogueCase("mm", 3, 70001, 3, weightNamed, "relu", epiFused, false)),
		mlpActCase(5, 64, 128, 36, "relu"),
		mlpActCase(3, 33, 64, 7, "gelu"),
	)
}

// A dynamic MLP block: every seed feeds another row count (0 to 8) to one
// loaded graph (TestDynamicReexecute), so the fused epilogue and the kernel
// choice are redone on each re-recording; 0 rows records no matmul and
// leaves the activation unfused on an empty tensor.
func init() {
	f := serialization.Float32
	Cases = append(Cases, Case{
		Name: "dynamic/linear_relu_linear",
		Tol:  Tolerance{Abs: 1e-5 * math.Sqrt(64*32), Rel: 1e-5},
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			var inputs []*reference.Tensor
			x := b.Tensor(f, []uint32{8, 64}, -1)
			b.Inputs(x)
			// Inline weights: TestDynamicReexecute passes no named data.
			w1 := addWeight(b, RandTensor(rand.New(rand.NewPCG(7, 7)), f, []int64{32, 64}, -1, 1), weightInline, &inputs)
			b1 := addWeight(b, RandTensor(rand.New(rand.NewPCG(7, 8)), f, []int64{32}, -1, 1), weightInline, &inputs)
			w2 := addWeight(b, RandTensor(rand.New(rand.NewPCG(7, 9)), f, []int64{12, 32}, -1, 1), weightInline, &inputs)
			h := b.Tensor(f, []uint32{8, 32}, 0)
			a := b.Tensor(f, []uint32{8, 32}, 1)
			y := b.Tensor(f, []uint32{8, 12}, -1)
			b.Op("aten.linear.default", x, w1, b1, h)
			b.Op("aten.relu.default", h, a)
			b.Op("aten.linear.default", a, w2, b.Null(), y)
			b.Outputs(y)
			return []*reference.Tensor{RandTensor(r, f, []int64{r.Int64N(9), 64}, -1, 1)}
		},
	})
}

// residualCase is a linear [m, k]·[n, k]ᵀ (with bias) followed by an
// optional activation act, then an elementwise op res (add, add_swapped:
// the other operand first, mul, add_alpha2) with a second tensor of the
// output's shape: a residual connection or SwiGLU's gate times up. The
// other tensor comes from an op before the linear (neg of an input), or,
// with late, from one after it (a permute_copy), which the kernel cannot
// read yet; with
// bcast it is a [n] row that broadcasts; res "none" leaves the activation
// alone (the second input is then unused). Fused exactly when the form is
// "fused" in the name.
func residualCase(m, k, n int64, act, res string, late, bcast bool) Case {
	return residualCaseWith(floatLinear, m, k, n, act, res, late, bcast)
}

// residualLinear makes the linear of a residual or epilogue case: the op's
// name for the case's name, the kernel path it takes, the tolerance, and
// build, which adds the weights (to inputs, when they are graph inputs)
// and the op from x [m, k] to a new [m, n] tensor h.
type residualLinear struct {
	name  string
	path  func(m, k, n int64) string
	tol   func(k int64) Tolerance
	build func(b *serialization.Builder, r *rand.Rand, x int32, m, k, n int64, inputs *[]*reference.Tensor) (h int32)
}

// floatLinear is aten.linear with a named weight and an inline bias.
var floatLinear = residualLinear{
	name: "linear",
	path: linearPathName,
	tol:  matmulTol,
	build: func(b *serialization.Builder, r *rand.Rand, x int32, m, k, n int64, inputs *[]*reference.Tensor) int32 {
		f := serialization.Float32
		wt := addWeight(b, RandTensor(r, f, []int64{n, k}, -1, 1), weightNamed, inputs)
		bias := addWeight(b, RandTensor(r, f, []int64{n}, -1, 1), weightInline, inputs)
		h := b.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
		b.Op("aten.linear.default", x, wt, bias, h)
		return h
	},
}

// residualCaseWith is residualCase with the linear lin.
func residualCaseWith(lin residualLinear, m, k, n int64, act, res string, late, bcast bool) Case {
	form := "fused"
	switch {
	case late:
		form = "unfused_late"
	case bcast:
		form = "unfused_broadcast"
	case res == "add_alpha2":
		form = "unfused_alpha"
	}
	name := fmt.Sprintf("%s/epilogue/residual_%s_%s/%s/M%d_K%d_N%d/%s", lin.name, act, res, form, m, k, n, lin.path(m, k, n))
	return Case{
		Name: name,
		Tol:  lin.tol(k),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			outDims := []int64{m, n}
			odims := outDims
			if bcast {
				odims = []int64{n}
			}
			xv, yv := RandTensor(r, f, []int64{m, k}, -1, 1), RandTensor(r, f, odims, -1, 1)
			x, y := b.Tensor(f, Dims(xv.Shape), -1), b.Tensor(f, Dims(odims), -1)
			b.Inputs(x, y)
			inputs := []*reference.Tensor{xv, yv}
			other := b.Tensor(f, Dims(odims), -1)
			if !late {
				b.Op("aten.neg.default", y, other)
			}
			h := lin.build(b, r, x, m, k, n, &inputs)
			switch act {
			case "none":
			case "silu": // x·sigmoid(x), as an export writes SiLU
				sg := addAct(b, "sigmoid", h, outDims)
				g := b.Tensor(f, Dims(outDims), -1)
				b.Op("aten.mul.Tensor", h, sg, g)
				h = g
			default:
				h = addAct(b, act, h, outDims)
			}
			if late {
				// A copy that elementwise fusion leaves alone, so the add
				// keeps a dispatch of its own.
				b.Op("aten.permute_copy.default", y, b.IntList(0, 1), other)
			}
			if res == "none" { // the activation alone
				b.Outputs(h)
				return inputs
			}
			out := b.Tensor(f, Dims(outDims), -1)
			switch res {
			case "add":
				b.Op("aten.add.Tensor", h, other, b.Int(1), out)
			case "add_swapped":
				b.Op("aten.add.Tensor", other, h, b.Double(1), out)
			case "add_alpha2":
				b.Op("aten.add.Tensor", h, other, b.Int(2), out)
			case "mul":
				b.Op("aten.mul.Tensor", other, h, out)
			}
			b.Outputs(out)
			return inputs
		},
	}
}

func init() {
	Cases = append(Cases,
		// The residual add of a decode step (GEMV kernel) and of a prefill
		// (tiled vec4 and scalar kernels), each operand order.
		residualCase(1, 64, 36, "none", "add", false, false),
		residualCase(1, 13, 9, "none", "add_swapped", false, false),
		residualCase(7, 64, 36, "none", "add_swapped", false, false),
		residualCase(5, 13, 9, "none", "add", false, false),
		// SwiGLU's up projection times the gated one; an activation then
		// the add.
		residualCase(1, 64, 36, "none", "mul", false, false),
		residualCase(7, 64, 36, "none", "mul", false, false),
		residualCase(3, 20, 10, "gelu", "add", false, false),
		residualCase(1, 64, 128, "sigmoid", "mul", false, false),
		// SiLU (sigmoid, then the product with its input) alone and then
		// a residual add, on the GEMV, vec4 and scalar kernels.
		residualCase(1, 64, 36, "silu", "add", false, false),
		residualCase(7, 64, 36, "silu", "mul", false, false),
		residualCase(5, 13, 9, "silu", "add_swapped", false, false),
		residualCase(1, 64, 36, "silu", "mul", true, false), // SwiGLU gate: its up comes later
		// Not fused: the other operand is made after the linear, it
		// broadcasts, or alpha is not 1.
		residualCase(1, 64, 36, "none", "add", true, false),
		residualCase(7, 64, 36, "none", "mul", true, false),
		residualCase(7, 64, 36, "none", "add", false, true),
		residualCase(1, 64, 36, "none", "add_alpha2", false, false),
	)
}

package opstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// fusableUnary is every unary op a fused chain absorbs (ops/fuse.go
// fuseUnary), with the scalar args that reach each formula's branches:
// bounds with Null (unbounded) and lo > hi, a negative slope, lambd.
var fusableUnary = []struct {
	name string
	op   op
}{
	{"abs", u("abs")},
	{"neg", u("neg")},
	{"exp", u("exp")},
	{"sqrt", u("sqrt")},
	{"rsqrt", u("rsqrt")},
	{"tanh", u("tanh")},
	{"sigmoid", u("sigmoid")},
	{"log10", u("log10")},
	{"relu", u("relu")},
	{"relu6", u("relu6")},
	{"round", u("round")},
	{"hardswish", u("hardswish")},
	{"hardsigmoid", u("hardsigmoid")},
	{"gelu/none", gelu("none")},
	{"gelu/tanh", gelu("tanh")},
	{"hardtanh", ud("hardtanh", -1, 1)},
	{"hardtanh/0_6", ud("hardtanh", 0, 6)},
	{"clamp", ud("clamp", -2.5, 3.25)},
	{"clamp/min_only", ud("clamp", -0.5, math.NaN())},
	{"clamp/max_only", ud("clamp", math.NaN(), 0.75)},
	{"clamp/min_gt_max", ud("clamp", 2, -1)},
	{"hardshrink", ud("hardshrink", 0.5)},
	{"leaky_relu", ud("leaky_relu", 0.01)},
	{"leaky_relu/negative", ud("leaky_relu", -1.5)},
}

// fuseUnaryEdges are inputs at the formulas' edges: NaN, ±Inf, ±0,
// subnormals, the largest floats, the bounds and lambd above and the
// floats next to them, relu6's and hardswish's ±3 and 6, tanh_'s switch at
// 0.625, exp's overflow and underflow, gelu's far tails (where the
// result is subnormal and the order of the float32 operations shows).
var fuseUnaryEdges = func() []float64 {
	v := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-40, -1e-40, 1e-30, -1e-30,
		math.MaxFloat32, -math.MaxFloat32, 1e30, -1e30, 3, -3, 6, -6, 0.625, -0.625, 88.72, 89, -87.5, -104, 13.5, -13.5,
		-20, 1, -1, 0.5, -0.5, 0.75, 2, -2.5, 3.25, 100, -100,
		-13.1325, -13.13025, -13.2, -13.25, -13.3} // gelu's subnormal tail
	for _, x := range []float32{0.5, -0.5, 0.625, -0.625, 3, -3, 6, -6, 1, -1} {
		v = append(v, float64(math.Nextafter32(x, 0)), float64(math.Nextafter32(x, 2*x)))
	}
	return v
}()

// TestFuseUnaryMatchesUnfused runs every fusable unary op as the head of a
// fused chain (op, then neg) and alone, on the edge values and random ones,
// through the scalar (odd count) and vec4 kernels, and requires bit-equal
// results (NaN for NaN): the fused kernel renders the same formula as the
// unfused one (shaders/unary_formulas.tmpl). The unfused form makes op's
// output a graph output, which no chain may absorb. The fused result must
// also match the reference, but for subnormal inputs.
func TestFuseUnaryMatchesUnfused(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	f := serialization.Float32
	for _, c := range fusableUnary {
		for _, n := range []int64{int64(len(fuseUnaryEdges)) + 11, 4 * 32} {
			t.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(n), 0x5eed))
				x := RandTensor(r, f, []int64{n}, -8, 8)
				copy(x.V, fuseUnaryEdges)
				for i := range x.V {
					x.V[i] = reference.Round(f, x.V[i])
				}
				fused, fusedBlob, nd := runFuseUnary(t, dev, c.op, x, false)
				if nd != 1 {
					t.Errorf("fused: %d dispatches, want 1", nd)
				}
				unfused, _, nd := runFuseUnary(t, dev, c.op, x, true)
				if nd != 2 {
					t.Errorf("unfused: %d dispatches, want 2", nd)
				}
				bad := 0
				for i := 0; i < len(fused); i += 4 {
					g, w := binary.LittleEndian.Uint32(fused[i:]), binary.LittleEndian.Uint32(unfused[i:])
					gf, wf := math.Float32frombits(g), math.Float32frombits(w)
					if g != w && !(math.IsNaN(float64(gf)) && math.IsNaN(float64(wf))) {
						if bad++; bad <= 5 {
							t.Errorf("x = %v: fused %v (%#08x), unfused %v (%#08x)", float32(x.V[i/4]), gf, g, wf, w)
						}
					}
				}
				want, err := reference.Run(fusedBlob, nil, []*reference.Tensor{x})
				if err != nil {
					t.Fatal(err)
				}
				got, err := reference.Decode(f, []int64{n}, fused)
				if err != nil {
					t.Fatal(err)
				}
				// llvmpipe's log2 misreads subnormals (log10(1e-40) comes
				// out -38.2, fused or not), which the unary cases never
				// feed it; only the agreement above covers them.
				for i, v := range x.V {
					if v != 0 && math.Abs(v) < 0x1p-126 {
						got.V[i] = want[0].V[i]
					}
				}
				if err := Compare(got, want[0], DefaultTolerance[f]); err != nil {
					t.Errorf("fused against the reference: %v", err)
				}
			})
		}
	}
}

// runFuseUnary builds and runs neg(o(x)), with o's output a graph output
// too when unfused, and returns the bytes of neg's output, the blob and
// the dispatch count.
func runFuseUnary(t *testing.T, dev *gpu.Device, o op, x *reference.Tensor, unfused bool) ([]byte, *serialization.Blob, int) {
	t.Helper()
	b := serialization.NewBuilder()
	dims := Dims(x.Shape)
	in := b.Tensor(serialization.Float32, dims, -1)
	outs := chain(b, in, dims, nil, o, u("neg"))
	b.Inputs(in)
	if unfused {
		b.Outputs(outs[1], outs[0])
	} else {
		b.Outputs(outs[1])
	}
	g, blob, err := Load(dev, b, graph.Options{SkipWarmup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	got, err := g.Execute(context.Background(), []graph.Tensor{{DType: x.DType, Shape: x.Shape, Data: x.Encode()}})
	if err != nil {
		t.Fatal(err)
	}
	return got[0].Data, blob, len(g.Dispatches())
}

// TestFuseMatmulEpilogueMatchesUnfused runs mm followed by each activation
// a matmul absorbs as its epilogue, fused and unfused (mm's output also a
// graph output), and requires bit-equal activations on the edge values,
// through the vec4 (K, N multiples of 4) and scalar matmul kernels: the
// epilogue renders the unary op's formula. x·w reproduces x exactly: x's
// rows are [v, 0, ...] and w's first row is ones, its others zeros.
func TestFuseMatmulEpilogueMatchesUnfused(t *testing.T) {
	t.Parallel()
	dev := testDevice(t)
	for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
		t.Run(fam.String(), func(t *testing.T) { testFuseMatmulEpilogue(t, dev, fam) })
	}
}

// testFuseMatmulEpilogue is TestFuseMatmulEpilogueMatchesUnfused under
// kernel family fam.
func testFuseMatmulEpilogue(t *testing.T, dev *gpu.Device, fam ops.Family) {
	f := serialization.Float32
	m := int64(len(fuseUnaryEdges))
	for _, act := range []string{"relu", "relu6", "sigmoid", "clamp", "clamp_min", "clamp_max", "clamp_inverted", "hardtanh", "gelu", "gelu_tanh"} {
		for _, kn := range []int64{4, 3} {
			t.Run(fmt.Sprintf("%s/K%d_N%d", act, kn, kn), func(t *testing.T) {
				x, w := reference.New(f, []int64{m, kn}), reference.New(f, []int64{kn, kn})
				for i, v := range fuseUnaryEdges {
					x.V[i*int(kn)] = reference.Round(f, v)
				}
				for j := range kn {
					w.V[j] = 1
				}
				var outs [2][]byte
				for k, unfused := range []bool{false, true} {
					b := serialization.NewBuilder()
					xi, wi := b.Tensor(f, Dims(x.Shape), -1), b.Tensor(f, Dims(w.Shape), -1)
					h := b.Tensor(f, Dims([]int64{m, kn}), -1)
					b.Op("aten.mm.default", xi, wi, h)
					y := addAct(b, act, h, []int64{m, kn})
					b.Inputs(xi, wi)
					if unfused {
						b.Outputs(y, h)
					} else {
						b.Outputs(y)
					}
					g, _, err := Load(dev, b, graph.Options{SkipWarmup: true, Kernels: ops.Config{Family: fam}})
					if err != nil {
						t.Fatal(err)
					}
					got, err := g.Execute(context.Background(), []graph.Tensor{
						{DType: f, Shape: x.Shape, Data: x.Encode()}, {DType: f, Shape: w.Shape, Data: w.Encode()}})
					nd := len(g.Dispatches())
					g.Close()
					if err != nil {
						t.Fatal(err)
					}
					if want := 1 + k; nd != want {
						t.Errorf("unfused=%v: %d dispatches, want %d", unfused, nd, want)
					}
					outs[k] = got[0].Data
				}
				bad := 0
				for i := 0; i < len(outs[0]); i += 4 {
					g, w := binary.LittleEndian.Uint32(outs[0][i:]), binary.LittleEndian.Uint32(outs[1][i:])
					gf, wf := math.Float32frombits(g), math.Float32frombits(w)
					if g != w && !(math.IsNaN(float64(gf)) && math.IsNaN(float64(wf))) {
						if bad++; bad <= 5 {
							t.Errorf("x = %v: fused %v (%#08x), unfused %v (%#08x)", float32(x.V[i/4/int(kn)*int(kn)]), gf, g, wf, w)
						}
					}
				}
			})
		}
	}
}

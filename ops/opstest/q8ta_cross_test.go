package opstest

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestQ8taConvMatchesFloatPath checks the int8 convolution references
// (and with them the exporter weight layouts they read) against the graph
// as it was before the exporter fused it: dequantize → aten.convolution on
// float weights in torch's layout → [relu] → quantize, evaluated by the
// project's float convolution reference. The two compute the same real
// number in a different float32 order, so codes may differ by one where
// the value sits next to a rounding boundary, and only rarely.
func TestQ8taConvMatchesFloatPath(t *testing.T) {
	t.Parallel()
	for _, c := range q8ConvConfigs {
		name := q8ConvCase(c).Name
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 0x5eed))
			b := serialization.NewBuilder()
			in := q8ConvBuild(c, b, r, true)
			outs := runReference(t, b, in)
			compareCodes(t, outs[0], outs[1])
		})
	}
}

// runReference runs b's graph on the reference interpreter.
func runReference(t *testing.T, b *serialization.Builder, in []*reference.Tensor) []*reference.Tensor {
	t.Helper()
	memplan.PlanDedicated(b.Graph())
	raw, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	outs, _, err := (Reference{}).Run(context.Background(), raw, b.NamedBlobs(), in)
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// compareCodes requires int8 codes within one of each other, differing in
// at most 2% of the elements, and not all saturated.
func compareCodes(t *testing.T, fused, float *reference.Tensor) {
	t.Helper()
	if len(fused.V) != len(float.V) {
		t.Fatalf("%d vs %d elements", len(fused.V), len(float.V))
	}
	off, inside := 0, 0
	for i := range fused.V {
		d := math.Abs(fused.V[i] - float.V[i])
		if d > 1 {
			t.Fatalf("element %d: fused %v, float path %v", i, fused.V[i], float.V[i])
		}
		if d != 0 {
			off++
		}
		if fused.V[i] > -128 && fused.V[i] < 127 {
			inside++
		}
	}
	if off*50 > len(fused.V) {
		t.Errorf("%d of %d codes differ by one", off, len(fused.V))
	}
	if inside*4 < len(fused.V) {
		t.Errorf("only %d of %d codes are unsaturated: the case tests little", inside, len(fused.V))
	}
	t.Logf("%d elements, %d off by one, %d unsaturated", len(fused.V), off, inside)
}

// TestQ8taLinearMatchesFloatPath is TestQ8taConvMatchesFloatPath for
// q8ta_linear: dequantize → aten.linear on float weights q·s_w[n] → [relu]
// → quantize.
func TestQ8taLinearMatchesFloatPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m, k, n     int64
		zpIn, zpOut int64
		bias, relu  bool
	}{
		{1, 64, 12, 3, -5, true, false},
		{7, 36, 7, 9, 4, true, true},
		{16, 128, 20, -128, 0, false, false},
	} {
		r := rand.New(rand.NewPCG(11, 0x5eed))
		b := serialization.NewBuilder()
		const sIn, sw = 0.02, 0.002
		in := []int64{tc.m, tc.k}
		xv := randInt8(r, in)
		x := b.Tensor(serialization.Int8, Dims(in), -1)
		b.Inputs(x)
		w, sums, scales, bv, q, sv, bvals := q8Weights(b, r, tc.n, tc.k, sw, tc.bias)
		act := map[bool]string{true: "relu", false: "none"}[tc.relu]
		so := q8OutScale(tc.k, sIn, sw)
		out := b.Tensor(serialization.Int8, []uint32{uint32(tc.m), uint32(tc.n)}, -1)
		b.Op("et_vk.q8ta_linear.default", x, b.Double(sIn), b.Int(tc.zpIn), w, sums, scales, b.Double(so), b.Int(tc.zpOut), bv, b.String(act), out)

		f := serialization.Float32
		xf := b.Tensor(f, Dims(in), -1)
		b.Op("quantized_decomposed.dequantize_per_tensor.default", x, b.Double(sIn), b.Int(tc.zpIn), b.Int(-128), b.Int(127), b.Null(), b.Null(), xf)
		wf := make([]float64, len(q))
		for i := range q {
			wf[i] = float64(q[i]) * sv[int64(i)/tc.k]
		}
		wc, _ := b.NamedConst(f, []uint32{uint32(tc.n), uint32(tc.k)}, f32Bytes(wf))
		fb := b.Null()
		if tc.bias {
			fb, _ = b.NamedConst(f, []uint32{uint32(tc.n)}, f32Bytes(bvals[:tc.n]))
		}
		yf := b.Tensor(f, []uint32{uint32(tc.m), uint32(tc.n)}, -1)
		b.Op("aten.linear.default", xf, wc, fb, yf)
		if tc.relu {
			yr := b.Tensor(f, []uint32{uint32(tc.m), uint32(tc.n)}, -1)
			b.Op("aten.relu.default", yf, yr)
			yf = yr
		}
		yq := b.Tensor(serialization.Int8, []uint32{uint32(tc.m), uint32(tc.n)}, -1)
		b.Op("quantized_decomposed.quantize_per_tensor.default", yf, b.Double(so), b.Int(tc.zpOut), b.Int(-128), b.Int(127), b.Null(), yq)
		b.Outputs(out, yq)
		outs := runReference(t, b, []*reference.Tensor{xv})
		compareCodes(t, outs[0], outs[1])
	}
}

package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Int8 (q8ta) against float32 kernels on the same shapes, in the same
// iteration, kernel times as in BenchmarkMatmul (GPU timestamps,
// timeVariants; without them each Execute minus an identity graph of its
// input's dtype). GOP/s counts 2·MACs for both; int8-speedup is the
// float32 kernel time over the int8 one.
//
//	go test -run '^$' -bench 'Q8ta' -count 5 ./ops/opstest

// benchPair times the int8 graph q (int8 input of shape in) against the
// float32 graph f (float32 input of the same shape) and reports their
// rates for ops MACs.
func benchPair(b *testing.B, q, f *serialization.Builder, in []int64, macs float64) {
	dev := openBenchDevice(b)
	r := rand.New(rand.NewPCG(3, 4))
	vs := []benchVariant{
		{name: "int8", sb: q, in: []graph.Tensor{{DType: serialization.Int8, Shape: in, Data: randInt8(r, in).Encode()}}},
		{name: "f32", sb: f, in: []graph.Tensor{{DType: serialization.Float32, Shape: in, Data: RandTensor(r, serialization.Float32, in, -1, 1).Encode()}}},
	}
	ts, _ := timeVariants(b, dev, vs, nil)
	kq, kf := ts[0].kernel, ts[1].kernel
	reportRate(b, 2*macs/1e9, kq, "int8-GOP/s")
	reportRate(b, 2*macs/1e9, kf, "f32-GOP/s")
	if !math.IsNaN(kq) {
		b.ReportMetric(kq*1e3, "int8-kernel-ms")
		if !math.IsNaN(kf) {
			b.ReportMetric(kf/kq, "int8-speedup")
		}
	}
}

// BenchmarkQ8taConv: q8ta_conv2d (3×3, pad 1), _pw and _dw against
// aten.convolution with a constant float32 weight (the packed kernel).
func BenchmarkQ8taConv(b *testing.B) {
	one := [2]int64{1, 1}
	for _, c := range []q8Conv{
		{op: "q8ta_conv2d", n: 1, ic: 64, h: 28, w: 28, oc: 64, kh: 3, kw: 3, stride: one, pad: one, dil: one, groups: 1},
		{op: "q8ta_conv2d_pw", n: 1, ic: 64, h: 28, w: 28, oc: 128, kh: 1, kw: 1, stride: one, dil: one, groups: 1},
		{op: "q8ta_conv2d_dw", n: 1, ic: 128, h: 28, w: 28, oc: 128, kh: 3, kw: 3, stride: one, pad: one, dil: one, groups: 128},
	} {
		b.Run(fmt.Sprintf("%s_%dx%d_%d-%d_%dx%d", c.op, c.kh, c.kw, c.ic, c.oc, c.h, c.w), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			q := serialization.NewBuilder()
			q8ConvBuild(c, q, r, false)
			oh, ow := c.outHW()
			f := serialization.NewBuilder()
			fl := serialization.Float32
			in := []int64{c.n, c.ic, c.h, c.w}
			x := f.Tensor(fl, Dims(in), -1)
			icPG := c.ic / c.groups
			w, _ := f.NamedConst(fl, []uint32{uint32(c.oc), uint32(icPG), uint32(c.kh), uint32(c.kw)},
				RandTensor(r, fl, []int64{c.oc * icPG * c.kh * c.kw}, -0.1, 0.1).Encode())
			bias, _ := f.NamedConst(fl, []uint32{uint32(c.oc)}, RandTensor(r, fl, []int64{c.oc}, -1, 1).Encode())
			y := f.Tensor(fl, out4(c.n, c.oc, oh, ow), -1)
			f.Op("aten.convolution.default", x, w, bias, f.IntList(c.stride[:]...), f.IntList(c.pad[:]...), f.IntList(c.dil[:]...),
				f.Bool(false), f.IntList(0, 0), f.Int(c.groups), y)
			f.Inputs(x)
			f.Outputs(y)
			benchPair(b, q, f, in, float64(c.n*c.oc*oh*ow*icPG*c.kh*c.kw))
		})
	}
}

// BenchmarkQ8taLinear: q8ta_linear (bias) against aten.linear with a
// float32 weight, M = 1 (gemv) and M = 64.
func BenchmarkQ8taLinear(b *testing.B) {
	for _, s := range []struct{ m, k, n int64 }{{1, 2048, 2048}, {64, 512, 512}} {
		b.Run(fmt.Sprintf("M%d_K%d_N%d", s.m, s.k, s.n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			in := []int64{s.m, s.k}
			q := serialization.NewBuilder()
			x := q.Tensor(serialization.Int8, Dims(in), -1)
			w, sums, scales, bv, _, _, _ := q8Weights(q, r, s.n, s.k, 0.002, true)
			out := q.Tensor(serialization.Int8, []uint32{uint32(s.m), uint32(s.n)}, -1)
			q.Op("et_vk.q8ta_linear.default", x, q.Double(0.02), q.Int(3), w, sums, scales, q.Double(q8OutScale(s.k, 0.02, 0.002)), q.Int(0), bv, q.String("none"), out)
			q.Inputs(x)
			q.Outputs(out)

			fl := serialization.Float32
			f := serialization.NewBuilder()
			fx := f.Tensor(fl, Dims(in), -1)
			fw, _ := f.NamedConst(fl, []uint32{uint32(s.n), uint32(s.k)}, RandTensor(r, fl, []int64{s.n, s.k}, -1, 1).Encode())
			fbias, _ := f.NamedConst(fl, []uint32{uint32(s.n)}, RandTensor(r, fl, []int64{s.n}, -1, 1).Encode())
			fout := f.Tensor(fl, []uint32{uint32(s.m), uint32(s.n)}, -1)
			f.Op("aten.linear.default", fx, fw, fbias, fout)
			f.Inputs(fx)
			f.Outputs(fout)
			benchPair(b, q, f, in, float64(s.m*s.k*s.n))
		})
	}
}

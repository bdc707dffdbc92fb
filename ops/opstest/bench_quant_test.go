package opstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// BenchmarkLinearQ4gsw runs et_vk.linear_q4gsw (bias) at K = N ∈ {2048,
// 4096, 8192} for M = 1 (decode; group sizes 32 and 64) and M = 16 (32),
// named M<m>_K<k>_N<n>_g<g>, next to aten.linear on the same shapes with a
// float32 weight (f32; where the device can bind it) and to the same q4
// graph loaded with ops.Config.NoQGEMV (x-tiled: that graph's kernel time
// over the default's; the cpu family's tiled quantized kernel, which the
// gpu family also runs for M > 16).
//
// Kernel times as in BenchmarkMatmul (GPU timestamps, timeVariants), each
// graph in copies that together exceed 64 MB on a GPU (-bench-stream-mb)
// so the weights come from memory. q4-GB/s counts the packed weight and
// scale bytes (read once per dispatch), GFLOP/s 2·M·K·N; q4-speedup is the
// f32 kernel time over the q4 one. Under the gpu family at M = 1, q4old is
// the same graph on the kernels the weight-word GEMV replaced (ops.Config.SkipKernels
// "gpu/q4gemv": gemv_gpu.wgsl's 16-byte units for M ≤ 16), timed in the
// same iterations: q4old-GB/s, q4old-kernel-ms, and x-q4old, its kernel
// time over q4's (above 1: the new kernel is faster).
//
//	go test -run '^$' -bench LinearQ4gsw -count 5 ./ops/opstest
func BenchmarkLinearQ4gsw(b *testing.B) {
	dev := openBenchDevice(b)
	for _, kn := range gemvBenchSizes {
		for _, mg := range [][2]int64{{1, 32}, {1, 64}, {16, 32}} {
			k, n, m, g := kn, kn, mg[0], mg[1]
			b.Run(fmt.Sprintf("M%d_K%d_N%d_g%d", m, k, n, g), func(b *testing.B) {
				benchQ4gsw(b, dev, m, k, n, g)
			})
		}
	}
}

func benchQ4gsw(b *testing.B, dev *gpu.Device, m, k, n, g int64) {
	r := rand.New(rand.NewPCG(1, 2))
	f := serialization.Float32
	in := []int64{m, k}

	qb := serialization.NewBuilder()
	x := qb.Tensor(f, Dims(in), -1)
	packed, rb := packInt4(randQ(r, n, k, -8, 7), n, k, 8, false)
	w, _ := qb.NamedConst(serialization.Uint8, []uint32{uint32(n), uint32(rb)}, packed)
	scales := randScales(r, (k/g)*n)
	s, _ := qb.NamedConst(f, []uint32{uint32(k / g), uint32(n)}, f32Bytes(scales))
	bias, _ := qb.NamedConst(f, []uint32{uint32(n)}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
	out := qb.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
	qb.Op("et_vk.linear_q4gsw.default", x, w, s, qb.Int(g), bias, out)
	qb.Inputs(x)
	qb.Outputs(out)

	feed := []graph.Tensor{{DType: f, Shape: in, Data: RandTensor(r, f, in, -1, 1).Encode()}}
	qbytes := int64(len(packed) + 4*len(scales))
	qcopies := weightCopies(dev, qbytes)
	vs := []benchVariant{
		{name: "q4", sb: qb, copies: qcopies, in: feed},
		{name: "tiled", sb: qb, cfg: ops.Config{NoQGEMV: true}, copies: qcopies, in: feed},
	}
	old, hasOld := oldKernels(b, dev, vs[0], "gpu/q4gemv")
	hasOld = hasOld && m <= 8 // past 8 rows both run gemv_gpu.wgsl
	if hasOld {
		old.name = "q4old"
		vs = append(vs, old)
	}
	fbytes := 4 * n * k
	if lim := dev.Limits(); uint64(fbytes) <= lim.MaxStorageBufferBindingSize && uint64(fbytes) <= lim.MaxBufferSize {
		fb := serialization.NewBuilder()
		fx := fb.Tensor(f, Dims(in), -1)
		fw, _ := fb.NamedConst(f, []uint32{uint32(n), uint32(k)}, RandTensor(r, f, []int64{n, k}, -1, 1).Encode())
		fbias, _ := fb.NamedConst(f, []uint32{uint32(n)}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
		fout := fb.Tensor(f, []uint32{uint32(m), uint32(n)}, -1)
		fb.Op("aten.linear.default", fx, fw, fbias, fout)
		fb.Inputs(fx)
		fb.Outputs(fout)
		vs = append(vs, benchVariant{name: "f32", sb: fb, copies: weightCopies(dev, fbytes), in: feed})
	}
	ts, _ := timeVariants(b, dev, vs, nil)
	kq, kt := ts[0].kernel, ts[1].kernel
	flops := 2 * float64(m*k*n)
	reportRate(b, float64(qbytes)/1e9, kq, "q4-GB/s")
	reportRate(b, flops/1e9, kq, "q4-GFLOP/s")
	if !math.IsNaN(kq) {
		b.ReportMetric(kq*1e3, "q4-kernel-ms")
		if !math.IsNaN(kt) {
			b.ReportMetric(kt/kq, "x-tiled")
		}
	}
	if hasOld {
		ko := ts[2].kernel
		reportRate(b, float64(qbytes)/1e9, ko, "q4old-GB/s")
		if !math.IsNaN(ko) {
			b.ReportMetric(ko*1e3, "q4old-kernel-ms")
			if !math.IsNaN(kq) {
				b.ReportMetric(ko/kq, "x-q4old")
			}
		}
		ts = append(ts[:2], ts[3:]...)
	}
	if len(ts) > 2 {
		kf := ts[2].kernel
		reportRate(b, flops/1e9, kf, "f32-GFLOP/s")
		if !math.IsNaN(kf) && !math.IsNaN(kq) {
			b.ReportMetric(kf/kq, "q4-speedup")
		}
	}
	if ts[0].source == "gpu-timestamp" {
		reportRate(b, float64(qbytes)/1e9, ts[0].wall, "q4-wall-GB/s")
	}
}

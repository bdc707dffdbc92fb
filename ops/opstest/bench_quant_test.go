package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// BenchmarkLinearQ4gsw runs et_vk.linear_q4gsw (bias) at K = N = 2048 for
// M = 1 (decode; group sizes 32 and 64) and M = 16 (32), next to
// aten.linear on the same shapes with a float32 weight and to the same q4
// graph loaded with ops.Config.NoQGEMV (x-tiled: that graph's kernel time
// over the default's; at M = 16 both run the same kernel).
//
// Method as BenchmarkMatmul: each iteration executes the q4gsw graph, the
// float32 linear graph and an identity graph (aten.clone of the same
// input), each timed; a kernel's time is its Execute minus the identity's.
// q4-GB/s counts the packed weight and scale bytes (read once per
// dispatch), GFLOP/s 2·M·K·N.
//
//	go test -run '^$' -bench LinearQ4gsw -count 5 ./ops/opstest
func BenchmarkLinearQ4gsw(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	const k, n = 2048, 2048
	for _, mg := range [][2]int64{{1, 32}, {1, 64}, {16, 32}} {
		m, g := mg[0], mg[1]
		b.Run(fmt.Sprintf("M%d_K%d_N%d_g%d", m, k, n, g), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			in := []int64{m, k}

			qb := serialization.NewBuilder()
			x := qb.Tensor(f, Dims(in), -1)
			packed, rb := packInt4(randQ(r, n, k, -8, 7), n, k, 8, false)
			w, _ := qb.NamedConst(serialization.Uint8, []uint32{n, uint32(rb)}, packed)
			scales := randScales(r, (k/g)*n)
			s, _ := qb.NamedConst(f, []uint32{uint32(k / g), n}, f32Bytes(scales))
			bias, _ := qb.NamedConst(f, []uint32{n}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
			out := qb.Tensor(f, []uint32{uint32(m), n}, -1)
			qb.Op("et_vk.linear_q4gsw.default", x, w, s, qb.Int(g), bias, out)
			qb.Inputs(x)
			qb.Outputs(out)

			fb := serialization.NewBuilder()
			fx := fb.Tensor(f, Dims(in), -1)
			fw, _ := fb.NamedConst(f, []uint32{n, k}, RandTensor(r, f, []int64{n, k}, -1, 1).Encode())
			fbias, _ := fb.NamedConst(f, []uint32{n}, RandTensor(r, f, []int64{n}, -1, 1).Encode())
			fout := fb.Tensor(f, []uint32{uint32(m), n}, -1)
			fb.Op("aten.linear.default", fx, fw, fbias, fout)
			fb.Inputs(fx)
			fb.Outputs(fout)

			ib := serialization.NewBuilder()
			ix := ib.Tensor(f, Dims(in), -1)
			iy := ib.Tensor(f, Dims(in), -1)
			ib.Op("aten.clone.default", ix, ib.Null(), iy)
			ib.Inputs(ix)
			ib.Outputs(iy)

			var gs [4]*graph.WebGPUGraph
			for i, sb := range []*serialization.Builder{qb, fb, ib, qb} {
				opts := graph.Options{}
				if i == 3 {
					opts.Kernels.NoQGEMV = true
				}
				gr, _, err := Load(dev, sb, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer gr.Close()
				gs[i] = gr
			}
			feed := []graph.Tensor{{DType: f, Shape: in, Data: RandTensor(r, f, in, -1, 1).Encode()}}
			ctx := context.Background()
			exec := func(gr *graph.WebGPUGraph) time.Duration {
				t0 := time.Now()
				if _, err := gr.Execute(ctx, feed); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			for _, gr := range gs { // JIT compile outside the timing
				exec(gr)
			}
			var tq, tf, tid, tt time.Duration
			for b.Loop() {
				tq += exec(gs[0])
				tf += exec(gs[1])
				tid += exec(gs[2])
				tt += exec(gs[3])
			}
			per := func(t time.Duration) float64 { return max((t-tid).Seconds()/float64(b.N), 1e-9) }
			kq, kf := per(tq), per(tf)
			flops := 2 * float64(m*k*n)
			bytes := float64(len(packed) + 4*len(scales))
			b.ReportMetric(bytes/kq/1e9, "q4-GB/s")
			b.ReportMetric(flops/kq/1e9, "q4-GFLOP/s")
			b.ReportMetric(kq*1e3, "q4-kernel-ms")
			b.ReportMetric(flops/kf/1e9, "f32-GFLOP/s")
			b.ReportMetric(kf/kq, "q4-speedup")
			b.ReportMetric(per(tt)/kq, "x-tiled")
		})
	}
}

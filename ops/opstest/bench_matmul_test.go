package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// matmulBenchSizes are the square sizes of BenchmarkMatmul and
// BenchmarkMatmulGonum.
var matmulBenchSizes = []int64{64, 256, 512, 1024, 2048}

// BenchmarkMatmul runs aten.mm on N×N operands (self a graph input, mat2 a
// named constant) and reports the kernel's GFLOP/s (2·N³ per product, over
// the GPU time of its dispatches, timeVariants), kernel-ms, e2e-GFLOP/s
// (over the whole Execute), wall-GFLOP/s (over the Execute minus an
// identity graph's, the measure before GPU timestamps) and x-gonum,
// gonum's blas32.Gemm on the same shapes in the same iterations over the
// kernel time. The -bench-kernels flag picks the kernel family (the
// device's by default). Under the gpu family, from N = 65 the same graph
// also runs on the 64×64 tiled kernel that the 128×128 one replaced
// (ops.Config.SkipKernels "gpu/tiled128"), in the same iterations:
// old-GFLOP/s, old-kernel-ms and x-old (its kernel time over the
// default's).
//
//	go test -run '^$' -bench 'Matmul|GEMV|Linear' -count 5 ./ops/opstest
func BenchmarkMatmul(b *testing.B) {
	dev := openBenchDevice(b)
	for _, n := range matmulBenchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			sb := serialization.NewBuilder()
			x := sb.Tensor(f, Dims([]int64{n, n}), -1)
			w, _ := sb.NamedConst(f, Dims([]int64{n, n}), RandTensor(r, f, []int64{n, n}, -1, 1).Encode())
			out := sb.Tensor(f, Dims([]int64{n, n}), -1)
			sb.Op("aten.mm.default", x, w, out)
			sb.Inputs(x)
			sb.Outputs(out)
			in := []graph.Tensor{{DType: f, Shape: []int64{n, n}, Data: RandTensor(r, f, []int64{n, n}, -1, 1).Encode()}}
			vs := []benchVariant{{sb: sb, in: in}}
			if old, ok := oldKernels(b, dev, vs[0], "gpu/tiled128"); ok && n >= 65 {
				vs = append(vs, old)
			}
			ts, ref := timeVariants(b, dev, vs, capRef(2*float64(n*n*n), gonumGemm(r, n)))
			work := 2 * float64(n*n*n) / 1e9
			reportVariants(b, vs[:1], ts[:1], []float64{work}, "GFLOP/s", ref)
			if len(ts) > 1 {
				reportOld(b, work, "GFLOP/s", ts[0], ts[1])
			}
		})
	}
}

// gonumMaxFlop caps the products the benchmarks time gonum on (nil
// reference beyond it): a GPU benchmark should not wait seconds for a CPU
// yardstick (BenchmarkMatmulGonum times it on its own).
const gonumMaxFlop = 4e9

// capRef returns ref, a CPU reference of flop floating-point operations,
// or nil past gonumMaxFlop.
func capRef(flop float64, ref func()) func() {
	if flop > gonumMaxFlop {
		return nil
	}
	return ref
}

// gonumGemm returns a func running blas32.Gemm on random N×N operands.
func gonumGemm(r *rand.Rand, n int64) func() {
	gen := func() blas32.General {
		m := blas32.General{Rows: int(n), Cols: int(n), Stride: int(n), Data: make([]float32, n*n)}
		for i := range m.Data {
			m.Data[i] = float32(r.Float64()*2 - 1)
		}
		return m
	}
	x, y, c := gen(), gen(), gen()
	return func() { blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, c) }
}

// BenchmarkMatmulGonum is gonum's blas32.Gemm (float32 Sgemm) on the shapes
// of BenchmarkMatmul, the CPU reference the kernel is measured against.
func BenchmarkMatmulGonum(b *testing.B) {
	for _, n := range matmulBenchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			gemm := gonumGemm(rand.New(rand.NewPCG(1, 2)), n)
			gemm()
			for b.Loop() {
				gemm()
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(2*float64(n*n*n)/sec/1e9, "GFLOP/s")
		})
	}
}

// gemvBenchSizes are the K = N of BenchmarkGEMV and BenchmarkLinearShapes.
var gemvBenchSizes = []int64{2048, 4096, 8192}

// BenchmarkGEMV runs a one-row aten.linear (input [1, K], weight [K, K] a
// named constant, no bias) and reports the weight bandwidth of the kernel,
// GB/s = 4·K² bytes / kernel time (GPU timestamps, timeVariants). Two
// kernel choices run in every iteration: gemv-GB/s is the kernel the
// family picks (its GEMV kernel) and tiled-GB/s its tiled matmul, forced
// (ops.Config.Matmul); gemv/tiled is the ratio of those two, and
// <name>-x-gonum each one's speed over gonum's blas32.Gemm(NoTrans,
// Trans) on the same shapes in the same iterations. Each choice loads
// copies of the graph, each its own weight buffer, and reads them in
// turn: more than 64 MB a pass on a GPU (-bench-stream-mb), so the
// weights come from memory, not from the H100's 50 MB L2.
//
//	go test -run '^$' -bench GEMV -count 5 ./ops/opstest
func BenchmarkGEMV(b *testing.B) {
	dev := openBenchDevice(b)
	for _, k := range gemvBenchSizes {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			skipOverLimit(b, dev, 4*k*k)
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			wt := RandTensor(r, f, []int64{k, k}, -1, 1)
			xt := RandTensor(r, f, []int64{1, k}, -1, 1)
			sb := linearBenchGraph(wt, 1, k, k)
			in := []graph.Tensor{{DType: f, Shape: []int64{1, k}, Data: xt.Encode()}}
			copies := weightCopies(dev, 4*k*k)
			vs := []benchVariant{
				{name: "gemv", sb: sb, cfg: ops.Config{Matmul: ops.MatmulAuto}, copies: copies, in: in},
				{name: "tiled", sb: sb, cfg: ops.Config{Matmul: ops.MatmulNoGEMV}, copies: copies, in: in},
			}
			ts, ref := timeVariants(b, dev, vs, gonumLinear(xt.V, wt.V, 1, k, k))
			work := 4 * float64(k*k) / 1e9
			reportVariants(b, vs, ts, []float64{work, work}, "GB/s", ref)
		})
	}
}

// BenchmarkLinear runs aten.linear on N×N operands (weight [N, N] and bias
// [N] named constants) with the weight packed for the cpu family's mm
// kernel and unpacked (read as exported): both graphs run in every
// iteration, kernel times as in BenchmarkMatmul; packed/unpacked is the
// ratio of their rates.
func BenchmarkLinear(b *testing.B) {
	dev := openBenchDevice(b)
	for _, n := range []int64{256, 512, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			sb := serialization.NewBuilder()
			x := sb.Tensor(f, Dims([]int64{n, n}), -1)
			w, _ := sb.NamedConst(f, Dims([]int64{n, n}), RandTensor(r, f, []int64{n, n}, -1, 1).Encode())
			bias, _ := sb.NamedConst(f, Dims([]int64{n}), RandTensor(r, f, []int64{n}, -1, 1).Encode())
			out := sb.Tensor(f, Dims([]int64{n, n}), -1)
			sb.Op("aten.linear.default", x, w, bias, out)
			sb.Inputs(x)
			sb.Outputs(out)
			in := []graph.Tensor{{DType: f, Shape: []int64{n, n}, Data: RandTensor(r, f, []int64{n, n}, -1, 1).Encode()}}
			vs := []benchVariant{
				{name: "packed", sb: sb, cfg: ops.Config{PackLinear: true}, in: in},
				{name: "unpacked", sb: sb, in: in},
			}
			ts, _ := timeVariants(b, dev, vs, nil)
			work := 2 * float64(n*n*n) / 1e9
			reportVariants(b, vs, ts, []float64{work, work}, "GFLOP/s", 0)
		})
	}
}

// linearBenchGraph builds out [m, n] = aten.linear(x [m, k], w) with the
// float32 weight wt [n, k] a named constant and no bias.
func linearBenchGraph(wt *reference.Tensor, m, n, k int64) *serialization.Builder {
	f := serialization.Float32
	sb := serialization.NewBuilder()
	x := sb.Tensor(f, Dims([]int64{m, k}), -1)
	w, _ := sb.NamedConst(f, Dims([]int64{n, k}), wt.Encode())
	out := sb.Tensor(f, Dims([]int64{m, n}), -1)
	sb.Op("aten.linear.default", x, w, sb.Null(), out)
	sb.Inputs(x)
	sb.Outputs(out)
	return sb
}

// openBenchDevice opens the default device for a benchmark and closes it
// when the benchmark and its sub-benchmarks are done.
func openBenchDevice(b *testing.B) *gpu.Device {
	b.Helper()
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	return dev
}

func buildBenchGraph(b *testing.B, dev *gpu.Device, sb *serialization.Builder, cfg ...ops.Config) *graph.WebGPUGraph {
	b.Helper()
	var opts graph.Options
	if len(cfg) > 0 {
		opts.Kernels = cfg[0]
	}
	g, _, err := Load(dev, sb, opts)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkAttention runs llama.custom_sdpa over prepacked KV caches
// ([1, ctx, 8, 64] each, 32 query heads): decode (one query row per head)
// and a 64-row prefill chunk, both attending ctx keys. GFLOP/s counts the
// two ctx·64 products per query row and head.
//
//	go test -run '^$' -bench Attention ./ops/opstest
func BenchmarkAttention(b *testing.B) {
	dev := openBenchDevice(b)
	for _, sq := range []int64{1, 64} {
		for _, ctx := range []int64{512, 2048} {
			b.Run(fmt.Sprintf("S%d/ctx%d", sq, ctx), func(b *testing.B) {
				benchAttention(b, dev, sq, ctx)
			})
		}
	}
}

func benchAttention(b *testing.B, dev *gpu.Device, sq, ctx int64) {
	const hq, hkv, d = 32, 8, 64
	r := rand.New(rand.NewPCG(1, 2))
	f := serialization.Float32
	sb := serialization.NewBuilder()
	qs, cs := []int64{1, sq, hq, d}, []int64{1, ctx, hkv, d}
	q := sb.Tensor(f, Dims(qs), -1)
	kc := cacheSrc(sb, RandTensor(r, f, cs, -1, 1))
	vc := cacheSrc(sb, RandTensor(r, f, cs, -1, 1))
	out := sb.Tensor(f, Dims(qs), -1)
	sb.Op("llama.custom_sdpa.default", q, kc, vc, sb.Int(ctx-sq), sb.Null(), sb.Double(0), sb.Bool(true), sb.Null(), out)
	sb.Inputs(q)
	sb.Outputs(out)
	g := buildBenchGraph(b, dev, sb)
	defer g.Close()

	in := []graph.Tensor{{DType: f, Shape: qs, Data: RandTensor(r, f, qs, -1, 1).Encode()}}
	c := context.Background()
	if _, err := g.Execute(c, in); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Execute(c, in); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(4*float64(sq*hq*ctx*d)/sec/1e9, "GFLOP/s")
	b.ReportMetric(sec*1e6, "µs/exec")
}

// BenchmarkLinearShapes runs aten.linear on the shapes real models run:
// input [M, K] (a graph input), weight [N, K] (a named constant), K = N,
// no bias, for M ∈ {1, 8, 16, 64, 256} and K ∈ {512, 2048, 4096, 8192},
// named M<m>_K<k>. It reports GFLOP/s (2·M·N·K over the kernel time,
// timeVariants), GB/s of weight bytes (4·N·K over the same time: the
// measure of the few-row shapes, which stream the weight), and x-gonum,
// gonum's blas32.Gemm(NoTrans, Trans) on the same shapes timed in the same
// iterations over the kernel time (above 1: the GPU kernel is faster). The
// weight is read from more than 64 MB of copies a pass on a GPU, as in
// BenchmarkGEMV. Under the gpu family, where issue 33's kernels serve the
// shape (more than 64 rows: the 128×128 tiled matmul; 9 to 16: the
// skinny linear), the same graph also runs on the kernels they replaced
// (ops.Config.SkipKernels) in the same iterations: old-GFLOP/s,
// old-kernel-ms and x-old (its kernel time over the default's).
//
//	go test -run '^$' -bench LinearShapes -count 5 ./ops/opstest
func BenchmarkLinearShapes(b *testing.B) {
	dev := openBenchDevice(b)
	for _, k := range append([]int64{512}, gemvBenchSizes...) {
		for _, m := range []int64{1, 8, 16, 64, 256} {
			b.Run(fmt.Sprintf("M%d_K%d", m, k), func(b *testing.B) {
				n := k
				skipOverLimit(b, dev, 4*n*k)
				r := rand.New(rand.NewPCG(1, 2))
				f := serialization.Float32
				wt := RandTensor(r, f, []int64{n, k}, -1, 1)
				xt := RandTensor(r, f, []int64{m, k}, -1, 1)
				sb := linearBenchGraph(wt, m, n, k)
				in := []graph.Tensor{{DType: f, Shape: []int64{m, k}, Data: xt.Encode()}}
				vs := []benchVariant{{sb: sb, copies: weightCopies(dev, 4*n*k), in: in}}
				if old, ok := oldKernels(b, dev, vs[0], newFloatKernels); ok && (m > 64 || m > 8 && m <= 16) {
					vs = append(vs, old)
				}
				ts, ref := timeVariants(b, dev, vs, gonumLinear(xt.V, wt.V, m, n, k))
				work := 2 * float64(m*n*k) / 1e9
				reportVariants(b, vs[:1], ts[:1], []float64{work}, "GFLOP/s", ref)
				reportRate(b, 4*float64(n*k)/1e9, ts[0].kernel, "GB/s")
				if len(ts) > 1 {
					reportOld(b, work, "GFLOP/s", ts[0], ts[1])
				}
			})
		}
	}
}

// newFloatKernels are issue 33's float32 linear-family kernels, the
// SkipKernels of BenchmarkLinearShapes' old variant.
const newFloatKernels = "gpu/tiled128,gpu/skinny"

// gonumLinear returns a func running blas32.Gemm(NoTrans, Trans) for
// x [M, K] · w [N, K]ᵀ, the CPU reference of aten.linear, or nil past
// gonumMaxFlop.
func gonumLinear(xv, wv []float64, m, n, k int64) func() {
	if 2*float64(m*n*k) > gonumMaxFlop {
		return nil
	}
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, e := range v {
			out[i] = float32(e)
		}
		return out
	}
	x := blas32.General{Rows: int(m), Cols: int(k), Stride: int(k), Data: f32(xv)}
	w := blas32.General{Rows: int(n), Cols: int(k), Stride: int(k), Data: f32(wv)}
	c := blas32.General{Rows: int(m), Cols: int(n), Stride: int(n), Data: make([]float32, m*n)}
	return func() { blas32.Gemm(blas.NoTrans, blas.Trans, 1, x, w, 0, c) }
}

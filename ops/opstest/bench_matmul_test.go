package opstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// matmulBenchSizes are the square sizes of BenchmarkMatmul and
// BenchmarkMatmulGonum.
var matmulBenchSizes = []int64{64, 256, 512, 1024}

// BenchmarkMatmul runs aten.mm on N×N operands (self a graph input, mat2 a
// named constant) and reports the kernel's GFLOP/s (2·N³ per product) for
// comparison with BenchmarkMatmulGonum in the same run.
//
// Method: every iteration executes the mm graph, an identity graph
// (aten.clone of the same N×N input to an N×N output: the same upload,
// readback and submit, plus one copy dispatch) and gonum's blas32.Gemm on
// the same shapes, each timed separately. The kernel time is t(mm) −
// t(identity); GFLOP/s uses it, e2e-GFLOP/s uses the whole Execute, and
// x-gonum is t(gonum)/t(kernel), measured side by side in each iteration
// so that load from other processes hits both alike. The kernel time is a
// difference: on a busy host a small kernel's can come out at or below zero
// (it is then taken as 1 ns), so read the small sizes with care.
//
//	go test -run '^$' -bench 'Matmul|GEMV|Linear' -count 5 ./ops/opstest
func BenchmarkMatmul(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
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
			gemm := gonumGemm(r, n)
			benchKernels(b, dev, []*serialization.Builder{sb}, []string{""}, in, 2*float64(n*n*n)/1e9, "GFLOP/s", gemm)
		})
	}
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

// BenchmarkGEMV runs a one-row aten.linear (input [1, K], weight [K, K] a
// named constant, no bias) and reports the weight bandwidth of the kernel,
// GB/s = 4·K² bytes / kernel time, with the kernel time measured as in
// BenchmarkMatmul (minus an identity graph of the [1, K] input). Two graphs
// run in every iteration: gemv-GB/s is the kernel ops picks (the GEMV
// kernel) and tiled-GB/s the tiled vec4 matmul kernel, forced
// (ops.Config.Matmul); gemv/tiled is the ratio of those two, and
// <name>-x-gonum each one's speed over gonum's blas32.Gemm(NoTrans, Trans) on the same
// shapes in the same iteration.
//
//	go test -run '^$' -bench GEMV -count 5 ./ops/opstest
func BenchmarkGEMV(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, k := range []int64{1024, 2048, 4096} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			wt := RandTensor(r, f, []int64{k, k}, -1, 1)
			xt := RandTensor(r, f, []int64{1, k}, -1, 1)
			sb := serialization.NewBuilder()
			x := sb.Tensor(f, Dims([]int64{1, k}), -1)
			w, _ := sb.NamedConst(f, Dims([]int64{k, k}), wt.Encode())
			out := sb.Tensor(f, Dims([]int64{1, k}), -1)
			sb.Op("aten.linear.default", x, w, sb.Null(), out)
			sb.Inputs(x)
			sb.Outputs(out)
			in := []graph.Tensor{{DType: f, Shape: []int64{1, k}, Data: xt.Encode()}}
			benchVariants(b, dev, []*serialization.Builder{sb, sb}, []string{"gemv", "tiled"},
				[]ops.Config{{Matmul: ops.MatmulAuto}, {Matmul: ops.MatmulNoGEMV}}, in, 4*float64(k*k)/1e9, "GB/s",
				gonumLinear(xt.V, wt.V, 1, k, k))
		})
	}
}

// BenchmarkLinear runs aten.linear on N×N operands (weight [N, N] and bias
// [N] named constants) with the weight packed for the mm kernel and
// unpacked (read as exported): both graphs run in every iteration, kernel
// times as in BenchmarkMatmul; packed/unpacked is the ratio of their rates.
func BenchmarkLinear(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, n := range []int64{256, 512, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			f := serialization.Float32
			wv := RandTensor(r, f, []int64{n, n}, -1, 1).Encode()
			bv := RandTensor(r, f, []int64{n}, -1, 1).Encode()
			var sbs []*serialization.Builder
			for range 2 {
				sb := serialization.NewBuilder()
				x := sb.Tensor(f, Dims([]int64{n, n}), -1)
				w, _ := sb.NamedConst(f, Dims([]int64{n, n}), wv)
				bias, _ := sb.NamedConst(f, Dims([]int64{n}), bv)
				out := sb.Tensor(f, Dims([]int64{n, n}), -1)
				sb.Op("aten.linear.default", x, w, bias, out)
				sb.Inputs(x)
				sb.Outputs(out)
				sbs = append(sbs, sb)
			}
			in := []graph.Tensor{{DType: f, Shape: []int64{n, n}, Data: RandTensor(r, f, []int64{n, n}, -1, 1).Encode()}}
			benchKernels(b, dev, sbs, []string{"packed", "unpacked"}, in, 2*float64(n*n*n)/1e9, "GFLOP/s", nil)
		})
	}
}

// benchKernels times the graphs sbs (one input, one output each; with two,
// the first is built with linear packing on and the second with it off)
// against an identity graph (aten.clone of an input shaped like in[0] into
// an output of the same shape), all executed in every iteration, and
// reports for each graph work/kernel time as <name>-<unit> (work in
// giga-units; just unit for a single unnamed graph), its kernel time and,
// for one graph, the end-to-end rate (e2e-<unit>, work over the whole
// Execute). With several graphs it reports the first's rate over the
// second's; with ref (a CPU reference run each iteration) [<name>-]x-gonum,
// t(ref)/t(kernel).
func benchKernels(b *testing.B, dev *gpu.Device, sbs []*serialization.Builder, names []string, in []graph.Tensor, work float64, unit string, ref func()) {
	benchVariants(b, dev, sbs, names, nil, in, work, unit, ref)
}

// benchVariants is benchKernels with graph i built with kernel choices
// cfgs[i]; with no cfgs, two graphs are built with and without linear
// weight packing.
func benchVariants(b *testing.B, dev *gpu.Device, sbs []*serialization.Builder, names []string, cfgs []ops.Config, in []graph.Tensor, work float64, unit string, ref func()) {
	gs := make([]*graph.WebGPUGraph, len(sbs))
	for i, sb := range sbs {
		var cfg ops.Config
		switch {
		case cfgs != nil:
			cfg = cfgs[i]
		case len(sbs) == 2:
			cfg.PackLinear = i == 0
		}
		gs[i] = buildBenchGraph(b, dev, sb, cfg)
		defer gs[i].Close()
	}
	ib := serialization.NewBuilder()
	x := ib.Tensor(in[0].DType, Dims(in[0].Shape), -1)
	y := ib.Tensor(in[0].DType, Dims(in[0].Shape), -1)
	ib.Op("aten.clone.default", x, ib.Null(), y)
	ib.Inputs(x)
	ib.Outputs(y)
	id := buildBenchGraph(b, dev, ib)
	defer id.Close()
	ctx := context.Background()
	exec := func(g *graph.WebGPUGraph) time.Duration {
		t0 := time.Now()
		if _, err := g.Execute(ctx, in); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	// The first Execute JIT-compiles the kernel; keep it out of the timing.
	for _, g := range gs {
		exec(g)
	}
	exec(id)
	tg := make([]time.Duration, len(gs))
	var tid, tref time.Duration
	for b.Loop() {
		for i, g := range gs {
			tg[i] += exec(g)
		}
		tid += exec(id)
		if ref != nil {
			t0 := time.Now()
			ref()
			tref += time.Since(t0)
		}
	}
	rates := make([]float64, len(gs))
	for i := range gs {
		kernel := max((tg[i]-tid).Seconds()/float64(b.N), 1e-9)
		rates[i] = work / kernel
		prefix := ""
		if names[i] != "" {
			prefix = names[i] + "-"
		}
		b.ReportMetric(rates[i], prefix+unit)
		b.ReportMetric(kernel*1e3, prefix+"kernel-ms")
		if ref != nil {
			b.ReportMetric(tref.Seconds()/float64(b.N)/kernel, prefix+"x-gonum")
		}
	}
	if len(gs) == 1 {
		b.ReportMetric(work/(tg[0].Seconds()/float64(b.N)), "e2e-"+unit)
	} else if len(gs) >= 2 {
		b.ReportMetric(rates[0]/rates[1], names[0]+"/"+names[1])
	}
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
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
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
// no bias, for M ∈ {1, 8, 16, 64, 256} and K ∈ {512, 2048}, named
// M<m>_K<k>. It reports GFLOP/s (2·M·N·K over the kernel time, measured as
// in BenchmarkMatmul) and x-gonum, gonum's blas32.Gemm(NoTrans, Trans) on
// the same shapes timed in the same iteration over the kernel time (above
// 1: the GPU kernel is faster).
//
//	go test -run '^$' -bench LinearShapes -count 5 ./ops/opstest
func BenchmarkLinearShapes(b *testing.B) {
	dev, err := gpu.Open(context.Background(), gpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, k := range []int64{512, 2048} {
		for _, m := range []int64{1, 8, 16, 64, 256} {
			b.Run(fmt.Sprintf("M%d_K%d", m, k), func(b *testing.B) {
				n := k
				r := rand.New(rand.NewPCG(1, 2))
				f := serialization.Float32
				wt := RandTensor(r, f, []int64{n, k}, -1, 1)
				xt := RandTensor(r, f, []int64{m, k}, -1, 1)
				sb := serialization.NewBuilder()
				x := sb.Tensor(f, Dims([]int64{m, k}), -1)
				w, _ := sb.NamedConst(f, Dims([]int64{n, k}), wt.Encode())
				out := sb.Tensor(f, Dims([]int64{m, n}), -1)
				sb.Op("aten.linear.default", x, w, sb.Null(), out)
				sb.Inputs(x)
				sb.Outputs(out)
				in := []graph.Tensor{{DType: f, Shape: []int64{m, k}, Data: xt.Encode()}}
				benchKernels(b, dev, []*serialization.Builder{sb}, []string{""}, in, 2*float64(m*n*k)/1e9, "GFLOP/s",
					gonumLinear(xt.V, wt.V, m, n, k))
			})
		}
	}
}

// gonumLinear returns a func running blas32.Gemm(NoTrans, Trans) for
// x [M, K] · w [N, K]ᵀ, the CPU reference of aten.linear.
func gonumLinear(xv, wv []float64, m, n, k int64) func() {
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

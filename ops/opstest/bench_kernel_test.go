package opstest

import (
	"context"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The kernel benchmarks' flags: which kernel family they load (the
// device's by default), and how many megabytes of weights the bandwidth
// benchmarks (BenchmarkGEMV, BenchmarkLinearShapes, BenchmarkLinearQ4gsw)
// stream per iteration.
//
//	go test -run '^$' -bench 'GEMV|LinearShapes' -bench-kernels gpu -benchtime 2x ./ops/opstest
var (
	benchKernels  = flag.String("bench-kernels", "auto", "kernel family of the kernel benchmarks: auto (the device's), cpu or gpu")
	benchStreamMB = flag.Int("bench-stream-mb", -1, "weight megabytes the bandwidth benchmarks stream per iteration, rotating among copies of the weight so that a GPU's L2 (50 MB on an H100) cannot keep them (-1: 64 on a GPU, one copy on a CPU adapter)")
)

// benchConfig is cfg with the -bench-kernels family unless cfg names one.
func benchConfig(b *testing.B, cfg ops.Config) ops.Config {
	if cfg.Family != ops.FamilyAuto {
		return cfg
	}
	f, err := ops.ParseFamily(*benchKernels)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Family = f
	return cfg
}

// benchFamily is the kernel family the kernel benchmarks load on dev:
// -bench-kernels, or with "auto" the device's (cpu on a CPU adapter).
func benchFamily(b *testing.B, dev *gpu.Device) ops.Family {
	f := benchConfig(b, ops.Config{}).Family
	if f == ops.FamilyAuto {
		f = ops.FamilyGPU
		if dev.Info().AdapterType == "cpu" {
			f = ops.FamilyCPU
		}
	}
	return f
}

// oldKernels returns the variant that runs what the gpu family ran before
// the kernels that skip (ops.Config.SkipKernels) names, cfg otherwise
// unchanged, or false when the benchmarks load another family (where the
// two would be the same kernels).
func oldKernels(b *testing.B, dev *gpu.Device, v benchVariant, skip string) (benchVariant, bool) {
	if benchFamily(b, dev) != ops.FamilyGPU {
		return benchVariant{}, false
	}
	v.cfg.SkipKernels = skip
	v.graphs = nil
	return v, true
}

// reportOld reports the old-kernel variant's rate (old-<unit>, work in
// giga-units over its kernel time), its old-kernel-ms, and x-old, its
// kernel time over the new kernel's (above 1: the new kernel is faster).
func reportOld(b *testing.B, work float64, unit string, tNew, tOld benchTimes) {
	reportRate(b, work, tOld.kernel, "old-"+unit)
	if !math.IsNaN(tOld.kernel) {
		b.ReportMetric(tOld.kernel*1e3, "old-kernel-ms")
		if !math.IsNaN(tNew.kernel) {
			b.ReportMetric(tOld.kernel/tNew.kernel, "x-old")
		}
	}
}

// weightCopies returns how many copies of a weight of wbytes a bandwidth
// benchmark rotates through: enough that any all but one of them exceed
// -bench-stream-mb (64 MB on a GPU), so that a weight has left the GPU's
// L2 by the time it is read again; one on a CPU adapter (lavapipe's
// caches are a few MB and streaming 64 MB there takes seconds).
func weightCopies(dev *gpu.Device, wbytes int64) int {
	mb := int64(*benchStreamMB)
	if mb < 0 {
		mb = 64
		if dev.Info().AdapterType == "cpu" {
			mb = 0
		}
	}
	if wbytes <= 0 {
		return 1
	}
	return int((mb<<20+wbytes-1)/wbytes) + 1
}

// skipOverLimit skips a benchmark whose tensor of nbytes the device cannot
// bind (lavapipe binds at most 128 MiB, so no 8192² float32 weight).
func skipOverLimit(b *testing.B, dev *gpu.Device, nbytes int64) {
	if lim := dev.Limits(); uint64(nbytes) > lim.MaxStorageBufferBindingSize || uint64(nbytes) > lim.MaxBufferSize {
		b.Skipf("a %d-byte tensor exceeds the device's binding (%d) or buffer (%d) limit", nbytes, lim.MaxStorageBufferBindingSize, lim.MaxBufferSize)
	}
}

// benchVariant is one timed kernel choice: graphs built from sb with
// choices cfg, copies of them (one per weight copy, each its own
// buffers), all fed in.
type benchVariant struct {
	name   string
	sb     *serialization.Builder
	cfg    ops.Config
	copies int
	in     []graph.Tensor
	graphs []*graph.WebGPUGraph
}

// benchTimes are timeVariants' results per variant, in seconds per
// execution of one graph: kernel, the GPU time of its dispatches (GPU
// timestamps; NaN when it could not be measured); wall, its Execute minus
// an identity graph's (the measure before timestamps, for comparisons
// with older runs; NaN when not positive); e2e, its whole Execute.
type benchTimes struct {
	kernel, wall, e2e float64
	source            string // "gpu-timestamp" or "wall"
}

// timeVariants times the variants' graphs in every iteration of b.Loop,
// and ref (a CPU reference, may be nil) in the same iterations so that
// load from other processes hits both alike, and returns each variant's
// times and ref's mean seconds.
//
// The kernel time is GPU timestamps around each dispatch
// (graph.ProfileReplay, which replays the last Execute's dispatches), when
// the device has timestamp queries (lavapipe and the H100 do); otherwise
// an Execute's wall time minus that of an identity graph (aten.clone of
// the variant's first input: the same upload, readback and submission).
// That difference was all the benchmarks had, and it is what reported a
// 1e-6 ms kernel on the H100 (BenchmarkMatmul/1024): there an Execute's
// upload, readback and wake-ups vary by more than a fast kernel takes, the
// difference came out at or below zero and was clamped to 1 ns. A
// difference that is not positive is now reported as not measured, never
// as a rate.
//
// Each iteration executes every graph of every variant (e2e) and the
// identities, then replays every graph for its timestamps in the same
// order, so that between a graph's Execute and its replay, and between two
// replays of it, every other copy of its weight is read: with
// weightCopies copies, more than 64 MB, beyond a GPU's L2.
func timeVariants(b *testing.B, dev *gpu.Device, vs []benchVariant, ref func()) ([]benchTimes, float64) {
	ctx := context.Background()
	ids := make([]*graph.WebGPUGraph, len(vs))
	for i := range vs {
		v := &vs[i]
		for range max(v.copies, 1) {
			g := buildBenchGraph(b, dev, v.sb, benchConfig(b, v.cfg))
			b.Cleanup(func() { g.Close() })
			v.graphs = append(v.graphs, g)
		}
		ib := serialization.NewBuilder()
		in0 := v.in[0]
		x := ib.Tensor(in0.DType, Dims(in0.Shape), -1)
		y := ib.Tensor(in0.DType, Dims(in0.Shape), -1)
		ib.Op("aten.clone.default", x, ib.Null(), y)
		ib.Inputs(x)
		ib.Outputs(y)
		ids[i] = buildBenchGraph(b, dev, ib)
		b.Cleanup(func() { ids[i].Close() })
	}
	exec := func(g *graph.WebGPUGraph, in []graph.Tensor) time.Duration {
		t0 := time.Now()
		if _, err := g.Execute(ctx, in); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	stamps := dev.HasTimestamps()
	replay := func(g *graph.WebGPUGraph) time.Duration {
		p, err := g.ProfileReplay(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if p.Source != gpu.ProfileTimestamp {
			stamps = false
		}
		return p.Total()
	}
	// The first Execute JIT-compiles the kernels; keep it out of the timing.
	for i, v := range vs {
		for _, g := range v.graphs {
			exec(g, v.in)
			if stamps {
				replay(g)
			}
		}
		exec(ids[i], v.in[:1])
	}
	if ref != nil {
		ref()
	}
	te, tk, tid := make([]time.Duration, len(vs)), make([]time.Duration, len(vs)), make([]time.Duration, len(vs))
	var tref time.Duration
	for b.Loop() {
		for i, v := range vs {
			for _, g := range v.graphs {
				te[i] += exec(g, v.in)
			}
			tid[i] += exec(ids[i], v.in[:1])
		}
		if stamps {
			for i, v := range vs {
				for _, g := range v.graphs {
					tk[i] += replay(g)
				}
			}
		}
		if ref != nil {
			t0 := time.Now()
			ref()
			tref += time.Since(t0)
		}
	}
	out := make([]benchTimes, len(vs))
	for i, v := range vs {
		n := float64(b.N * len(v.graphs))
		bt := benchTimes{e2e: te[i].Seconds() / n, wall: te[i].Seconds()/n - tid[i].Seconds()/float64(b.N), kernel: math.NaN(), source: "wall"}
		if bt.wall <= 0 {
			b.Logf("%s: Execute minus identity is %.3g ms, not positive: the kernel is below the Execute's noise", v.name, bt.wall*1e3)
			bt.wall = math.NaN()
		}
		switch {
		case stamps && tk[i] > 0:
			bt.kernel, bt.source = tk[i].Seconds()/n, "gpu-timestamp"
		case !stamps:
			bt.kernel = bt.wall
		}
		out[i] = bt
	}
	return out, tref.Seconds() / float64(b.N)
}

// reportRate reports work/seconds as unit when seconds is a measured
// time, and nothing otherwise (a missing metric, not a made-up one).
func reportRate(b *testing.B, work, seconds float64, unit string) {
	if !math.IsNaN(seconds) && seconds > 0 {
		b.ReportMetric(work/seconds, unit)
	}
}

// reportVariants reports, for variants timed by timeVariants with work
// per graph execution (giga-units), each one's <name>-<unit> (kernel
// time), <name>-kernel-ms, <name>-wall-<unit> (the wall-clock difference,
// comparable with runs before timestamps), and with ref (seconds of a CPU
// reference run) <name>-x-gonum; one unnamed variant reports <unit>,
// kernel-ms and e2e-<unit>; two or more report the first's rate over the
// second's as <a>/<b>.
func reportVariants(b *testing.B, vs []benchVariant, ts []benchTimes, work []float64, unit string, ref float64) {
	for i, v := range vs {
		prefix := ""
		if v.name != "" {
			prefix = v.name + "-"
		}
		t := ts[i]
		reportRate(b, work[i], t.kernel, prefix+unit)
		if !math.IsNaN(t.kernel) {
			b.ReportMetric(t.kernel*1e3, prefix+"kernel-ms")
		}
		if t.source == "gpu-timestamp" {
			reportRate(b, work[i], t.wall, prefix+"wall-"+unit)
		}
		if ref > 0 && !math.IsNaN(t.kernel) {
			b.ReportMetric(ref/t.kernel, prefix+"x-gonum")
		}
	}
	if len(vs) == 1 {
		reportRate(b, work[0], ts[0].e2e, "e2e-"+unit)
	} else if !math.IsNaN(ts[0].kernel) && !math.IsNaN(ts[1].kernel) {
		b.ReportMetric(ts[1].kernel/ts[0].kernel*work[0]/work[1], vs[0].name+"/"+vs[1].name)
	}
}

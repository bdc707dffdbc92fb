package opstest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// BenchmarkAdd measures f32 aten.add.Tensor over about 4M elements on each
// kernel path. A graph of one add is dominated by the upload and readback,
// so each case also builds a chain of 1+binaryBenchChain adds (ping-ponging
// between two shared buffers) and reports the kernel alone:
//
//	kernel-GB/s = 12 B/elem · N · binaryBenchChain / (t(chain) − t(one add))
//
// e2e-ms is one Execute of the single add (upload x and y, add, read back).
//
//	go test -run '^$' -bench Add ./ops/opstest
func BenchmarkAdd(b *testing.B) {
	dev := openBenchDevice(b)
	// Each add of the chain must be its own dispatch.
	const n = 1 << 22
	for _, c := range []struct {
		name   string
		as, bs []int64
	}{
		{"same/vec4", []int64{n}, []int64{n}},
		{"same/scalar", []int64{n - 1}, []int64{n - 1}},
		{"scalar_other/vec4", []int64{n}, []int64{1}},
		{"row/strided_vec4", []int64{n / 1024, 1024}, []int64{1024}},
		{"row/strided_scalar", []int64{2049, 2047}, []int64{2047}},
	} {
		b.Run(c.name, func(b *testing.B) { benchAdd(b, dev, c.as, c.bs) })
	}
}

// buildAddChain builds a graph of `adds` float32 adds, z = x + y and then
// z = z + y, ping-ponging between two shared buffers (the last add writes
// the output), with elementwise fusion off so that each add is its own
// dispatch.
func buildAddChain(b *testing.B, dev *gpu.Device, as, bs []int64, adds int) *graph.WebGPUGraph {
	f := serialization.Float32
	sb := serialization.NewBuilder()
	x := sb.Tensor(f, Dims(as), -1)
	y := sb.Tensor(f, Dims(bs), -1)
	z := x
	for k := 0; k < adds; k++ {
		mem := int32(k % 2)
		if k == adds-1 {
			mem = -1
		}
		next := sb.Tensor(f, Dims(as), mem)
		sb.Op("aten.add.Tensor", z, y, sb.Int(1), next)
		z = next
	}
	sb.Inputs(x, y)
	sb.Outputs(z)
	return buildBenchGraph(b, dev, sb, ops.Config{NoElementwiseFusion: true})
}

// binaryBenchChain is how many extra adds the chained graph runs.
const binaryBenchChain = 8

func benchAdd(b *testing.B, dev *gpu.Device, as, bs []int64) {
	r := rand.New(rand.NewPCG(1, 2))
	f := serialization.Float32
	one, chain := buildAddChain(b, dev, as, bs, 1), buildAddChain(b, dev, as, bs, 1+binaryBenchChain)
	defer one.Close()
	defer chain.Close()
	in := []graph.Tensor{
		{DType: f, Shape: as, Data: RandTensor(r, f, as, -1, 1).Encode()},
		{DType: f, Shape: bs, Data: RandTensor(r, f, bs, -1, 1).Encode()},
	}
	ctx := context.Background()
	exec := func(g *graph.WebGPUGraph) time.Duration {
		t0 := time.Now()
		if _, err := g.Execute(ctx, in); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	// The first Execute JIT-compiles the kernel; keep it out of the timing.
	exec(one)
	exec(chain)
	var tOne, tChain time.Duration
	for b.Loop() {
		tOne += exec(one)
		tChain += exec(chain)
	}
	numel := 1.0
	for _, d := range as {
		numel *= float64(d)
	}
	perOne := tOne.Seconds() / float64(b.N)
	perKernel := (tChain - tOne).Seconds() / float64(b.N) / binaryBenchChain
	b.ReportMetric(perOne*1e3, "e2e-ms")
	b.ReportMetric(perKernel*1e3, "kernel-ms")
	b.ReportMetric(12*numel/perKernel/1e9, "kernel-GB/s")
}

package wgdelegate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/bench/models"
	imodels "github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// cloneChain builds x -> clone -> clone -> ... (n dispatches) of size elems.
func cloneChain(n int, elems int64) *serialization.Builder {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, dims(elems), -1)
	cur := x
	for i := 0; i < n; i++ {
		next := b.Tensor(serialization.Float32, dims(elems), int32(i%2))
		b.Op("aten.clone.default", cur, b.Null(), next)
		cur = next
	}
	y := b.Tensor(serialization.Float32, dims(elems), -1)
	b.Op("aten.clone.default", cur, b.Null(), y)
	b.Inputs(x)
	b.Outputs(y)
	return b
}

// timeExecute executes m on in once, untimed, then b.N times, timed.
func timeExecute(b *testing.B, m *wgdelegate.Model, in []wgdelegate.Tensor) {
	b.Helper()
	ctx := context.Background()
	if _, err := m.Execute(ctx, in...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Execute(ctx, in...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteDispatchBound measures the per-dispatch cost of a graph of
// tiny ops (one pass, one submit) and the allocations of one Execute.
func BenchmarkExecuteDispatchBound(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("dispatches=%d", n+1), func(b *testing.B) {
			m, err := load(b, cloneChain(n, 64))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			in := []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{64}, make([]float32, 64))}
			b.ReportAllocs()
			timeExecute(b, m, in)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n+1), "µs/dispatch")
		})
	}
}

// BenchmarkExecuteCopyBandwidth measures a 4 Mi-element copy graph end to end
// (upload, 2 copies, readback) in GB/s of tensor bytes moved by the kernels.
func BenchmarkExecuteCopyBandwidth(b *testing.B) {
	const elems = 4 << 20
	m, err := load(b, cloneChain(1, elems))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	in := []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{elems}, make([]float32, elems))}
	b.ReportAllocs()
	timeExecute(b, m, in)
	// Two kernels each read and write 16 MiB.
	b.ReportMetric(float64(4*elems*2*2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "kernelGB/s")
}

// tinyChain builds a chain of n tiny float32 elementwise ops (cycling
// through unary and Scalar ops) over elems elements, ping-ponging between
// two shared buffers.
func tinyChain(n int, elems int64) *serialization.Builder {
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, dims(elems), -1)
	cur := x
	for i := 0; i < n; i++ {
		mem := int32(i % 2)
		if i == n-1 {
			mem = -1
		}
		next := b.Tensor(f, dims(elems), mem)
		switch i % 4 {
		case 0:
			b.Op("aten.add.Scalar", cur, b.Double(0.5), b.Int(1), next)
		case 1:
			b.Op("aten.relu.default", cur, next)
		case 2:
			b.Op("aten.mul.Scalar", cur, b.Double(0.75), next)
		default:
			b.Op("aten.neg.default", cur, next)
		}
		cur = next
	}
	b.Inputs(x)
	b.Outputs(cur)
	return b
}

// BenchmarkChain200 executes a graph of 200 tiny elementwise ops (64
// elements) and reports the time of one Execute divided by 200 (µs/op):
// the upload, the one submit, the readback and every dispatch included.
// unfused records one dispatch per op (WithKernels with NoElementwiseFusion: the
// per-dispatch floor of one compute pass); fused lets the chain fuse
// (dispatches says into how many kernels).
//
//	go test -run '^$' -bench Chain200 -count 5 .
func BenchmarkChain200(b *testing.B) {
	const n = 200
	for _, fuse := range []bool{false, true} {
		name := "unfused"
		if fuse {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			m, err := load(b, tinyChain(n, 64), wgdelegate.WithKernels(wgdelegate.KernelConfig{NoElementwiseFusion: !fuse}))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			in := []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{64}, make([]float32, 64))}
			timeExecute(b, m, in)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/n, "µs/op")
			b.ReportMetric(float64(m.MemoryStats().NumDispatches), "dispatches")
		})
	}
}

// BenchmarkModels measures the end-to-end latency of one Execute (upload,
// every dispatch in one submit, readback) of each benchmark model of
// bench/models (internal/models' CNN, MLP and decoder layer, the example
// MLP, a larger MLP, an elementwise chain), as
// the median over the iterations in ms; bench/compare.sh runs the same
// models in PyTorch.
//
//	go test -run '^$' -bench Models -count 5 .
func BenchmarkModels(b *testing.B) {
	all, err := models.All()
	if err != nil {
		b.Fatal(err)
	}
	for _, mod := range all {
		b.Run(mod.Name, func(b *testing.B) {
			m, err := load(b, mod.Builder)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			if _, err := m.Execute(ctx, mod.Inputs...); err != nil {
				b.Fatal(err)
			}
			var ts []float64
			for b.Loop() {
				t0 := time.Now()
				if _, err := m.Execute(ctx, mod.Inputs...); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, float64(time.Since(t0).Nanoseconds())/1e6)
			}
			slices.Sort(ts)
			b.ReportMetric(ts[len(ts)/2], "median-ms")
			b.ReportMetric(float64(m.MemoryStats().NumDispatches), "dispatches")
		})
	}
}

// BenchmarkLoadVerifyData loads a 3×3 convolution stack with 32 MiB of
// weights in a .ptd, with and without WithVerifyData (run the two one
// after the other, -count several, to compare; the README's "Loading"
// section has 100 MiB figures from the CLI).
func BenchmarkLoadVerifyData(b *testing.B) {
	cs := imodels.NewConvStack(imodels.ConvStackForMiB(32, 8, 4))
	blob, err := cs.B.Blob()
	if err != nil {
		b.Fatal(err)
	}
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}}})
	if err != nil {
		b.Fatal(err)
	}
	ptd, err := serialization.EncodePTD(cs.B.NamedBlobs())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, verify := range []bool{false, true} {
		b.Run(fmt.Sprintf("verify=%v", verify), func(b *testing.B) {
			opts := []wgdelegate.Option{wgdelegate.WithDevice(device(b)), wgdelegate.WithData(ptd)}
			if verify {
				opts = append(opts, wgdelegate.WithVerifyData())
			}
			b.SetBytes(int64(len(ptd)))
			for range b.N {
				m, err := wgdelegate.Load(ctx, pte, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if verify && m.VerifyStats().Tensors == 0 {
					b.Fatal("nothing verified")
				}
				m.Close()
			}
		})
	}
}

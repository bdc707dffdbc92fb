package wgdelegate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
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
			ctx := context.Background()
			if _, err := m.Execute(ctx, in...); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Execute(ctx, in...); err != nil {
					b.Fatal(err)
				}
			}
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
	ctx := context.Background()
	if _, err := m.Execute(ctx, in...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Execute(ctx, in...); err != nil {
			b.Fatal(err)
		}
	}
	// Two kernels each read and write 16 MiB.
	b.ReportMetric(float64(4*elems*2*2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "kernelGB/s")
}

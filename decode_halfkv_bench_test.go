package wgdelegate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// BenchmarkDecodeStepHalfKV times one-token decode steps of a 4-layer GQA
// llama (dim 512, 8 heads over 4 kv heads of 64, a 2048-position cache:
// 16 MB of float32 caches) loaded twice, with float32 KV caches (f32kv)
// and with KernelConfig.HalfKVCache (halfkv), interleaved step by step so
// that host load hits both alike, at input_pos moving through
// [start, start+512) (so attention reads start+ rows). It reports each
// one's median step time with its 10th and 90th percentiles, device memory
// (MemoryStats.TotalBytes, MB) and halfkv's speed-up (medians' ratio).
//
//	go test -run '^$' -bench DecodeStepHalfKV -benchtime 60x .
func BenchmarkDecodeStepHalfKV(b *testing.B) {
	cfg := models.LlamaConfig{Dim: 512, Hidden: 1024, Layers: 4, Heads: 8, KVHeads: 4, Vocab: 512,
		MaxSeq: 2048, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 1}
	l, err := models.NewLlama(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	f, err := models.Encode(l.B, true)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	load := func(opts ...wgdelegate.Option) *wgdelegate.Model {
		m, err := wgdelegate.Load(ctx, f.PTE, append([]wgdelegate.Option{wgdelegate.WithDevice(device(b)), wgdelegate.WithData(f.PTD)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	names := []string{"f32kv", "halfkv"}
	ms := []*wgdelegate.Model{load(), load(wgdelegate.WithKernels(wgdelegate.KernelConfig{HalfKVCache: true}))}
	for _, m := range ms {
		defer m.Close()
	}
	for _, start := range []int64{64, 1536} {
		b.Run(fmt.Sprintf("pos%d", start), func(b *testing.B) {
			for _, m := range ms {
				if _, err := m.Execute(ctx, l.Inputs([]int32{3}, start)...); err != nil {
					b.Fatal(err)
				}
			}
			times := make([][]time.Duration, len(ms))
			b.ResetTimer()
			for i := range b.N {
				pos := start + int64(i)%512
				for j, m := range ms {
					t0 := time.Now()
					if _, err := m.Execute(ctx, l.Inputs([]int32{int32(i % 64)}, pos)...); err != nil {
						b.Fatal(err)
					}
					times[j] = append(times[j], time.Since(t0))
				}
			}
			b.StopTimer()
			ms2 := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
			med := make([]float64, len(ms))
			for j := range ms {
				ts := times[j]
				slices.Sort(ts)
				med[j] = ms2(ts[len(ts)/2])
				b.ReportMetric(med[j], names[j]+"-ms/step")
				b.ReportMetric(ms2(ts[len(ts)/10]), names[j]+"-p10-ms")
				b.ReportMetric(ms2(ts[len(ts)*9/10]), names[j]+"-p90-ms")
				b.ReportMetric(float64(ms[j].MemoryStats().TotalBytes())/1e6, names[j]+"-MB")
			}
			b.ReportMetric(med[0]/med[1], "halfkv-speedup")
		})
	}
}

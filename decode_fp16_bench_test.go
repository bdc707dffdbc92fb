package wgdelegate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
)

// BenchmarkDecodeStepFP16 times one-token decode steps of a decoder layer
// (dim 1024, hidden 2816, vocab 4096: 11.5 M linear weights a step) three
// ways, interleaved step by step so that host load hits all alike: the
// float32 export (fp32), the force_fp16 export with its linear weights
// read as packed halves and no float32 copy of them (half, the default)
// and the same with ops.Config.NoHalfWeights (fp16-f32w: FLOAT16 held and
// read as float32). It reports each one's median step time, device memory
// (MemoryStats.TotalBytes, MB) and half's speed-up over fp32 (medians'
// ratio); then the median of 5 interleaved 64-token prefills of each
// (prefill-ms; half's linears run the half GEMV on 64 rows).
//
//	go test -run '^$' -bench DecodeStepFP16 -count 5 .
func BenchmarkDecodeStepFP16(b *testing.B) {
	cfg := models.DefaultDecoder
	cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.Hidden = 1024, 16, 8, 64, 2816
	cfg.MaxSeq, cfg.Vocab, cfg.MaxTokens = 256, 4096, 64
	d32, err := models.NewDecoder(cfg)
	if err != nil {
		b.Fatal(err)
	}
	d16, err := models.NewDecoderFP16(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	load := func(d *models.Decoder, opts ...wgdelegate.Option) *wgdelegate.Model {
		f, err := models.Encode(d.B, true)
		if err != nil {
			b.Fatal(err)
		}
		m, err := wgdelegate.Load(ctx, f.PTE, append([]wgdelegate.Option{wgdelegate.WithDevice(device(b)), wgdelegate.WithData(f.PTD)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Execute(ctx, d.Inputs([]int32{3, 9, 27}, 0)...); err != nil {
			b.Fatal(err)
		}
		return m
	}
	names := []string{"fp32", "half", "fp16-f32w"}
	ds := []*models.Decoder{d32, d16, d16}
	ms := []*wgdelegate.Model{load(d32), load(d16), load(d16, wgdelegate.WithKernels(ops.Config{NoHalfWeights: true}))}
	for _, m := range ms {
		defer m.Close()
	}
	times := make([][]time.Duration, len(ms))
	b.ResetTimer()
	for i := range b.N {
		pos := 3 + int64(i)%(cfg.MaxSeq-3)
		for j, m := range ms {
			t0 := time.Now()
			if _, err := m.Execute(ctx, ds[j].Inputs([]int32{int32(i % 64)}, pos)...); err != nil {
				b.Fatal(err)
			}
			times[j] = append(times[j], time.Since(t0))
		}
	}
	med := make([]float64, len(ms))
	for j := range ms {
		slices.Sort(times[j])
		med[j] = float64(times[j][len(times[j])/2].Microseconds()) / 1e3
		b.ReportMetric(med[j], names[j]+"-ms/step")
		b.ReportMetric(float64(ms[j].MemoryStats().TotalBytes())/1e6, names[j]+"-MB")
	}
	b.ReportMetric(med[0]/med[1], "half-speedup")
	b.StopTimer()
	prompt := make([]int32, cfg.MaxTokens)
	for i := range prompt {
		prompt[i] = int32(i * 7 % 64)
	}
	pre := make([][]time.Duration, len(ms))
	for range 5 {
		for j, m := range ms {
			t0 := time.Now()
			if _, err := m.Execute(ctx, ds[j].Inputs(prompt, 0)...); err != nil {
				b.Fatal(err)
			}
			pre[j] = append(pre[j], time.Since(t0))
		}
	}
	for j := range ms {
		slices.Sort(pre[j])
		b.ReportMetric(float64(pre[j][2].Microseconds())/1e3, names[j]+"-prefill-ms")
	}
}

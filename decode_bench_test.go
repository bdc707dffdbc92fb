package wgdelegate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/models"
)

// BenchmarkDecodeStep times one-token decode steps of a decoder layer whose
// input_pos moves at every step (pos = 1, 2, ..., wrapping below MaxSeq),
// against the same steps at a fixed input_pos (nothing to record again).
// It reports the median step time: lavapipe on a shared host is noisy.
func BenchmarkDecodeStep(b *testing.B) {
	large := models.DefaultDecoder
	large.Dim, large.Heads, large.KVHeads, large.HeadDim, large.Hidden = 512, 8, 4, 64, 1024
	large.MaxSeq, large.Vocab = 512, 256
	for _, c := range []struct {
		name string
		cfg  models.DecoderConfig
	}{{"default", models.DefaultDecoder}, {"dim512seq512", large}} {
		for _, split := range []bool{false, true} {
			c.cfg.SplitCache = split
			d, err := models.NewDecoder(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			f, err := models.Encode(d.B, true)
			if err != nil {
				b.Fatal(err)
			}
			for _, moving := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/split=%v/moving=%v", c.name, split, moving), func(b *testing.B) {
					m, err := device(b).Load(context.Background(), f.PTE, f.PTD)
					if err != nil {
						b.Fatal(err)
					}
					defer m.Close()
					ctx := context.Background()
					if _, err := m.Execute(ctx, d.Inputs([]int32{3, 9, 27}, 0)...); err != nil {
						b.Fatal(err)
					}
					times := make([]time.Duration, 0, b.N)
					before := m.RecordStats()
					b.ResetTimer()
					for i := range b.N {
						pos := c.cfg.MaxSeq / 2
						if moving {
							pos = 3 + int64(i)%(c.cfg.MaxSeq-3)
						}
						t0 := time.Now()
						if _, err := m.Execute(ctx, d.Inputs([]int32{int32(i % 64)}, pos)...); err != nil {
							b.Fatal(err)
						}
						times = append(times, time.Since(t0))
					}
					slices.Sort(times)
					b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms/step")
					after := m.RecordStats()
					b.ReportMetric(float64(after.Rerecords-before.Rerecords)/float64(b.N), "rerecords/step")
					b.ReportMetric(float64(after.Refreshes-before.Refreshes)/float64(b.N), "refreshes/step")
				})
			}
		}
	}
}

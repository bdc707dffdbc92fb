package models

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// llama1B is Llama 3.2 1B's shape (dim 2048, hidden 8192, GQA 32/8,
// vocabulary 128256, tied classifier) cut to layers layers and a short
// cache.
func llama1B(layers int64) LlamaConfig {
	cfg := Llama32_1B
	cfg.Layers, cfg.MaxSeq = layers, 8
	return cfg
}

// TestLlama1BShapes: one-layer models of Llama 3.2 1B's shape, with the
// classifier tied to the embedding, open and decode like the plain-Go
// reference: float32 (the 1 GiB embedding and classifier over lavapipe's
// 128 MiB binding limit, held in chunks that the two share), force_fp16
// (the classifier read as packed halves, chunk by chunk) and 8da4w with a
// 4-bit embedding (whose 125 MiB weights fit lavapipe's limit: loaded
// under a 64 MiB limit, so that they too are read in chunks, and as they
// are). About a minute each on a quiet 2-core host, most of
// it making and checking the weights: a long sweep.
func TestLlama1BShapes(t *testing.T) {
	if testing.Short() || !testenv.Long() {
		t.Skipf("1B-shaped models, about a minute each: a long sweep (%s=1, without -short); the chunked weights themselves are checked at every run by ops/opstest TestConformanceChunked and TestChunkedLlamaMatchesRunC", testenv.LongEnv)
	}
	for _, c := range []struct {
		name    string
		fp16    bool
		q4      bool
		binding uint64
		chunked int
		tol     Tolerance
	}{
		{"fp32", false, false, 0, 2, Tolerance{Abs: 1e-3, Rel: 1e-4}},
		{"fp16", true, false, 0, 2, FP16Tol},
		{"8da4w", false, true, 0, 0, Tolerance{Abs: 1e-3, Rel: 1e-3}},
		{"8da4w/binding64MiB", false, true, 64 << 20, 2, Tolerance{Abs: 1e-3, Rel: 1e-3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := llama1B(1)
			if c.q4 {
				cfg.Q4Group, cfg.Dynamic8, cfg.EmbeddingQ4Group = 32, true, 32
			}
			w := RandomLlamaWeights(cfg)
			w.Output = w.Embedding
			l, err := NewLlama(cfg, w)
			if err != nil {
				t.Fatal(err)
			}
			b := l.B
			if c.fp16 {
				// As NewDecoderFP16: the weights and rope tables rounded
				// to halves first, so that the float32 reference runs
				// on the values the FLOAT16 graph holds.
				round := func(vs ...[]float32) {
					for _, v := range vs {
						for i, x := range v {
							v[i] = tensor.HalfToFloat32(tensor.Float32ToHalf(x))
						}
					}
				}
				round(w.Embedding, w.Norm, l.s.cos, l.s.sin) // w.Output is w.Embedding
				for i := range w.Layers {
					ly := &w.Layers[i]
					round(ly.AttnNorm, ly.Wq, ly.Wk, ly.Wv, ly.Wo, ly.FFNNorm, ly.W1, ly.W3, ly.W2)
				}
				if b, err = ForceFP16(l.s.build(nil, false), serialization.Float32); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Encode(b, true)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			m, err := wgdelegate.Load(context.Background(), f.PTE, wgdelegate.WithData(f.PTD), wgdelegate.WithMaxBindingSize(c.binding))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			load := time.Since(start)
			st := m.MemoryStats()
			if st.NumChunkedWeights != c.chunked || (c.chunked > 0) != (st.NumWeightChunks > 0) {
				t.Fatalf("MemoryStats: %d chunked weights in %d chunks, want %d weights", st.NumChunkedWeights, st.NumWeightChunks, c.chunked)
			}
			ref := l.NewReference()
			token := int32(1)
			var exec time.Duration
			for step := range 3 {
				s := time.Now()
				got, err := m.Execute(context.Background(), l.Inputs([]int32{token}, int64(step))...)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				exec += time.Since(s)
				want, err := ref.Step([]int32{token}, int64(step))
				if err != nil {
					t.Fatalf("step %d: reference: %v", step, err)
				}
				if _, err := Compare(got[0], want, c.tol); err != nil {
					t.Fatalf("step %d: logits: %v", step, err)
				}
				logits, err := got[0].Float32s()
				if err != nil {
					t.Fatal(err)
				}
				token = Argmax(logits, int(cfg.Vocab))
			}
			t.Logf("%s: load %v, %s; 3 steps %v", c.name, load.Round(time.Millisecond), memLine(st), exec.Round(time.Millisecond))
		})
	}
}

// memLine summarizes MemoryStats for a log line.
func memLine(st wgdelegate.MemoryStats) string {
	return fmt.Sprintf("%d MiB on the device, %d chunked weights in %d chunks (%d MiB of slices)",
		st.TotalBytes()>>20, st.NumChunkedWeights, st.NumWeightChunks, st.ChunkBytes>>20)
}

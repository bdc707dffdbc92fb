package llm_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// BenchmarkSessionSwitch measures what sessions taking turns cost, on
// Stories 260K's shape (5 layers, 4 kv heads of 8, one token per
// Execute): each round generates 32 greedy tokens after a prompt of
// `pos` tokens (prefilled once, then reused), in three ways, alternated
// round by round so that a noisy host's load falls on all alike:
//
//   - alone: one session (its steps pipelined on the device);
//   - pool: two sessions of one pool generating at once, so that every
//     step switches the model's state (save the filled prefix of one
//     session's caches, restore the other's);
//   - models: two runners on two loads of the model generating at once
//     (what a cache per session without switching would cost, with two
//     copies of the weights).
//
// It reports each way's median ms per token and the bytes one switch
// copies.
func BenchmarkSessionSwitch(b *testing.B) {
	for _, pos := range []int{64, 256} {
		b.Run("pos="+strconv.Itoa(pos), func(b *testing.B) { benchSwitch(b, pos) })
	}
}

func benchSwitch(b *testing.B, pos int) {
	ctx := context.Background()
	cfg := models.Stories260K
	f, info := llm.EncodeTestDecoder(b, cfg)
	load := func() *wgdelegate.Model { return llm.LoadTestModel(b, f.PTE) }
	m := load()
	p := llm.NewTestPool(b, m, info, llm.SessionOptions{})
	prompt := func(seed int32) []int32 {
		out := make([]int32, pos)
		for i := range out {
			out[i] = (seed*31 + int32(i)*7) % int32(cfg.Vocab)
		}
		return out
	}
	pa, pb := prompt(1), prompt(2)
	const n = 32
	o := llm.GenerateOptions{MaxNewTokens: n}
	sa, err := p.New()
	if err != nil {
		b.Fatal(err)
	}
	sb, err := p.New()
	if err != nil {
		b.Fatal(err)
	}
	r1, err := llm.New(load(), info)
	if err != nil {
		b.Fatal(err)
	}
	defer r1.Close()
	r2, err := llm.New(load(), info)
	if err != nil {
		b.Fatal(err)
	}
	defer r2.Close()
	both := func(f1, f2 func() error) {
		var wg sync.WaitGroup
		var e1, e2 error
		wg.Add(2)
		go func() { defer wg.Done(); e1 = f1() }()
		go func() { defer wg.Done(); e2 = f2() }()
		wg.Wait()
		if e1 != nil || e2 != nil {
			b.Fatal(e1, e2)
		}
	}
	gen := func(s *llm.Session, pr []int32) func() error {
		return func() error { _, err := s.Generate(ctx, pr, o); return err }
	}
	// Warm up: fill the caches, compile everything.
	if err := gen(sa, pa)(); err != nil {
		b.Fatal(err)
	}
	both(gen(sa, pa), gen(sb, pb))
	// round prefills all but the last token of p on a reset r, then
	// times the generation from it into d.
	round := func(r *llm.Runner, p []int32, d *time.Duration) func() error {
		return func() error {
			r.Reset()
			if _, err := r.Forward(ctx, p[:len(p)-1]); err != nil {
				return err
			}
			t := time.Now()
			_, err := r.Generate(ctx, p[len(p)-1:], o)
			*d = time.Since(t)
			return err
		}
	}
	var alone, pool, twoModels []float64
	before := p.Stats()
	switches := 0
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := gen(sa, pa)(); err != nil {
			b.Fatal(err)
		}
		alone = append(alone, ms(time.Since(t0))/n)
		s0 := p.Stats()
		t0 = time.Now()
		both(gen(sa, pa), gen(sb, pb))
		pool = append(pool, ms(time.Since(t0))/(2*n))
		switches += int(p.Stats().Switches - s0.Switches)
		// The models' rounds include a prefill of pos-1 tokens each;
		// time only the generation.
		var d1, d2 time.Duration
		both(round(r1, pa, &d1), round(r2, pb, &d2))
		twoModels = append(twoModels, ms(max(d1, d2))/(2*n))
	}
	b.StopTimer()
	after := p.Stats()
	b.ReportMetric(median(alone), "ms/token-alone")
	b.ReportMetric(median(pool), "ms/token-pool2")
	b.ReportMetric(median(twoModels), "ms/token-2models")
	if switches > 0 {
		b.ReportMetric(float64(after.SavedBytes-before.SavedBytes+after.RestoredBytes-before.RestoredBytes)/float64(switches), "B/switch")
		b.ReportMetric(float64(switches)/float64(b.N), "switches/round")
	}
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSessionsMemory reports the device memory of one model with
// 1 and 8 sessions, each holding a conversation of 64 tokens (so that
// every session has its state saved once), on stories15M's shape (288
// features, 6 layers, 32000 tokens, a 256-position cache): the weights
// once, plus the model's own caches, plus one saved state per session.
func BenchmarkSessionsMemory(b *testing.B) {
	ctx := context.Background()
	cfg := models.LlamaConfig{Dim: 288, Hidden: 768, Layers: 6, Heads: 6, KVHeads: 6, Vocab: 32000,
		MaxSeq: 256, MaxTokens: 32, Eps: 1e-5, RopeTheta: 10000, Seed: 1}
	m, info, _ := llm.LoadTestDecoder(b, cfg)
	for range b.N {
		for _, n := range []int{1, 8} {
			p, err := llm.NewPool(m, info, llm.SessionOptions{MaxSessions: n})
			if err != nil {
				b.Fatal(err)
			}
			var sessions []*llm.Session
			for i := range n {
				s, err := p.New()
				if err != nil {
					b.Fatal(err)
				}
				prompt := make([]int32, 64)
				for j := range prompt {
					prompt[j] = int32((i*131 + j*17) % int(cfg.Vocab))
				}
				if _, err := s.Generate(ctx, prompt, llm.GenerateOptions{MaxNewTokens: 1}); err != nil {
					b.Fatal(err)
				}
				sessions = append(sessions, s)
			}
			if n > 1 { // the last one leaves too: every state saved
				if _, err := sessions[0].Generate(ctx, append(sessions[0].Tokens(), 5), llm.GenerateOptions{MaxNewTokens: 1}); err != nil {
					b.Fatal(err)
				}
			}
			st := p.Stats()
			model := m.MemoryStats().TotalBytes()
			b.ReportMetric(float64(model), "model-bytes")
			b.ReportMetric(float64(st.StateBytes), "state-bytes/session")
			b.ReportMetric(float64(model+st.StoreBytes), "total-bytes-"+strconv.Itoa(n)+"-sessions")
			b.ReportMetric(float64(st.Stores), "stores-"+strconv.Itoa(n)+"-sessions")
			p.Close()
		}
	}
	b.ReportMetric(0, "ns/op")
}

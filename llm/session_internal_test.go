package llm

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
)

// turnCfg is models.TinyLlama with a 48-position cache: a two-layer
// llama, up to 4 tokens per Execute.
var turnCfg = func() models.LlamaConfig {
	c := models.TinyLlama
	c.MaxSeq = 48
	return c
}()

// tokenEvent is one generated token of one session, in device order.
type tokenEvent struct{ session, index int }

// startQueued starts gen for each session in order, each once the ones
// before it wait for the pool's turn (held by the test), so that they
// queue in that order, then lets them run.
func startQueued(t *testing.T, p *Pool, n int, gen func(i int)) *sync.WaitGroup {
	t.Helper()
	p.turn.acquire(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen(i)
		}()
		deadline := time.Now().Add(time.Minute)
		for p.turn.waiting() != i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("session %d never queued", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	p.turn.release()
	return &wg
}

// TestSessionsTakeTurns: sessions queued for the device take turns step
// by step: with three or more generating, every run of as many
// consecutive tokens has one of each (round robin), each session gives
// the device up between its steps (Stats.Yields), and each gets the
// tokens it gets alone. A long prompt's prefill goes in chunks with the
// others' steps between them, so the short prompts queued behind it get
// their first tokens first. Every decode path.
func TestSessionsTakeTurns(t *testing.T) {
	m, info, _ := LoadTestDecoder(t, turnCfg)
	r := NewTestRunner(t, turnCfg)
	cases := []struct {
		name string
		o    GenerateOptions
	}{
		{"device greedy", GenerateOptions{}},
		{"sampled", GenerateOptions{Temperature: 0.9, Seed: 5}},
		{"penalties", GenerateOptions{RepeatPenalty: 1.2}},
		{"host greedy", GenerateOptions{HostGreedy: true}},
	}
	switch {
	case testenv.Long():
	case testing.Short():
		cases = cases[:1]
	default:
		cases = cases[:3]
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewTestPool(t, m, info, SessionOptions{})
			const n = 4
			o := c.o
			o.MaxNewTokens = 6
			// Session 0's prompt takes 3 prefill chunks; the others' one.
			prompts := [][]int32{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {1, 5}, {1, 7}, {1, 9}}
			var mu sync.Mutex
			var events []tokenEvent
			results := make([]Result, n)
			errs := make([]error, n)
			wg := startQueued(t, p, n, func(i int) {
				s, err := p.New()
				if err != nil {
					errs[i] = err
					return
				}
				defer s.Close()
				oi := o
				k := 0
				oi.OnToken = func(int32) error {
					mu.Lock()
					events = append(events, tokenEvent{i, k})
					mu.Unlock()
					k++
					return nil
				}
				results[i], errs[i] = s.Generate(context.Background(), prompts[i], oi)
			})
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("session %d: %v", i, errs[i])
				}
				r.Reset()
				want, err := r.Generate(context.Background(), prompts[i], o)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(results[i].Tokens, want.Tokens) {
					t.Errorf("session %d: %v, alone %v", i, results[i].Tokens, want.Tokens)
				}
				if results[i].Stats.Yields == 0 {
					t.Errorf("session %d never gave the device up", i)
				}
			}
			if y := results[0].Stats.Yields; y < 3 {
				t.Errorf("the long prompt's session yielded %d times, want 2 between its chunks and more between its steps", y)
			}
			first := map[int]int{} // session -> index of its first token event
			for j, e := range events {
				if _, ok := first[e.session]; !ok {
					first[e.session] = j
				}
			}
			for i := 1; i < n; i++ {
				if first[i] > first[0] {
					t.Errorf("events %v: session %d's first token came after the long prompt's", events, i)
				}
			}
			// Round robin while all four generate: from the long prompt's
			// first token on, until the first session finishes.
			active := events[first[0]:]
			if len(active) > n*(o.MaxNewTokens-2) {
				active = active[:n*(o.MaxNewTokens-2)]
			}
			for j := 0; j+n <= len(active); j++ {
				seen := map[int]bool{}
				for _, e := range active[j : j+n] {
					seen[e.session] = true
				}
				if len(seen) != n {
					t.Fatalf("events %v: tokens %d..%d are not one from each session", events, j, j+n-1)
				}
			}
			if st := p.Stats(); st.Switches == 0 {
				t.Errorf("pool stats %+v: no switch", st)
			}
		})
	}
}

// TestTurnsCancelWhileQueued: a caller whose context ends while it waits
// for the turn leaves the queue (the turn still reaches those behind it);
// one granted the turn as its context ends passes it on.
func TestTurnsCancelWhileQueued(t *testing.T) {
	var tu turns
	if err := tu.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- tu.acquire(ctx) }()
	got := make(chan error)
	go func() {
		for tu.waiting() != 1 {
			time.Sleep(time.Millisecond)
		}
		got <- tu.acquire(context.Background())
	}()
	for tu.waiting() != 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("cancelled acquire: %v", err)
	}
	if w := tu.waiting(); w != 1 {
		t.Fatalf("%d waiting after the cancel, want 1", w)
	}
	tu.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	tu.release()
	if tu.busy || tu.waiting() != 0 {
		t.Fatalf("turns left busy %v with %d waiting", tu.busy, tu.waiting())
	}
	// Many callers, some cancelled: every acquire is answered and the
	// turn ends free.
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond)
			defer cancel()
			if tu.acquire(ctx) == nil {
				time.Sleep(time.Millisecond)
				tu.release()
			}
		}()
	}
	wg.Wait()
	if tu.busy || tu.waiting() != 0 {
		t.Fatalf("after 32 callers: busy %v, %d waiting", tu.busy, tu.waiting())
	}
}

package llm_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/llm"
)

// sessCfg is testCfg with room for conversations: a 48-position cache.
var sessCfg = func() models.LlamaConfig {
	c := testCfg
	c.MaxSeq = 48
	return c
}()

// lone generates from prompt on a fresh sequence of r, a runner on
// another load of the model: what a session must give.
func lone(t testing.TB, r *llm.Runner, prompt []int32, o llm.GenerateOptions) []int32 {
	t.Helper()
	r.Reset()
	res, err := r.Generate(context.Background(), prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens
}

// engine is one decode path and options that take it.
type engine struct {
	name string
	o    llm.GenerateOptions
}

// engines are the decode paths: greedy on the device (pipelined),
// sampling from the device's top-k, penalties (logits read back every
// step) and greedy on the host (the same path as penalties).
var engines = []engine{
	{"device greedy", llm.GenerateOptions{}},
	{"sampled", llm.GenerateOptions{Temperature: 0.9, TopP: 0.95, Seed: 7}},
	{"penalties", llm.GenerateOptions{Temperature: 0.7, RepeatPenalty: 1.3, Seed: 3}},
	{"host greedy", llm.GenerateOptions{HostGreedy: true}},
}

// testEngines are the engines a test runs: the first three (host greedy
// with the long sweeps too), the device's greedy path alone under -short
// (the race detector's run, which runs TestSessionsConcurrent's mix).
func testEngines() []engine {
	switch {
	case testenv.Long():
		return engines
	case testing.Short():
		return engines[:1]
	}
	return engines[:3]
}

// forEachEnginePool runs run once per test engine, each in a subtest with
// a new pool of opts over m, one loaded sessCfg decoder, and r, a runner
// of the same model for fresh sequences.
func forEachEnginePool(t *testing.T, opts llm.SessionOptions, run func(t *testing.T, e engine, m *wgdelegate.Model, p *llm.Pool, r *llm.Runner)) {
	t.Helper()
	m, info, _ := llm.LoadTestDecoder(t, sessCfg)
	r := llm.NewTestRunner(t, sessCfg)
	for _, e := range testEngines() {
		t.Run(e.name, func(t *testing.T) {
			run(t, e, m, llm.NewTestPool(t, m, info, opts), r)
		})
	}
}

// TestSessionPrefixReuse: a chat's second turn, sent as the whole
// conversation, prefills only its new tokens; an edited conversation
// reuses the common prefix; a repeated prompt feeds its last token again.
// Each call's tokens equal a fresh sequence's on the whole prompt.
func TestSessionPrefixReuse(t *testing.T) {
	ctx := context.Background()
	forEachEnginePool(t, llm.SessionOptions{}, func(t *testing.T, e engine, _ *wgdelegate.Model, p *llm.Pool, r *llm.Runner) {
		s, err := p.New()
		if err != nil {
			t.Fatal(err)
		}
		o := e.o
		o.MaxNewTokens = 5
		turn := func(what string, prompt []int32, reused, prefilled int) []int32 {
			t.Helper()
			res, err := s.Generate(ctx, prompt, o)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if st := res.Stats; st.ReusedTokens != reused || st.PromptTokens != prefilled {
				t.Errorf("%s: %d tokens reused, %d prefilled; want %d and %d", what, st.ReusedTokens, st.PromptTokens, reused, prefilled)
			}
			if want := lone(t, r, prompt, o); !slices.Equal(res.Tokens, want) {
				t.Errorf("%s: %v, a fresh sequence gives %v", what, res.Tokens, want)
			}
			if got, want := s.Tokens(), append(slices.Clone(prompt), res.Tokens[:len(res.Tokens)-1]...); !slices.Equal(got, want) {
				t.Errorf("%s: the cache holds %v, want %v", what, got, want)
			}
			return res.Tokens
		}
		first := []int32{1, 5, 9, 2, 7, 3}
		reply := turn("first turn", first, 0, len(first))
		second := slices.Concat(first, reply, []int32{11, 12, 13})
		// The reply's last token was not fed: it is prefilled with
		// the new message.
		reply2 := turn("second turn", second, len(first)+len(reply)-1, 1+3)
		third := slices.Concat(second, reply2, []int32{20})
		turn("third turn", third, len(second)+len(reply2)-1, 2)
		// An edit of the first message reuses its first two tokens.
		edited := slices.Concat([]int32{1, 5, 8}, reply, []int32{11})
		turn("edited", edited, 2, len(edited)-2)
		// The same prompt again: its last token is fed again.
		turn("repeated", edited, len(edited)-1, 1)
		s.Reset()
		turn("after Reset", edited, 0, len(edited))
	})
}

// TestSessionsInterleaved: sessions of one pool take turns call by call
// (each switch saves one session's cache and restores another's) and
// each call gives a fresh sequence's tokens; a fork goes on like its
// original. Greedy on the device, the steps follow the position the
// graph holds on the device (no refresh), written at each switch.
func TestSessionsInterleaved(t *testing.T) {
	ctx := context.Background()
	forEachEnginePool(t, llm.SessionOptions{MaxSessions: 4}, func(t *testing.T, e engine, m *wgdelegate.Model, p *llm.Pool, r *llm.Runner) {
		o := e.o
		o.MaxNewTokens = 4
		convs := [][]int32{{1, 2, 3, 4, 5}, {1, 9, 8, 7}, {1, 30, 31, 32, 33, 34, 35}}
		sessions := make([]*llm.Session, len(convs))
		for i := range sessions {
			var err error
			if sessions[i], err = p.New(); err != nil {
				t.Fatal(err)
			}
		}
		for round := range 2 {
			for i, s := range sessions {
				res, err := s.Generate(ctx, convs[i], o)
				if err != nil {
					t.Fatalf("round %d, session %d: %v", round, i, err)
				}
				if want := lone(t, r, convs[i], o); !slices.Equal(res.Tokens, want) {
					t.Errorf("round %d, session %d: %v, a fresh sequence gives %v", round, i, res.Tokens, want)
				}
				if round > 0 && res.Stats.ReusedTokens == 0 {
					t.Errorf("round %d, session %d: nothing reused", round, i)
				}
				convs[i] = slices.Concat(convs[i], res.Tokens, []int32{int32(round + 10)})
			}
		}
		if rs := m.RecordStats(); e.name == "device greedy" && (rs.Followed == 0 || rs.Refreshes != 0) {
			// The position is on the device: a pipelined step writes
			// nothing, and a switch writes the position.
			t.Errorf("record stats %+v: want steps following the position on the device, no refresh", rs)
		}
		st := p.Stats()
		if st.Switches < 3 || st.SavedBytes == 0 || st.RestoredBytes == 0 || st.Stores != 3 {
			t.Errorf("pool stats %+v: want at least 3 switches, bytes saved and restored, 3 stores", st)
		}
		if st.StoreBytes != 3*m.StateBytes() {
			t.Errorf("%d store bytes, want 3 × %d", st.StoreBytes, m.StateBytes())
		}
		// Fork session 0 (not in the model now) and session 2 (in it).
		for _, i := range []int{0, 2} {
			f, err := sessions[i].Fork(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Tokens(), sessions[i].Tokens()) {
				t.Errorf("fork of %d holds %v, want %v", i, f.Tokens(), sessions[i].Tokens())
			}
			for k, s := range []*llm.Session{f, sessions[i]} {
				prompt := slices.Concat(convs[i], []int32{int32(20 + k)})
				held := len(s.Tokens()) // a prefix of prompt
				res, err := s.Generate(ctx, prompt, o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Stats.ReusedTokens != held || held == 0 {
					t.Errorf("fork of %d, branch %d: reused %d of the %d held", i, k, res.Stats.ReusedTokens, held)
				}
				if want := lone(t, r, prompt, o); !slices.Equal(res.Tokens, want) {
					t.Errorf("fork of %d, branch %d: %v, a fresh sequence gives %v", i, k, res.Tokens, want)
				}
			}
			f.Close()
		}
	})
}

// TestSessionsConcurrent: many sessions generate at once from their own
// goroutines (run with -race); each gets a fresh sequence's tokens, and
// afterwards no store is left but those of open sessions.
func TestSessionsConcurrent(t *testing.T) {
	ctx := context.Background()
	m, info, _ := llm.LoadTestDecoder(t, sessCfg)
	r := llm.NewTestRunner(t, sessCfg)
	p := llm.NewTestPool(t, m, info, llm.SessionOptions{MaxSessions: 8})
	const n = 8
	prompts := make([][]int32, n)
	opts := make([]llm.GenerateOptions, n)
	want := make([][]int32, n)
	for i := range n {
		prompts[i] = []int32{1, int32(2 + i), int32(3 + 2*i), int32(5 + i%3)}
		opts[i] = engines[i%len(engines)].o
		opts[i].MaxNewTokens = 12
		want[i] = lone(t, r, prompts[i], opts[i])
	}
	got := make([][]int32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := p.New()
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			for tok, err := range s.Stream(ctx, prompts[i], opts[i]) {
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], tok)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("session %d: %v", i, errs[i])
		} else if !slices.Equal(got[i], want[i]) {
			t.Errorf("session %d (%s): %v, a fresh sequence gives %v", i, engines[i%len(engines)].name, got[i], want[i])
		}
	}
	if st := p.Stats(); st.Sessions != 0 || st.Stores != 0 || st.StoreBytes != 0 || st.Waiting != 0 {
		t.Errorf("after every session closed: %+v", st)
	}
}

// TestSessionsFull: MaxSessions and MemoryBudget bound the sessions
// (ErrSessionsFull), a closed session makes room, and bad options are
// ErrOption.
func TestSessionsFull(t *testing.T) {
	m, info, _ := llm.LoadTestDecoder(t, sessCfg)
	for _, c := range []struct {
		name string
		o    llm.SessionOptions
	}{
		{"count", llm.SessionOptions{MaxSessions: 2}},
		{"budget", llm.SessionOptions{MemoryBudget: 2*m.StateBytes() + m.StateBytes()/2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := llm.NewTestPool(t, m, info, c.o)
			a, err := p.New()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.New(); err != nil {
				t.Fatal(err)
			}
			if _, err := p.New(); !errors.Is(err, llm.ErrSessionsFull) {
				t.Fatalf("third session: %v, want ErrSessionsFull", err)
			}
			if _, err := a.Fork(context.Background()); !errors.Is(err, llm.ErrSessionsFull) {
				t.Fatalf("fork of a full pool: %v, want ErrSessionsFull", err)
			}
			a.Close()
			a.Close()
			if _, err := p.New(); err != nil {
				t.Fatalf("after a Close: %v", err)
			}
		})
	}
	for _, o := range []llm.SessionOptions{{MaxSessions: -1}, {MemoryBudget: -1}} {
		if _, err := llm.NewPool(m, info, o); !errors.Is(err, llm.ErrOption) {
			t.Errorf("NewPool(%+v): %v, want ErrOption", o, err)
		}
	}
}

// TestPoolClaimsState: a pool holds the model's state as a runner does;
// Close releases it; a closed pool's and session's calls are ErrClosed;
// requests a session cannot serve are rejected before anything runs.
func TestPoolClaimsState(t *testing.T) {
	ctx := context.Background()
	m, info, _ := llm.LoadTestDecoder(t, sessCfg)
	p, err := llm.NewPool(m, info, llm.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.New(m, info); !errors.Is(err, llm.ErrCacheOwned) {
		t.Errorf("runner on a pooled model: %v, want ErrCacheOwned", err)
	}
	if _, err := llm.NewPool(m, info, llm.SessionOptions{}); !errors.Is(err, llm.ErrCacheOwned) {
		t.Errorf("second pool: %v, want ErrCacheOwned", err)
	}
	s, err := p.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prompt []int32
		o      llm.GenerateOptions
		want   error
	}{
		{nil, llm.GenerateOptions{}, llm.ErrOption},
		{[]int32{1}, llm.GenerateOptions{Temperature: -1}, llm.ErrOption},
		{[]int32{1, 99}, llm.GenerateOptions{}, llm.ErrTokenRange},
		{[]int32{1}, llm.GenerateOptions{StopTokens: []int32{400}}, llm.ErrOption},
		{make([]int32, 49), llm.GenerateOptions{}, llm.ErrPromptTooLong},
		{make([]int32, 40), llm.GenerateOptions{MaxNewTokens: 10}, llm.ErrPositionPastEnd},
	} {
		if _, err := s.Generate(ctx, c.prompt, c.o); !errors.Is(err, c.want) {
			t.Errorf("Generate(%d tokens, %+v): %v, want %v", len(c.prompt), c.o, err, c.want)
		}
	}
	if st := p.Stats(); st.Switches != 0 || s.Pos() != 0 {
		t.Errorf("rejected requests ran: %+v, Pos %d", st, s.Pos())
	}
	if _, err := s.Generate(ctx, []int32{1, 2}, llm.GenerateOptions{MaxNewTokens: 2}); err != nil {
		t.Fatal(err)
	}
	closed, err := p.New()
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := closed.Generate(ctx, []int32{1}, llm.GenerateOptions{}); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("closed session: %v, want ErrClosed", err)
	}
	p.Close()
	p.Close()
	if _, err := p.New(); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("New on a closed pool: %v, want ErrClosed", err)
	}
	if _, err := s.Generate(ctx, []int32{1}, llm.GenerateOptions{}); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("session of a closed pool: %v, want ErrClosed", err)
	}
	if _, err := s.Fork(ctx); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("fork in a closed pool: %v, want ErrClosed", err)
	}
	r, err := llm.New(m, info)
	if err != nil {
		t.Fatalf("runner after the pool's Close: %v", err)
	}
	r.Close()
}

// TestSessionCancelKeepsPrefix: a generation cancelled from its OnToken
// leaves the session holding a prefix of its sequence, which the next
// call reuses and gets right; the pool's other sessions are unaffected.
func TestSessionCancelKeepsPrefix(t *testing.T) {
	m, info, _ := llm.LoadTestDecoder(t, sessCfg)
	r := llm.NewTestRunner(t, sessCfg)
	p := llm.NewTestPool(t, m, info, llm.SessionOptions{})
	for _, e := range testEngines() {
		t.Run(e.name, func(t *testing.T) {
			s, err := p.New()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			o := e.o
			o.MaxNewTokens = 10
			n := 0
			o.OnToken = func(int32) error {
				if n++; n == 3 {
					cancel()
				}
				return nil
			}
			prompt := []int32{1, 4, 4, 8}
			_, err = s.Generate(ctx, prompt, o)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled generation: %v", err)
			}
			if got := s.Tokens(); len(got) < len(prompt) || !slices.Equal(got[:len(prompt)], prompt) {
				t.Fatalf("after the cancel the cache holds %v", got)
			}
			o.OnToken = nil
			res, err := s.Generate(context.Background(), prompt, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.ReusedTokens != len(prompt)-1 {
				t.Errorf("reused %d tokens, want %d", res.Stats.ReusedTokens, len(prompt)-1)
			}
			if want := lone(t, r, prompt, o); !slices.Equal(res.Tokens, want) {
				t.Errorf("after a cancel: %v, want %v", res.Tokens, want)
			}
		})
	}
}

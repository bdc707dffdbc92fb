package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
	"github.com/wgdelegate/wgdelegate/llm/server"
)

// loadCase is one request of the load test and the reply it must get.
type loadCase struct {
	chat     bool
	msgs     []chat.Message
	prompt   string
	stream   bool
	cancel   bool // the client goes away after its first chunk
	temp     float64
	seed     int64
	want     string
	finish   string
	complete int // completion tokens
}

// TestLoad sends 24 requests from 8 concurrent clients (64 from 16 in the
// long sweeps, testenv.Long) to a server with 4 sessions: chat and completions, streamed and
// not, greedy and seeded sampling, every eighth streamed one abandoned
// after its first chunk. Every other request must get exactly the reply a
// lone runner gives; afterwards no goroutine, session, saved state or
// device buffer of the model is left. It logs the time to first token
// (p50, p99) and the tokens per second, measured by the clients (no
// assertion on them).
func TestLoad(t *testing.T) {
	requests, clients := 24, 8
	if testenv.Long() && !testing.Short() {
		requests, clients = 64, 16
	}
	const budget = 8
	f := getFixture(t)
	ref := newReference(t, f)
	// Few distinct requests, so that sessions find their conversations
	// (and the reference has less to compute).
	users := []string{"Hello!", stopMessage, "What is a tree?", "Why?"}
	texts := []string{"Once upon a time", "The cat", "In the morning"}
	cases := make([]loadCase, requests)
	memo := map[string]llm.Result{} // the reference's replies, by prompt and sampling
	for i := range cases {
		c := loadCase{stream: i%2 == 1, cancel: i%8 == 5}
		if i%4 == 3 {
			c.temp, c.seed = 0.8, int64(i%3+1)
		}
		var prompt []int32
		stops := []int32{f.tok.EOS()}
		if i%3 != 2 {
			c.chat = true
			c.msgs = []chat.Message{{Role: "user", Content: users[i%len(users)]}}
			if i%5 == 0 { // a second turn
				c.msgs = append(c.msgs, chat.Message{Role: "assistant", Content: "Yes."}, chat.Message{Role: "user", Content: users[(i+1)%len(users)]})
			}
			var err error
			if prompt, err = chatPrompt(f.tok, f.tpl, c.msgs); err != nil {
				t.Fatal(err)
			}
			stops = []int32{f.tok.EOS(), imEnd}
		} else {
			c.prompt = texts[i%len(texts)]
			var err error
			if prompt, err = f.tok.Encode(c.prompt, f.tok.BOS() >= 0); err != nil {
				t.Fatal(err)
			}
		}
		o := llm.GenerateOptions{MaxNewTokens: budget, Temperature: c.temp, TopP: 1, Seed: uint64(c.seed), StopTokens: stops}
		key := fmt.Sprint(prompt, o.Temperature, o.Seed)
		res, ok := memo[key]
		if !ok {
			res = ref.generate(t, prompt, o)
			memo[key] = res
		}
		c.want = wire(decode(f.tok, prompt[len(prompt)-1], res.Tokens))
		c.complete = len(res.Tokens)
		c.finish = "length"
		if res.Stop >= 0 {
			c.finish = "stop"
		}
		cases[i] = c
	}

	runtime.GC()
	goroutinesBefore := runtime.NumGoroutine()
	m, err := wgdelegate.Load(context.Background(), f.pte)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := llm.NewPool(m, f.info, llm.SessionOptions{MaxSessions: 4})
	if err != nil {
		t.Fatal(err)
	}
	memBefore := m.MemoryStats()
	srv := server.New(server.Options{MaxQueue: 64, Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(srv)
	if err := srv.SetModel(server.Model{ID: modelID, Pool: p, Tokenizer: f.tok, Template: f.tpl, StopTokens: []int32{f.tok.EOS()}}); err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	client := openai.NewClient(option.WithBaseURL(hs.URL+"/v1/"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: transport}), option.WithRequestTimeout(5*time.Minute))

	type result struct {
		ttft   time.Duration
		tokens int
		err    error
	}
	results := make([]result, requests)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < requests; i += clients {
				results[i] = runCase(client, cases[i], budget)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)

	var ttfts []time.Duration
	tokens, cancelled := 0, 0
	for i, r := range results {
		c := cases[i]
		switch {
		case c.cancel:
			cancelled++
		case r.err != nil:
			t.Errorf("request %d: %v", i, r.err)
		default:
			ttfts = append(ttfts, r.ttft)
			tokens += r.tokens
		}
	}

	// Everything settles: no request in flight, every session idle.
	waitFor(t, "the requests to end", func() bool { return srv.InFlight() == 0 })
	open, idle, waiting := server.SessionCounts(srv)
	if open == 0 || open > 4 || idle != open || waiting != 0 {
		t.Errorf("after the load: %d sessions open, %d idle, %d waiting", open, idle, waiting)
	}
	st := p.Stats()
	t.Logf("pool: %d sessions, %d saved states (%d bytes each), %d switches, %d bytes saved, %d restored",
		st.Sessions, st.Stores, st.StateBytes, st.Switches, st.SavedBytes, st.RestoredBytes)

	hs.Close()
	transport.CloseIdleConnections()
	srv.Close()
	if st := p.Stats(); st.Sessions != 0 || st.Stores != 0 || st.StoreBytes != 0 || st.Waiting != 0 {
		t.Errorf("after the server's Close: %+v", st)
	}
	if got := m.MemoryStats(); got.TotalBytes() != memBefore.TotalBytes() || got.NumTensors != memBefore.NumTensors {
		t.Errorf("the model's device memory went from %d bytes in %d tensors to %d in %d", memBefore.TotalBytes(), memBefore.NumTensors, got.TotalBytes(), got.NumTensors)
	}
	p.Close()
	m.Close()
	waitFor(t, "the goroutines to end", func() bool {
		runtime.GC()
		return runtime.NumGoroutine() <= goroutinesBefore
	})

	slices.Sort(ttfts)
	pct := func(q float64) time.Duration {
		if len(ttfts) == 0 {
			return 0
		}
		return ttfts[min(len(ttfts)-1, int(q*float64(len(ttfts))))]
	}
	t.Logf("%d requests (%d abandoned) from %d clients in %v: time to first token p50 %v, p99 %v; %d tokens, %.1f tokens/s",
		requests, cancelled, clients, wall.Round(time.Millisecond), pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
		tokens, float64(tokens)/wall.Seconds())
}

// runCase sends one load-test request and checks its reply.
func runCase(client openai.Client, c loadCase, budget int) (r struct {
	ttft   time.Duration
	tokens int
	err    error
}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	check := func(text, finish string, completion int64) {
		if text != c.want || finish != c.finish || (completion >= 0 && completion != int64(c.complete)) {
			r.err = fmt.Errorf("got %q (%s, %d tokens), want %q (%s, %d tokens)", text, finish, completion, c.want, c.finish, c.complete)
		}
		r.tokens = c.complete
	}
	if c.chat {
		p := openai.ChatCompletionNewParams{Model: modelID, Temperature: openai.Float(c.temp), MaxTokens: openai.Int(int64(budget)), Seed: openai.Int(c.seed)}
		for _, m := range c.msgs {
			if m.Role == "assistant" {
				p.Messages = append(p.Messages, openai.AssistantMessage(m.Content))
			} else {
				p.Messages = append(p.Messages, openai.UserMessage(m.Content))
			}
		}
		if !c.stream {
			resp, err := client.Chat.Completions.New(ctx, p)
			r.ttft = time.Since(t0)
			if err != nil {
				r.err = err
				return r
			}
			check(resp.Choices[0].Message.Content, resp.Choices[0].FinishReason, resp.Usage.CompletionTokens)
			return r
		}
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := client.Chat.Completions.NewStreaming(ctx, p)
		defer st.Close()
		var text strings.Builder
		finish, completion := "", int64(-1)
		for st.Next() {
			ch := st.Current()
			if len(ch.Choices) > 0 {
				if ch.Choices[0].Delta.Content != "" && r.ttft == 0 {
					r.ttft = time.Since(t0)
					if c.cancel {
						cancel()
						return r
					}
				}
				text.WriteString(ch.Choices[0].Delta.Content)
				if ch.Choices[0].FinishReason != "" {
					finish = ch.Choices[0].FinishReason
				}
			}
			if ch.Usage.TotalTokens > 0 {
				completion = ch.Usage.CompletionTokens
			}
		}
		if err := st.Err(); err != nil {
			r.err = err
			return r
		}
		check(text.String(), finish, completion)
		return r
	}
	p := openai.CompletionNewParams{Model: modelID, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(c.prompt)},
		Temperature: openai.Float(c.temp), MaxTokens: openai.Int(int64(budget)), Seed: openai.Int(c.seed)}
	if !c.stream {
		resp, err := client.Completions.New(ctx, p)
		r.ttft = time.Since(t0)
		if err != nil {
			r.err = err
			return r
		}
		check(resp.Choices[0].Text, string(resp.Choices[0].FinishReason), resp.Usage.CompletionTokens)
		return r
	}
	st := client.Completions.NewStreaming(ctx, p)
	defer st.Close()
	var text strings.Builder
	finish := ""
	for st.Next() {
		ch := st.Current()
		if len(ch.Choices) == 0 {
			continue
		}
		if ch.Choices[0].Text != "" && r.ttft == 0 {
			r.ttft = time.Since(t0)
			if c.cancel {
				cancel()
				return r
			}
		}
		text.WriteString(ch.Choices[0].Text)
		if ch.Choices[0].FinishReason != "" {
			finish = string(ch.Choices[0].FinishReason)
		}
	}
	if err := st.Err(); err != nil {
		r.err = err
		return r
	}
	check(text.String(), finish, -1)
	return r
}

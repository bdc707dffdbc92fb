package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/wgdelegate/wgdelegate/llm/chat"
	"github.com/wgdelegate/wgdelegate/llm/server"
)

// waitFor polls cond (for what another goroutine does) until it holds,
// failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestQueueFull: with the only session busy, one request waits (the
// queue holds one) and the next is refused with a 429 at once; the
// waiting one is answered when the session comes back.
func TestQueueFull(t *testing.T) {
	ctx := context.Background()
	f := getFixture(t)
	sv := serve(t, f, server.Options{MaxQueue: 1}, 1)
	release, err := server.HoldSession(ctx, sv.srv)
	if err != nil {
		t.Fatal(err)
	}
	params := openai.CompletionNewParams{Model: modelID, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hello")},
		MaxTokens: openai.Int(3), Temperature: openai.Float(0)}
	queued := make(chan error, 1)
	go func() {
		_, err := sv.client.Completions.New(ctx, params)
		queued <- err
	}()
	waitFor(t, "the request to queue", func() bool { _, _, w := server.SessionCounts(sv.srv); return w == 1 })
	// A bounded wait: without the queue bound this request would wait
	// for the session too.
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = sv.client.Completions.New(short, params)
	if ae := apiError(t, err); ae.StatusCode != http.StatusTooManyRequests || ae.Code != "queue_full" {
		t.Fatalf("past the queue: %d %q", ae.StatusCode, ae.Code)
	}
	release()
	if err := <-queued; err != nil {
		t.Fatalf("the queued request: %v", err)
	}
	if open, idle, w := server.SessionCounts(sv.srv); open != 1 || idle != 1 || w != 0 {
		t.Errorf("after: %d open, %d idle, %d waiting", open, idle, w)
	}
}

// TestClientDisconnectCancels: a streaming client that goes away after
// its first token ends its generation (no more tokens are generated) and
// its session comes back idle, holding what was generated.
func TestClientDisconnectCancels(t *testing.T) {
	f := getFixture(t)
	const budget = 40
	var tokens atomic.Int32
	firstSeen := make(chan struct{})
	sv := serveWith(t, f, server.Options{}, 1, func(ctx context.Context) {
		if tokens.Add(1) == 1 {
			close(firstSeen)
			// Hold the generation until the server sees the client gone.
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	p := greedyChat([]chat.Message{{Role: "user", Content: "Hello there"}}, budget)
	st := sv.client.Chat.Completions.NewStreaming(ctx, p)
	<-firstSeen
	cancel() // the client goes away
	for st.Next() {
	}
	st.Close()
	waitFor(t, "the session to come back", func() bool { _, idle, _ := server.SessionCounts(sv.srv); return idle == 1 })
	if n := tokens.Load(); n >= budget {
		t.Errorf("%d tokens generated after the client left, want fewer than %d", n, budget)
	}
	waitFor(t, "the request to end", func() bool { return sv.srv.InFlight() == 0 })
	// The server goes on serving.
	if _, err := sv.client.Chat.Completions.New(context.Background(), greedyChat([]chat.Message{{Role: "user", Content: stopMessage}}, 4)); err != nil {
		t.Fatal(err)
	}
}

// TestDrainFinishesInFlight: a request running when the server starts
// draining gets its whole answer while new ones are refused; Abort ends
// one still running.
func TestDrainFinishesInFlight(t *testing.T) {
	f := getFixture(t)
	ref := newReference(t, f)
	msgs := []chat.Message{{Role: "user", Content: "Once more"}}
	_, want, _ := ref.chatReply(t, msgs, 8)
	gate := make(chan struct{})
	var once atomic.Bool
	started := make(chan struct{})
	sv := serveWith(t, f, server.Options{}, 2, func(ctx context.Context) {
		if once.CompareAndSwap(false, true) {
			close(started)
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
	})
	done := make(chan *openai.ChatCompletion, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := sv.client.Chat.Completions.New(context.Background(), greedyChat(msgs, 8))
		done <- r
		errc <- err
	}()
	<-started
	sv.srv.Drain()
	if status, _ := rawPost(t, sv.http.URL+"/v1/chat/completions", "", `{"model":"tiny-qwen","messages":[{"role":"user","content":"hi"}]}`); status != http.StatusServiceUnavailable {
		t.Errorf("a new request while draining: %d", status)
	}
	close(gate)
	r, err := <-done, <-errc
	if err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	if r.Choices[0].Message.Content != want {
		t.Errorf("the request in flight: %q, want %q", r.Choices[0].Message.Content, want)
	}

	// Abort: a generation held until it is cancelled.
	f2 := getFixture(t)
	held := make(chan struct{})
	var once2 atomic.Bool
	sv2 := serveWith(t, f2, server.Options{}, 1, func(ctx context.Context) {
		if once2.CompareAndSwap(false, true) {
			close(held)
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
		}
	})
	go func() {
		_, err := sv2.client.Chat.Completions.New(context.Background(), greedyChat(msgs, 30))
		errc <- err
	}()
	<-held
	sv2.srv.Drain()
	sv2.srv.Abort()
	err = <-errc
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "cancelled") {
		t.Errorf("an aborted request: %v, want a 503 saying it was cancelled", err)
	}
}

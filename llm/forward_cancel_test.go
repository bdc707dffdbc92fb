package llm_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

// cancelAfter is a context canceled at its n+1-th look (Err or Done):
// a cancellation at a chosen point of a call, without timing.
type cancelAfter struct {
	context.Context
	mu    sync.Mutex
	n     int
	done  chan struct{}
	fired bool
}

func newCancelAfter(n int) *cancelAfter {
	return &cancelAfter{Context: context.Background(), n: n, done: make(chan struct{})}
}

func (c *cancelAfter) look() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n < 0 && !c.fired {
		c.fired = true
		close(c.done)
	}
}

func (c *cancelAfter) Done() <-chan struct{} { c.look(); return c.done }

func (c *cancelAfter) Err() error {
	c.look()
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// TestForwardCanceledMidPrefill: a Forward canceled after the prompt's
// first chunk keeps what it fed; the tokens it did not feed are fed by the
// next Forward before its own, and its logits are those of the whole
// sequence fed in one call.
func TestForwardCanceledMidPrefill(t *testing.T) {
	ctx := context.Background()
	r := llm.NewTestRunner(t, testCfg)
	prompt := []int32{1, 7, 23, 5, 39, 0, 12, 3, 9} // 4 + 4 + 1 tokens an Execute
	more := []int32{17, 2}
	want, err := r.Forward(ctx, slices.Concat(prompt, more))
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Clone(want)
	// The first cancellation point past which some but not all of the
	// prompt is in the cache.
	partial := false
	for n := 0; n < 200 && !partial; n++ {
		r.Reset()
		_, err := r.Forward(newCancelAfter(n), prompt)
		if err == nil {
			t.Fatalf("cancellation at look %d: the whole prompt fed, no cancellation point left between chunks", n)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancellation at look %d: %v, want context.Canceled", n, err)
		}
		partial = r.Pos() > 0 && r.Pos() < int64(len(prompt))
	}
	if !partial {
		t.Fatal("no cancellation point left part of the prompt fed")
	}
	fed := r.Pos()
	got, err := r.Forward(ctx, more)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pos() != int64(len(prompt)+len(more)) {
		t.Fatalf("after %d of the prompt's %d tokens and %d more: Pos %d, want %d", fed, len(prompt), len(more), r.Pos(), len(prompt)+len(more))
	}
	// The chunks fall at the same positions both ways (fed is a whole
	// number of 4-token chunks), so the logits are equal, not close.
	if !slices.Equal(got, want) {
		t.Fatalf("logits after a canceled prefill (%d of %d fed) differ from one call's", fed, len(prompt))
	}
}

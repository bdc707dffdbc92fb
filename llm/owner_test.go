package llm_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/llm"
)

// TestRunnerOwnsCache: a second runner on one model is refused with
// ErrCacheOwned until the first is closed; the closed runner refuses to
// run; a runner made after it generates what a fresh model does.
func TestRunnerOwnsCache(t *testing.T) {
	ctx := context.Background()
	m, info, _ := llm.LoadTestDecoder(t, testCfg)
	first, err := llm.New(m, info)
	if err != nil {
		t.Fatal(err)
	}
	greedy := llm.GenerateOptions{MaxNewTokens: 5}
	want, err := first.Generate(ctx, []int32{1, 7}, greedy)
	if err != nil {
		t.Fatal(err)
	}
	_, err = llm.New(m, info)
	var se *wgdelegate.StateClaimedError
	if !errors.Is(err, llm.ErrCacheOwned) || !errors.As(err, &se) || se.Owner != "an llm.Runner" {
		t.Fatalf("second New: %v, want ErrCacheOwned naming the runner", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := first.Generate(ctx, []int32{1}, greedy); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("Generate on a closed runner: %v, want ErrClosed", err)
	}
	if _, err := first.Forward(ctx, []int32{1}); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("Forward on a closed runner: %v, want ErrClosed", err)
	}
	second, err := llm.New(m, info)
	if err != nil {
		t.Fatalf("New after the first runner's Close: %v", err)
	}
	defer second.Close()
	got, err := second.Generate(ctx, []int32{1, 7}, greedy)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Errorf("second runner: %v, want %v", got.Tokens, want.Tokens)
	}
	// The model itself was not closed by either runner.
	if _, _, err := m.InputInfo(0); err != nil {
		t.Errorf("model after its runners' Close: %v", err)
	}
}

// TestRunnerOwnsCacheConcurrent: of runners made at once on one model,
// exactly one gets it (run with -race).
func TestRunnerOwnsCacheConcurrent(t *testing.T) {
	m, info, _ := llm.LoadTestDecoder(t, testCfg)
	const n = 8
	runners := make([]*llm.Runner, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runners[i], errs[i] = llm.New(m, info)
		}()
	}
	wg.Wait()
	won := 0
	for i := range n {
		switch {
		case errs[i] == nil:
			won++
			defer runners[i].Close()
		case !errors.Is(errs[i], llm.ErrCacheOwned):
			t.Errorf("runner %d: %v", i, errs[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d runners got the cache, want 1", won)
	}
}

// TestOpenOwnsItsModel: runners from Load (and Open) each own a model of
// their own, so several live side by side, and Close closes the model.
func TestOpenOwnsItsModel(t *testing.T) {
	ctx := context.Background()
	_, _, f := llm.LoadTestDecoder(t, testCfg)
	a, err := llm.Load(ctx, f.PTE)
	if err != nil {
		t.Fatal(err)
	}
	b, err := llm.Load(ctx, f.PTE)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ra, err := a.Generate(ctx, []int32{1}, llm.GenerateOptions{MaxNewTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Generate(ctx, []int32{1}, llm.GenerateOptions{MaxNewTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ra.Tokens, rb.Tokens) {
		t.Errorf("two loads: %v and %v", ra.Tokens, rb.Tokens)
	}
	a.Close()
	if _, err := a.Model().Execute(ctx); !errors.Is(err, wgdelegate.ErrClosed) {
		t.Errorf("the model of a closed Load runner: %v, want ErrClosed", err)
	}
}

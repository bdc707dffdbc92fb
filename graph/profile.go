package graph

import (
	"context"
	"fmt"
	"time"
)

// Profile is the timing of one profiled run of a graph's dispatches.
type Profile struct {
	// Source is how the times were taken: "gpu-timestamp" (timestamp
	// queries around each dispatch) or "cpu" (each dispatch submitted
	// alone and waited for, submission latency included).
	Source string
	// Dispatches are the recorded dispatches in execution order, each with
	// its time.
	Dispatches []DispatchTiming
}

// DispatchTiming is one dispatch and how long it took.
type DispatchTiming struct {
	DispatchInfo
	Duration time.Duration
}

// Total is the sum of the dispatch times.
func (p Profile) Total() time.Duration {
	var t time.Duration
	for _, d := range p.Dispatches {
		t += d.Duration
	}
	return t
}

// Profile executes the graph on inputs (as Execute does, recording for new
// shapes first), then runs its dispatches once more, each timed on its own
// (see ProfileReplay). A graph that keeps state across calls (a KV cache)
// sees both runs.
func (g *WebGPUGraph) Profile(ctx context.Context, inputs []Tensor) (Profile, error) {
	if _, err := g.Execute(ctx, inputs); err != nil {
		return Profile{}, err
	}
	return g.ProfileReplay(ctx)
}

// ProfileReplay runs the dispatches recorded by the last Execute again, on
// the inputs it uploaded, timing each: with GPU timestamp queries where the
// device has them, otherwise on the CPU with each dispatch submitted alone.
// No outputs are read back. Each dispatch runs in a compute pass of its own,
// so the total is an upper bound of Execute's GPU time.
func (g *WebGPUGraph) ProfileReplay(ctx context.Context) (Profile, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return Profile{}, ErrClosed
	}
	if g.stale {
		return Profile{}, fmt.Errorf("graph: profile: no successful Execute to replay")
	}
	durs, source, err := g.prog.Profile(ctx)
	if err != nil {
		return Profile{}, fmt.Errorf("graph: profile: %w", err)
	}
	if len(durs) != len(g.records) {
		return Profile{}, fmt.Errorf("graph: profile: %d times for %d dispatches", len(durs), len(g.records))
	}
	p := Profile{Source: source, Dispatches: make([]DispatchTiming, len(durs))}
	for i := range g.records {
		p.Dispatches[i] = DispatchTiming{DispatchInfo: g.dispatchInfo(i), Duration: durs[i]}
	}
	return p, nil
}

package graph

import (
	"context"
	"fmt"
	"slices"
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
	// Pass is the GPU time of all the dispatches in one compute pass, as
	// Execute runs them (the median of PassRuns runs, timed as Source
	// says: with "cpu", a submission waited for on the host): the step's
	// own GPU time, without the per-pass cost each of Dispatches' times
	// carries and with the overlap one pass allows. Total is an upper
	// bound of it.
	Pass time.Duration
}

// PassRuns is how many one-pass runs ProfileReplay times for Profile.Pass.
const PassRuns = 3

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
// so the total is an upper bound of Execute's GPU time; then the dispatches
// run PassRuns times more in one pass each, as Execute runs them, for
// Profile.Pass.
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
	var passes [PassRuns]time.Duration
	for i := range passes {
		t, _, err := g.prog.ProfilePass(ctx)
		if err != nil {
			return Profile{}, fmt.Errorf("graph: profile: one pass: %w", err)
		}
		passes[i] = t
	}
	slices.Sort(passes[:])
	p.Pass = passes[PassRuns/2]
	return p, nil
}

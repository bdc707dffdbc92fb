package wgdelegate

import (
	"context"
	"fmt"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
)

// Profile is the timing of one run of a model, per delegate graph.
type Profile struct {
	// Source is how the times were taken: "gpu-timestamp" (GPU timestamp
	// queries around each dispatch) or "cpu" (each dispatch submitted alone
	// and timed on the host, submission latency included).
	Source string
	// Graphs holds one profile per delegate graph, in the order the model
	// built them.
	Graphs []graph.Profile
}

// Profile executes the model on inputs (as Execute does), then runs every
// delegate graph's dispatches once more, each in a compute pass of its own
// and timed on its own: with GPU timestamp queries when the device has them,
// on the CPU otherwise. The times show where GPU time goes; their sum is an
// upper bound of Execute's GPU time; Profile.Pass is the same dispatches'
// time in one pass each, as Execute runs them. A model that keeps state
// across calls (a KV cache) sees every run (each replays the step Execute
// ran, on the same inputs).
func (m *Model) Profile(ctx context.Context, inputs ...Tensor) (Profile, error) {
	if _, err := m.Execute(ctx, inputs...); err != nil {
		return Profile{}, err
	}
	var p Profile
	for i, g := range m.graphs {
		gp, err := g.ProfileReplay(ctx)
		if err != nil {
			return Profile{}, fmt.Errorf("wgdelegate: delegate graph %d: %w", i, err)
		}
		if p.Source == "" || gp.Source == "cpu" {
			p.Source = gp.Source
		}
		p.Graphs = append(p.Graphs, gp)
	}
	return p, nil
}

// Pass is the GPU time of one run of the model's dispatches as Execute
// runs them, one compute pass per delegate graph (the sum of the graphs'
// graph.Profile.Pass): the step's own GPU time, which the sum of the
// per-dispatch times (each in a pass of its own) overstates by a pass's
// cost per dispatch.
func (p Profile) Pass() time.Duration {
	var t time.Duration
	for _, g := range p.Graphs {
		t += g.Pass
	}
	return t
}

// NumCalls returns how many delegate calls one Execute makes: one GPU
// submission each.
func (m *Model) NumCalls() int { return len(m.steps) }

// PipelineStats counts a device's pipeline cache lookups since it opened:
// Hits found a compiled pipeline, Created compiled one.
type PipelineStats struct{ Hits, Created int64 }

// PipelineStats reports the device's pipeline cache counters.
func (d *Device) PipelineStats() PipelineStats {
	s := d.d.PipelineStats()
	return PipelineStats{Hits: s.Hits, Created: s.Created}
}

// HasTimestamps reports whether the device has GPU timestamp queries, which
// Model.Profile uses when present.
func (d *Device) HasTimestamps() bool { return d.d.HasTimestamps() }

package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBenchJSON(t *testing.T) {
	dir := t.TempDir()
	model := chainModel(t, dir)
	out := mustRun(t, "bench", "--json", "--no-fusion", "--iterations", "5", "--packed-cache", t.TempDir(), model)
	// Exactly the documented fields, nested ones included.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	want := []string{"load_ms", "first_execute_ms", "execute_ms", "dispatches_per_execute", "submits_per_execute",
		"allocs_per_execute", "load_heap_bytes", "gpu_bytes", "pipelines", "packed_cache"}
	if got := slices.Sorted(maps.Keys(raw)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("fields %v, want %v", got, want)
	}
	for k, sub := range map[string][]string{"execute_ms": {"max", "median", "min"}, "pipelines": {"created", "hits"}, "packed_cache": {"bytes", "corrupt", "hits", "misses"}} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw[k], &m); err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, sub) {
			t.Errorf("%s fields %v, want %v", k, got, sub)
		}
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.LoadMS <= 0 || r.FirstExecuteMS <= 0 || r.ExecuteMS.Min <= 0 || r.ExecuteMS.Min > r.ExecuteMS.Median || r.ExecuteMS.Median > r.ExecuteMS.Max {
		t.Errorf("times %+v", r)
	}
	if r.DispatchesPerExecute != 3 || r.SubmitsPerExecute != 1 {
		t.Errorf("dispatches %d, submits %d; want 3, 1", r.DispatchesPerExecute, r.SubmitsPerExecute)
	}
	// Execute returns one new output tensor (slice, shape, data) plus the
	// outputs slice; a few more for the graph bookkeeping. Loose bound:
	// the point is that it is small and constant, not its exact value.
	if r.AllocsPerExecute <= 0 || r.AllocsPerExecute > 50 {
		t.Errorf("allocs per execute %v", r.AllocsPerExecute)
	}
	if r.LoadHeapBytes == 0 || r.GPUBytes < 4*3*(1<<14) {
		t.Errorf("load heap %d, gpu bytes %d", r.LoadHeapBytes, r.GPUBytes)
	}
	// Three kernels; the shared test device may have compiled them already.
	if r.Pipelines.Created+r.Pipelines.Hits < 3 {
		t.Errorf("pipelines %+v", r.Pipelines)
	}
	// A second load on the same device compiles nothing.
	out = mustRun(t, "bench", "--json", "--no-fusion", "--iterations", "1", model)
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Pipelines.Created != 0 || r.Pipelines.Hits < 3 {
		t.Errorf("second load: pipelines %+v", r.Pipelines)
	}
	// With fusion (the default) the chain is one kernel.
	out = mustRun(t, "bench", "--json", "--iterations", "1", model)
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.DispatchesPerExecute != 1 {
		t.Errorf("fused: %d dispatches, want 1", r.DispatchesPerExecute)
	}
}

func TestBenchText(t *testing.T) {
	f := newFixture(t)
	out := mustRun(t, "bench", "-n", "2", "--data", f.ptd, "--input", f.x, f.pteSegment)
	for _, w := range []string{"load ", "first execute", "execute ", "median", "dispatches per execute", "submits per execute",
		"allocs per execute", "load heap", "gpu memory", "pipelines", "packed cache"} {
		if !strings.Contains(out, w) {
			t.Errorf("bench output lacks %q:\n%s", w, out)
		}
	}
	if !regexp.MustCompile(`(?m)^submits per execute +1$`).MatchString(out) {
		t.Errorf("submits per execute is not 1:\n%s", out)
	}
	mustFail(t, []string{"--iterations"}, "bench", "--iterations", "-1", f.pteSegment)
	mustFail(t, []string{"no MODEL"}, "bench")
	mustFail(t, []string{"not a .pte"}, "bench", f.x)
}

func TestIterProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newIterProgress(progressOut{w: &buf, delay: time.Hour}, "m.pte", 3)
	p.set(1)
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("quick run printed %q", buf.String())
	}
	// Not a terminal and not --verbose: nothing, however slow.
	p = newIterProgress(newProgressOut(&buf, false), "m.pte", 3)
	p.delay = 0
	p.set(3)
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("progress on a pipe without --verbose: %q", buf.String())
	}
	p = newIterProgress(progressOut{w: &buf}, "m.pte", 3)
	for i := 1; i <= 3; i++ {
		p.set(i)
	}
	p.finish()
	p.finish()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "bench m.pte: execute 1/3") || !strings.HasPrefix(lines[1], "bench m.pte: execute 3/3") {
		t.Errorf("plain progress %q", buf.String())
	}
	buf.Reset()
	p = newIterProgress(progressOut{w: &buf, tty: true}, "m.pte", 4)
	p.set(2)
	p.finish()
	if s := buf.String(); !strings.Contains(s, "\r\033[K[############            ] bench m.pte: execute 2/4") || !strings.HasSuffix(s, "\n") {
		t.Errorf("bar %q", s)
	}
}

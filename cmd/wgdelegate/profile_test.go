package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// chainModel writes a raw blob x, y [n] -> add -> mul -> relu -> out, three
// ops of one dispatch each, and returns its path.
func chainModel(t *testing.T, dir string) string {
	t.Helper()
	// Tests that want one dispatch per op load it with --no-fusion:
	// elementwise fusion would run the chain as one kernel.
	const n = 1 << 14
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{n}, -1)
	y := b.Tensor(f, []uint32{n}, -1)
	s := b.Tensor(f, []uint32{n}, -1)
	b.Op("aten.add.Tensor", x, y, b.Int(1), s)
	p := b.Tensor(f, []uint32{n}, -1)
	b.Op("aten.mul.Tensor", s, x, p)
	r := b.Tensor(f, []uint32{n}, -1)
	b.Op("aten.relu.default", p, r)
	b.Inputs(x, y)
	b.Outputs(r)
	blob := mustBlob(t, b)
	return write(t, dir, "chain.bin", blob)
}

func TestProfileTable(t *testing.T) {
	dir := t.TempDir()
	model := chainModel(t, dir)
	out := mustRun(t, "profile", "--no-fusion", "--iterations", "2", model)
	if !strings.HasPrefix(out, "timing: gpu-timestamp") && !strings.HasPrefix(out, "timing: cpu") {
		t.Errorf("no timing source:\n%s", out)
	}
	if !sharedDevice.HasTimestamps() {
		t.Log("no timestamp queries: profile timed on the CPU")
	}
	head, rows, ok := strings.Cut(out, "op  name")
	if !ok {
		t.Fatalf("no table header:\n%s", out)
	}
	if !strings.Contains(head, "3 dispatches") || !strings.Contains(head, "mean of 2") {
		t.Errorf("header %q", head)
	}
	lines := strings.Split(strings.TrimSpace(rows), "\n")[1:]
	if len(lines) != 3 {
		t.Fatalf("%d op rows:\n%s", len(lines), out)
	}
	var totals []float64
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 6 {
			t.Fatalf("row %q", l)
		}
		seen[f[1]] = true
		var v float64
		if _, err := fmt.Sscan(f[4], &v); err != nil || v <= 0 {
			t.Errorf("row %q: total %q", l, f[4])
		}
		totals = append(totals, v)
	}
	if !slices.IsSortedFunc(totals, func(a, b float64) int { return cmp.Compare(b, a) }) {
		t.Errorf("rows not sorted by total: %v", totals)
	}
	for _, name := range []string{"aten.add.Tensor", "aten.mul.Tensor", "aten.relu.default"} {
		if !seen[name] {
			t.Errorf("no row for %s:\n%s", name, out)
		}
	}
}

func TestProfileJSONAndTrace(t *testing.T) {
	dir := t.TempDir()
	model := chainModel(t, dir)
	x := writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{1 << 14}, make([]float32, 1<<14)))
	trace := filepath.Join(dir, "trace.json")
	out := mustRun(t, "profile", "--json", "--no-fusion", "--iterations=3", "--trace", trace, "--input", x, "--input", x, model)
	var res profileResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if res.Iterations != 3 || len(res.Ops) != 3 || len(res.Dispatches) != 3 || res.TotalUS <= 0 || res.PassUS <= 0 {
		t.Errorf("result %+v", res)
	}
	if res.Source != "gpu-timestamp" && res.Source != "cpu" {
		t.Errorf("source %q", res.Source)
	}
	var pct float64
	for _, o := range res.Ops {
		pct += o.Percent
		if len(o.Kernels) == 0 || o.Dispatches != 1 {
			t.Errorf("op %+v", o)
		}
	}
	if math.Abs(pct-100) > 0.01 {
		t.Errorf("percentages sum to %v", pct)
	}
	checkTrace(t, trace, 3*3)
}

// checkTrace validates a Chrome trace file as Perfetto reads it: a
// traceEvents array whose complete ("X") events carry every required field,
// laid end to end with non-decreasing timestamps.
func checkTrace(t *testing.T, path string, wantX int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		TraceEvents []map[string]json.RawMessage `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tf); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	nX := 0
	last := -1.0
	end := 0.0
	for i, ev := range tf.TraceEvents {
		var ph string
		if err := json.Unmarshal(ev["ph"], &ph); err != nil {
			t.Fatalf("event %d: ph: %v", i, err)
		}
		if ph == "M" {
			continue
		}
		if ph != "X" {
			t.Fatalf("event %d: ph %q", i, ph)
		}
		nX++
		for _, k := range []string{"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event %d has no %q: %v", i, k, ev)
			}
		}
		var name, cat string
		var ts, dur float64
		var pid, tid int
		var args map[string]any
		for k, dst := range map[string]any{"name": &name, "cat": &cat, "ts": &ts, "dur": &dur, "pid": &pid, "tid": &tid, "args": &args} {
			if err := json.Unmarshal(ev[k], dst); err != nil {
				t.Fatalf("event %d: field %s: %v", i, k, err)
			}
		}
		if name == "" || cat == "" || dur < 0 || pid <= 0 || tid <= 0 || args["kernel"] == nil {
			t.Errorf("event %d: %v", i, ev)
		}
		if ts < last || math.Abs(ts-end) > 1e-3 {
			t.Errorf("event %d: ts %v after an event ending at %v", i, ts, end)
		}
		last, end = ts, ts+dur
	}
	if nX != wantX {
		t.Errorf("%d complete events, want %d", nX, wantX)
	}
}

func TestProfileTwoDelegates(t *testing.T) {
	dir := t.TempDir()
	path := twoDelegatePTE(t, dir)
	trace := filepath.Join(dir, "t.json")
	s := mustRun(t, "profile", "--iterations", "1", "--trace", trace, path)
	if !strings.Contains(s, "graph  op") || !strings.Contains(s, "trace written to") {
		t.Errorf("profile printed:\n%s", s)
	}
	checkTrace(t, trace, strings.Count(s, "aten.view_copy.default")) // one dispatch per op row
}

func TestProfileErrors(t *testing.T) {
	dir := t.TempDir()
	model := chainModel(t, dir)
	mustFail(t, []string{"--iterations", "positive"}, "profile", "--iterations", "0", model)
	mustFail(t, []string{"--iterations"}, "profile", "--iterations", "x", model)
	mustFail(t, []string{"no MODEL"}, "profile")
	mustFail(t, []string{"model takes 2 input"}, "profile", "--input", writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{1}, []float32{1})), model)
	mustFail(t, []string{"trace"}, "profile", "--trace", filepath.Join(dir, "no", "such", "dir", "t.json"), model)
	for _, args := range [][]string{{"profile", "-h"}, {"help", "profile"}, {"bench", "--help"}, {"help", "bench"}} {
		code, stdout, stderr := invoke(t, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage:") || !hasExamples(stdout) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if s := mustRun(t, "help"); !strings.Contains(s, "wgdelegate profile") || !strings.Contains(s, "wgdelegate bench") {
		t.Errorf("help does not list profile and bench:\n%s", s)
	}
}

func TestSummarize(t *testing.T) {
	mk := func(ds ...time.Duration) wgdelegate.Profile {
		p := graph.Profile{Source: "gpu-timestamp"}
		for i, d := range ds {
			p.Dispatches = append(p.Dispatches, graph.DispatchTiming{
				DispatchInfo: graph.DispatchInfo{Op: i / 2, OpName: []string{"a", "b"}[i/2], Kernel: "k{X:1}"}, Duration: d})
		}
		return wgdelegate.Profile{Source: p.Source, Graphs: []graph.Profile{p}}
	}
	// op a: dispatches 0, 1; op b: dispatches 2, 3.
	res, err := summarize([]wgdelegate.Profile{
		mk(1*time.Microsecond, 1*time.Microsecond, 10*time.Microsecond, 0),
		mk(3*time.Microsecond, 1*time.Microsecond, 20*time.Microsecond, 2*time.Microsecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ops) != 2 || res.Ops[0].Name != "b" || res.Ops[0].TotalUS != 16 || res.Ops[1].TotalUS != 3 ||
		res.Ops[0].Dispatches != 2 || res.TotalUS != 19 || !slices.Equal(res.Ops[1].Kernels, []string{"k{X:1}"}) {
		t.Errorf("summary %+v", res)
	}
	if res.Ops[0].Chunks != 0 || res.Ops[1].Chunks != 0 {
		t.Errorf("chunks %d and %d in ops that read no chunked weight", res.Ops[0].Chunks, res.Ops[1].Chunks)
	}
	// The one-pass time is the median of the runs' (over every graph).
	passes := []wgdelegate.Profile{mk(0), mk(0), mk(0)}
	for i, us := range []time.Duration{9, 4, 5} {
		passes[i].Graphs[0].Pass = us * time.Microsecond
		passes[i].Graphs = append(passes[i].Graphs, graph.Profile{Source: "gpu-timestamp", Pass: time.Microsecond})
	}
	if res, err := summarize(passes); err != nil || res.PassUS != 6 {
		t.Errorf("one pass %v µs (%v), want the median 6 (5 + 1)", res.PassUS, err)
	}
	// Op a's two dispatches read chunks 0 and 1 of a weight held in
	// chunks.
	ch := mk(1*time.Microsecond, 1*time.Microsecond, 1*time.Microsecond, 1*time.Microsecond)
	for i := range 2 {
		ch.Graphs[0].Dispatches[i].Chunked, ch.Graphs[0].Dispatches[i].Chunk = true, i
	}
	if res, err := summarize([]wgdelegate.Profile{ch}); err != nil || res.Ops[0].Name != "a" || res.Ops[0].Chunks != 2 || res.Ops[1].Chunks != 0 {
		t.Errorf("chunked summary %+v (%v)", res.Ops, err)
	} else {
		var buf bytes.Buffer
		printProfile(&buf, res, false)
		if !strings.Contains(buf.String(), "2 (2 chunks)") {
			t.Errorf("profile does not show the chunks:\n%s", buf.String())
		}
	}
	if _, err := summarize([]wgdelegate.Profile{mk(1), mk(1, 2)}); err == nil {
		t.Error("no error for dispatches that changed")
	}
	var buf bytes.Buffer
	printProfile(&buf, res, false)
	if !strings.Contains(buf.String(), "k  ") && !strings.Contains(buf.String(), " k ") {
		t.Errorf("kernel names not shortened:\n%s", buf.String())
	}
}

func TestGenerateInputs(t *testing.T) {
	dir := t.TempDir()
	m, err := wgdelegate.Open(t.Context(), chainModel(t, dir), wgdelegate.WithDevice(sharedDevice))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ins := generateInputs(m)
	if len(ins) != 2 {
		t.Fatalf("%d inputs", len(ins))
	}
	for _, in := range ins {
		v, err := in.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 1<<14 || slices.Max(v) >= 1 || slices.Min(v) < -1 || slices.Max(v) == slices.Min(v) {
			t.Errorf("generated %v...", v[:4])
		}
	}
	if _, err := m.Execute(t.Context(), ins...); err != nil {
		t.Fatal(err)
	}
}

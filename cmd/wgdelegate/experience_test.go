package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tests of inspect --json, graph and the progress reporter.

func TestInspectJSON(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{f.blob, f.pteInline, f.pteSegment} {
		s := mustRun(t, "inspect", "--json", path)
		var doc inspectDoc
		if err := json.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, s)
		}
		if len(doc.Graphs) != 1 {
			t.Fatalf("%s: %d graphs", path, len(doc.Graphs))
		}
		g := doc.Graphs[0]
		if len(g.Inputs) != 1 || g.Inputs[0].DType != "float32" || !slices.Equal(g.Inputs[0].Shape, []int64{2, 3}) {
			t.Errorf("%s: inputs %+v", path, g.Inputs)
		}
		if len(g.Outputs) != 2 || !slices.Equal(g.Outputs[0].Shape, []int64{3, 2}) || !slices.Equal(g.Outputs[1].Shape, []int64{2, 3}) {
			t.Errorf("%s: outputs %+v", path, g.Outputs)
		}
		if len(g.Ops) != 3 || g.Ops[0].Name != "aten.clone.default" || g.Ops[0].Count != 1 || !g.Ops[0].Supported || len(g.Unsupported) != 0 {
			t.Errorf("%s: ops %+v", path, g.Ops)
		}
		if len(g.Constants) != 1 || !g.Constants[0].Named || g.Constants[0].Bytes != 24 || !g.Constants[0].Deferred {
			t.Errorf("%s: constants %+v", path, g.Constants)
		}
		wantSource := map[string]string{f.blob: "ptd", f.pteInline: "pte", f.pteSegment: "ptd"}[path]
		if g.Constants[0].Source != wantSource {
			t.Errorf("%s: constant source %q, want %q", path, g.Constants[0].Source, wantSource)
		}
		mp := g.MemoryPlan
		if len(mp.SharedObjects) != 2 || mp.SharedBytes != 48 || mp.DeferredConstants != 1 || mp.DeferredBytes != 24 {
			t.Errorf("%s: memory plan %+v", path, mp)
		}
		if so := mp.SharedObjects[0]; so.MemObjID != 0 || so.Bytes != 24 || len(so.Users) != 2 {
			t.Errorf("%s: shared object 0 %+v", path, so)
		}
		if len(g.ExceedsLimits) != 0 || doc.Limits.MaxStorageBufferBindingSize != 128<<20 {
			t.Errorf("%s: limits %+v, exceeded %+v", path, doc.Limits, g.ExceedsLimits)
		}
		if (path == f.blob) != (doc.Program == nil) || (doc.Format == "pte") != (doc.Program != nil) {
			t.Errorf("%s: format %q, program %v", path, doc.Format, doc.Program)
		}
	}
	// Stable field names, checked on the raw JSON.
	s := mustRun(t, "inspect", "--json", f.pteInline)
	for _, key := range []string{`"inputs"`, `"outputs"`, `"dtype"`, `"shape"`, `"ops"`, `"count"`, `"supported"`, `"constants"`,
		`"deferred"`, `"memory_plan"`, `"shared_objects"`, `"users"`, `"exceeds_limits"`, `"max_storage_buffer_binding_size"`} {
		if !strings.Contains(s, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	mustFail(t, []string{"not a .pte program"}, "inspect", "--json", write(t, f.dir, "junk", []byte("junk junk junk")))
}

// TestInspectLimits: a 200 MiB tensor (never allocated: inspect only
// plans) exceeds WebGPU's default 128 MiB storage binding limit.
func TestInspectLimits(t *testing.T) {
	path := write(t, t.TempDir(), "big.bin", reluGraph(t, []uint32{50 << 20}, -1, 3))
	var doc inspectDoc
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", path)), &doc); err != nil {
		t.Fatal(err)
	}
	ex := doc.Graphs[0].ExceedsLimits
	if len(ex) != 2 || ex[0].Value != 0 || ex[0].Limit != "max_storage_buffer_binding_size" || ex[0].Bytes != 200<<20 ||
		ex[1].MemObjID != 3 || ex[1].Value != -1 {
		t.Errorf("exceeds_limits %+v", ex)
	}
	s := mustRun(t, "inspect", path)
	if !strings.Contains(s, "device limits (WebGPU default limits)") || !strings.Contains(s, "mem_obj_id 3") {
		t.Errorf("text lacks the limits section:\n%s", s)
	}
}

var (
	dotNode = regexp.MustCompile(`(?m)^\s*(\w+) \[label=`)
	dotEdge = regexp.MustCompile(`(?m)^\s*(\w+) -> (\w+) \[label="([^"]*)"\];$`)
)

func TestGraphDOT(t *testing.T) {
	f := newFixture(t)
	s := mustRun(t, "graph", f.pteInline)
	if !strings.HasPrefix(s, `digraph "inline.pte" {`) || !strings.HasSuffix(s, "}\n") {
		t.Fatalf("not a digraph:\n%s", s)
	}
	// x, view_copy, w, prepack, clone, output 0, output 1.
	nodes := dotNode.FindAllStringSubmatch(s, -1)
	if len(nodes) != 7 {
		t.Errorf("%d nodes, want 7:\n%s", len(nodes), s)
	}
	edges := dotEdge.FindAllStringSubmatch(s, -1)
	// x -> view, w -> prepack, prepack -> clone, view -> out0, clone -> out1.
	if len(edges) != 5 {
		t.Errorf("%d edges, want 5:\n%s", len(edges), s)
	}
	names := map[string]bool{}
	for _, n := range nodes {
		names[n[1]] = true
	}
	for _, e := range edges {
		if !names[e[1]] || !names[e[2]] {
			t.Errorf("edge %s -> %s to an undeclared node", e[1], e[2])
		}
	}
	for _, want := range []string{`"aten.view_copy.default\n[3 2]"`, "shape=cylinder", "shape=invhouse", "shape=house", `g0_in0 -> g0_op0 [label="[2 3]"]`} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %s:\n%s", want, s)
		}
	}

	out := filepath.Join(f.dir, "g.dot")
	mustRun(t, "graph", "-o", out, f.blob)
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "digraph") {
		t.Errorf("-o %s: %v %q", out, err, b)
	}
	mustFail(t, []string{"no MODEL"}, "graph")
	mustFail(t, []string{"-o", "needs a value"}, "graph", f.blob, "-o")
}

// TestGraphMultiDelegate draws a .pte with two VulkanBackend delegates as
// two clusters.
func TestGraphMultiDelegate(t *testing.T) {
	blob := viewGraph(t, serialization.Float32)
	pte, err := serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{
		{ID: serialization.VulkanBackendID, Blob: blob}, {ID: serialization.VulkanBackendID, Blob: blob, Inline: true}}})
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, t.TempDir(), "two.pte", pte)
	s := mustRun(t, "graph", path)
	if strings.Count(s, "subgraph cluster_") != 2 || len(dotNode.FindAllString(s, -1)) != 6 || len(dotEdge.FindAllString(s, -1)) != 4 {
		t.Errorf("two delegates:\n%s", s)
	}
	var doc inspectDoc
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", path)), &doc); err != nil || len(doc.Graphs) != 2 || doc.Graphs[1].Delegate != 1 {
		t.Errorf("inspect --json of two delegates: %v %+v", err, doc.Graphs)
	}
	if s := mustRun(t, "inspect", path); !strings.Contains(s, "=== VulkanBackend delegate 1 ===") {
		t.Errorf("inspect of two delegates:\n%s", s)
	}
}

func TestGraphSVG(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "g.svg")
	if _, err := exec.LookPath("dot"); err != nil {
		t.Setenv("PATH", t.TempDir())
		mustFail(t, []string{"dot", "graphviz", "g.dot"}, "graph", "-o", out, f.pteInline)
		t.Skip("Graphviz dot is not installed; SVG rendering not tested")
	}
	mustRun(t, "graph", "-o", out, f.pteInline)
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("aten.view_copy.default")) {
		t.Fatalf("SVG: %v\n%.300s", err, b)
	}
	t.Setenv("PATH", t.TempDir())
	mustFail(t, []string{"dot", "graphviz"}, "graph", "-o", out, f.pteInline)
}

func TestProgress(t *testing.T) {
	load := func(po progressOut) {
		p := newProgress(po, "m.pte")
		p.update(wgdelegate.Progress{Phase: wgdelegate.PhaseParse, Delegates: 2, BytesTotal: 3 << 20})
		p.update(wgdelegate.Progress{Phase: wgdelegate.PhaseBuild, Delegate: 1, Delegates: 2, BytesDone: 1 << 20, BytesTotal: 3 << 20})
		p.update(wgdelegate.Progress{Phase: wgdelegate.PhaseBuild, Delegate: 1, Delegates: 2, BytesDone: 1 << 20, BytesTotal: 3 << 20})
		p.update(wgdelegate.Progress{Phase: wgdelegate.PhaseDone, Delegates: 2, BytesDone: 3 << 20, BytesTotal: 3 << 20})
		p.finish(true)
	}
	var buf bytes.Buffer
	if load(progressOut{w: &buf, delay: time.Hour}); buf.Len() != 0 {
		t.Errorf("a quick load printed %q", buf.String())
	}
	// A slow load on a stderr that is not a terminal prints nothing
	// without --verbose, plain lines with it.
	buf.Reset()
	po := newProgressOut(&buf, false)
	po.delay = 0
	if load(po); buf.Len() != 0 {
		t.Errorf("progress on a pipe without --verbose: %q", buf.String())
	}
	po = newProgressOut(&buf, true)
	po.delay = 0
	load(po)
	s := buf.String()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "loading m.pte: parse, 0.0 MiB of 3.0 MiB weights") ||
		!strings.HasPrefix(lines[1], "loading m.pte: build delegate 2/2, 1.0 MiB of 3.0 MiB weights") || !strings.HasPrefix(lines[2], "loading m.pte: done") {
		t.Errorf("plain progress:\n%s", s)
	}
	// The bar, as drawn on a terminal.
	buf.Reset()
	p := newProgress(progressOut{w: &buf, tty: true}, "m.pte")
	p.update(wgdelegate.Progress{Phase: wgdelegate.PhaseBuild, Delegate: 0, Delegates: 1, BytesDone: 1, BytesTotal: 2})
	p.finish(true)
	if s := buf.String(); !strings.Contains(s, "\r\033[K[############            ] loading m.pte: build") || !strings.HasSuffix(s, "\n") {
		t.Errorf("bar %q", s)
	}
}

// TestSlowLoadErrorIsOneLine reproduces, deterministically, a load slow
// enough to show progress (delay 0) that then fails: stderr, a pipe here,
// must hold only the error line main prints, as the CLI promises. Under
// load a small model once took over a second to open and its progress
// lines came before the error.
func TestSlowLoadErrorIsOneLine(t *testing.T) {
	path := newFixture(t).pteInline
	for _, verbose := range []bool{false, true} {
		args := []string{"--ids", "1", path}
		if verbose {
			args = append([]string{"-v"}, args...)
		}
		o, err := parseGenerateArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		o.progressDelay = 0
		var stdout, stderr bytes.Buffer
		err = generate(context.Background(), o, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "not a Llama-style decoder") {
			t.Fatalf("verbose %v: err %v", verbose, err)
		}
		progressShown := strings.Contains(stderr.String(), "loading inline.pte")
		if progressShown != verbose {
			t.Errorf("verbose %v: stderr before the error line %q", verbose, stderr.String())
		}
	}
}

// TestRunTwoDelegates runs a .pte with two VulkanBackend delegates, each
// called by the plan, through the CLI.
func TestRunTwoDelegates(t *testing.T) {
	dir := t.TempDir()
	path := twoDelegatePTE(t, dir)
	x := writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{2, 3}, xData))
	o := filepath.Join(dir, "out")
	s := mustRun(t, "run", "--input", x, "--input", x, "--output-dir", o, path)
	if !strings.Contains(s, "output_1.npy") {
		t.Errorf("run printed %q", s)
	}
	for i := range 2 {
		y := readNPY(t, filepath.Join(o, "output_"+string(rune('0'+i))+".npy"))
		if !slices.Equal(y.Shape, []int64{3, 2}) || !slices.Equal(float32s(t, y), xData) {
			t.Errorf("output %d: %v %v", i, y.Shape, float32s(t, y))
		}
	}
}

// TestInspectChunkedWeights: a 270000 × 256 float32 classifier (276 MB,
// its data never provided: inspect only plans) is over WebGPU's default
// limits but read only by a linear, so a load holds it in chunks: inspect
// lists it as chunked (3 chunks of at most 131008 rows), deferred, and not
// as over a limit.
func TestInspectChunkedWeights(t *testing.T) {
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, []uint32{1, 256}, -1)
	b.Inputs(x)
	w := b.NamedConstKey(f, []uint32{270000, 256}, strings.Repeat("ab", 32), 270000*256*4)
	y := b.Tensor(f, []uint32{1, 270000}, -1)
	b.Op("aten.linear.default", x, w, b.Null(), y)
	b.Outputs(y)
	path := write(t, t.TempDir(), "classifier.bin", mustBlob(t, b))
	var doc inspectDoc
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", path)), &doc); err != nil {
		t.Fatal(err)
	}
	g := doc.Graphs[0]
	if len(g.ExceedsLimits) != 0 || len(g.Chunked) != 1 {
		t.Fatalf("exceeds_limits %+v, chunked_weights %+v", g.ExceedsLimits, g.Chunked)
	}
	if c := g.Chunked[0]; c.Value != w || c.Bytes != 270000*256*4 || c.Rows != 270000 || c.Chunks != 3 || len(c.Prepacked) != 0 {
		t.Errorf("chunked weight %+v", c)
	}
	if len(g.Constants) != 1 || !g.Constants[0].Deferred {
		t.Errorf("constants %+v, want the chunked weight deferred", g.Constants)
	}
	s := mustRun(t, "inspect", path)
	if !strings.Contains(s, "CHUNKED WEIGHT") || !strings.Contains(s, "3 chunks") || strings.Contains(s, "EXCEEDS") {
		t.Errorf("text lacks the chunked weight, or shows it over a limit:\n%s", s)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Tests of the rough edges a first session with the CLI ran into (issue
// 29): what bare and --help invocations print, graph's rendered formats,
// the hint for a model whose weights are in a .ptd, one wording for a
// directory given as the model, Ctrl-C during generate, and generate's
// sampling flags.

// TestBareCommand: no arguments print the usage, as help does, and
// succeed.
func TestBareCommand(t *testing.T) {
	code, stdout, stderr := invoke(t)
	if code != 0 || stderr != "" || stdout != usage {
		t.Fatalf("bare: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestVersionHelp: version has a usage of its own, reached like every
// other command's.
func TestVersionHelp(t *testing.T) {
	for _, args := range [][]string{{"version", "--help"}, {"version", "-h"}, {"--version", "-help"}, {"help", "version"}} {
		code, stdout, stderr := invoke(t, args...)
		if code != 0 || stderr != "" || stdout != versionUsage || !hasExamples(stdout) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	mustFail(t, []string{"version", "unknown flag --frob"}, "version", "--frob")
	mustFail(t, []string{"version takes no arguments", "extra"}, "version", "extra")
}

// fakeDot puts a "dot" on PATH that records its arguments in dir/args and
// copies its stdin to the file after -o, so the format graph asks for can
// be checked without Graphviz.
func fakeDot(t *testing.T) (argsFile string) {
	t.Helper()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat for the fake dot:", err)
	}
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then " + cat + " > \"$2\"; exit 0; fi; shift; done\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "dot"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	return argsFile
}

// TestGraphFormats: -o picks the format by extension: svg, png, pdf, jpg
// and gif go through dot -T<format>, anything else is written as DOT; a
// missing dot is an error naming Graphviz and the DOT alternative.
func TestGraphFormats(t *testing.T) {
	f := newFixture(t)
	argsFile := fakeDot(t)
	for _, tc := range []struct {
		name, format string // format "" is DOT, written without dot
	}{
		{"g.svg", "svg"}, {"g.png", "png"}, {"G.PNG", "png"}, {"g.pdf", "pdf"}, {"g.jpeg", "jpg"}, {"g.gif", "gif"},
		{"g.dot", ""}, {"g.gv", ""}, {"g.txt", ""}, {"graph", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(argsFile)
			out := filepath.Join(t.TempDir(), tc.name)
			mustRun(t, "graph", "-o", out, f.pteInline)
			b, err := os.ReadFile(out)
			if err != nil || !bytes.HasPrefix(b, []byte("digraph ")) {
				t.Fatalf("%s: %v %.60q", out, err, b)
			}
			args, err := os.ReadFile(argsFile)
			switch {
			case tc.format == "" && err == nil:
				t.Errorf("DOT output ran dot %q", args)
			case tc.format != "" && string(args) != fmt.Sprintf("-T%s\n-o\n%s\n", tc.format, out):
				t.Errorf("dot ran with %q (%v), want -T%s -o %s", args, err, tc.format, out)
			}
		})
	}
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "g.png")
	mustFail(t, []string{"writing PNG needs Graphviz's dot", "apt-get install graphviz", "-o " + strings.TrimSuffix(out, ".png") + ".dot"},
		"graph", "-o", out, f.pteInline)
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written without dot", out)
	}
}

// TestMissingDataHint: a .pte whose weights are in a .ptd, loaded without
// --data, fails with the key's error and which flag to add, naming the
// .ptd files beside the model (one: the flag to add; several: a list;
// none: the flag alone), in every command that loads a model.
func TestMissingDataHint(t *testing.T) {
	f := newFixture(t) // segment.pte's weights are in weights.ptd beside it
	alone := filepath.Join(t.TempDir(), "alone.pte")
	b, err := os.ReadFile(f.pteSegment)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Dir(alone), filepath.Base(alone), b)
	two := t.TempDir()
	twoPTE := write(t, two, "m.pte", b)
	write(t, two, "a.ptd", nil)
	write(t, two, "b.ptd", nil)
	out := t.TempDir()
	for _, tc := range []struct {
		model string
		want  []string
		wantN []string
	}{
		{f.pteSegment, []string{"key not found in named data", "no --data given", "try --data " + f.ptd}, nil},
		{alone, []string{"key not found in named data", "no --data given", "add --data FILE.ptd"}, []string{"next to the model"}},
		{twoPTE, []string{"add --data FILE.ptd", "next to the model: " + filepath.Join(two, "a.ptd") + ", " + filepath.Join(two, "b.ptd")}, nil},
	} {
		for _, cmd := range [][]string{{"run", "--output-dir", out}, {"profile"}, {"bench"}} {
			t.Run(filepath.Base(tc.model)+"/"+cmd[0], func(t *testing.T) {
				msg := mustFail(t, tc.want, append(cmd, tc.model)...)
				for _, w := range tc.wantN {
					if strings.Contains(msg, w) {
						t.Errorf("%q mentions %q", msg, w)
					}
				}
			})
		}
	}
	// With --data given, the error stands as it is.
	msg := mustFail(t, []string{"key not found"}, "run", "--output-dir", out, "--data", write(t, t.TempDir(), "other.ptd", mustPTD(t)), f.pteSegment)
	if strings.Contains(msg, "no --data given") {
		t.Errorf("hint with --data given: %s", msg)
	}
}

// TestModelIsDirectory: every command words a directory given as MODEL
// the same way.
func TestModelIsDirectory(t *testing.T) {
	dir := t.TempDir()
	want := "wgdelegate: model: " + dir + " is a directory, not a .pte program or a VH00 delegate blob\n"
	for _, args := range [][]string{{"run", "--output-dir", filepath.Join(dir, "out")}, {"inspect"}, {"inspect", "--json"}, {"graph"},
		{"profile"}, {"bench"}, {"generate"}} {
		code, _, stderr := invoke(t, append(args, dir)...)
		if code != 1 || stderr != want {
			t.Errorf("%v: exit %d, stderr %q, want %q", args, code, stderr, want)
		}
	}
}

// TestExitCode: Ctrl-C (a cancelled context anywhere in the error chain)
// exits 130, every other error 1.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{errors.New("model: no such file"), 1},
		{context.Canceled, 130},
		{fmt.Errorf("generate: interrupted: %w", context.Canceled), 130},
		{fmt.Errorf("call 0: %w", fmt.Errorf("execute: %w", context.Canceled)), 130},
		{context.DeadlineExceeded, 1},
	} {
		var stderr bytes.Buffer
		if got := fail(&stderr, tc.err); got != tc.want || got != exitCode(tc.err) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d (exitCode %d), want %d; stderr %q", tc.err, got, exitCode(tc.err), tc.want, stderr.String())
		}
	}
}

// cancelWriter is generate's stdout that cancels the context once it has
// received `after` writes (one per generated token): Ctrl-C at a known
// point, without a signal.
type cancelWriter struct {
	buf           bytes.Buffer // not embedded: io.WriteString would bypass Write
	writes, after int
	cancel        context.CancelFunc
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes == w.after {
		w.cancel()
	}
	return w.buf.Write(p)
}

// TestGenerateInterrupted: a generation cancelled after 3 tokens (as
// SIGINT cancels generateCommand's context) has printed them, prints the
// statistics so far, and returns an error that exits 130.
func TestGenerateInterrupted(t *testing.T) {
	dir := t.TempDir()
	pte, _, _ := writeGenModel(t, dir, "m", 0)
	ptd := strings.TrimSuffix(pte, ".pte") + ".ptd"
	o, err := parseGenerateArgs([]string{"--data", ptd, "--ids", "1", "-n", "20", "--temperature", "0", pte})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &cancelWriter{after: 3, cancel: cancel}
	var stderr bytes.Buffer
	err = generate(ctx, o, stdout, &stderr)
	if !errors.Is(err, context.Canceled) || exitCode(err) != 130 {
		t.Fatalf("error %v (exit %d), want context.Canceled (exit 130)", err, exitCode(err))
	}
	if ids := parseIDs(t, stdout.buf.String()); len(ids) != 3 {
		t.Errorf("stdout %q: %d tokens, want the 3 before the cancel", stdout.buf.String(), len(ids))
	}
	for _, w := range []string{"interrupted after 3 generated tokens", "prompt: 1 tokens", "decode: 3 tokens, 2 steps", "tok/s", "time to first token", "memory: GPU"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr %q lacks %q", stderr.String(), w)
		}
	}

	// Ctrl-C before the model has loaded: nothing to report, still 130.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	stderr.Reset()
	if err := generate(ctx, o, &bytes.Buffer{}, &stderr); exitCode(err) != 130 {
		t.Fatalf("cancelled before the load: %v (exit %d)", err, exitCode(err))
	}
}

// mustPTD returns a .ptd holding one constant under a key no fixture uses.
func mustPTD(t *testing.T) []byte {
	t.Helper()
	b, err := serialization.EncodePTD([]serialization.NamedBlob{{Key: "unrelated", Data: make([]byte, 8)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGenerateSamplingFlags: each sampling flag reaches GenerateOptions;
// the defaults are the ones generate always had (run.c's temperature 0.8
// and top-p 0.9, nothing else); --repeat-last-n takes the values of
// GenerateOptions.RepeatLastN (0 the default, -1 or all, -2 or off); bad
// values are errors.
func TestGenerateSamplingFlags(t *testing.T) {
	base := llm.GenerateOptions{MaxNewTokens: 64, Temperature: 0.8, TopP: 0.9, Seed: 1, RepeatLastN: llm.DefaultRepeatLastN}
	for _, tc := range []struct {
		args []string
		want func(o *llm.GenerateOptions)
	}{
		{nil, func(*llm.GenerateOptions) {}},
		{[]string{"--top-k", "40"}, func(o *llm.GenerateOptions) { o.TopK = 40 }},
		{[]string{"--min-p", "0.05"}, func(o *llm.GenerateOptions) { o.MinP = 0.05 }},
		{[]string{"--repeat-penalty", "1.1"}, func(o *llm.GenerateOptions) { o.RepeatPenalty = 1.1 }},
		{[]string{"--frequency-penalty", "0.5", "--presence-penalty=-0.25"}, func(o *llm.GenerateOptions) { o.FrequencyPenalty, o.PresencePenalty = 0.5, -0.25 }},
		{[]string{"--repeat-last-n", "-1", "--repeat-penalty", "1.3"}, func(o *llm.GenerateOptions) { o.RepeatLastN, o.RepeatPenalty = -1, 1.3 }},
		{[]string{"--repeat-last-n", "all"}, func(o *llm.GenerateOptions) { o.RepeatLastN = llm.RepeatLastNAll }},
		{[]string{"--repeat-last-n", "0", "--repeat-penalty", "1.3"}, func(o *llm.GenerateOptions) { o.RepeatLastN, o.RepeatPenalty = 0, 1.3 }},
		{[]string{"--repeat-last-n", "off", "--repeat-penalty", "1.3"}, func(o *llm.GenerateOptions) { o.RepeatLastN, o.RepeatPenalty = llm.RepeatLastNOff, 1.3 }},
		{[]string{"--repeat-last-n", "-2"}, func(o *llm.GenerateOptions) { o.RepeatLastN = llm.RepeatLastNOff }},
	} {
		o, err := parseGenerateArgs(append(tc.args, "m.pte"))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		want := base
		tc.want(&want)
		if !reflect.DeepEqual(o.gen, want) {
			t.Errorf("%v: %+v, want %+v", tc.args, o.gen, want)
		}
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--top-k", "-1"}, []string{"--top-k", "token count"}},
		{[]string{"--top-k", "many"}, []string{"--top-k"}},
		{[]string{"--min-p", "x"}, []string{"--min-p", "not a number"}},
		{[]string{"--repeat-last-n", "-3"}, []string{"--repeat-last-n", "-1 or all (every token), or -2 or off"}},
		{[]string{"--repeat-last-n", "none"}, []string{"--repeat-last-n", "0 (the default, 64)"}},
		{[]string{"--repeat-penalty", "none"}, []string{"--repeat-penalty", "not a number"}},
	} {
		mustFail(t, tc.want, append(append([]string{"generate"}, tc.args...), "m.pte")...)
	}
	out := mustRun(t, "help", "generate")
	for _, f := range []string{"--top-k K", "--min-p P", "--repeat-penalty R", "--frequency-penalty F", "--presence-penalty F", "--repeat-last-n N", "in this order"} {
		if !strings.Contains(out, f) {
			t.Errorf("generate --help lacks %q", f)
		}
	}
}

// TestGenerateSampling runs the new samplers end to end: a range the
// sampler rejects is an error, and a presence penalty far above any logit
// over the whole history makes greedy decoding never repeat a token.
func TestGenerateSampling(t *testing.T) {
	dir := t.TempDir()
	pte, _, _ := writeGenModel(t, dir, "m", 0)
	ptd := strings.TrimSuffix(pte, ".pte") + ".ptd"
	mustFail(t, []string{"min-p 2"}, "generate", "--data", ptd, "--min-p", "2", pte)
	out := mustRun(t, "generate", "--json", "--data", ptd, "--ids", "1,2,3", "-n", "40", "--temperature", "0",
		"--presence-penalty", "1e6", "--repeat-last-n", "-1", "--top-k", "5", "--min-p", "0.1", pte)
	var r generateResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{1: true, 2: true, 3: true}
	for i, tok := range r.Tokens {
		if seen[tok] {
			t.Fatalf("token %d (%d) repeats: %v", i, tok, r.Tokens)
		}
		seen[tok] = true
	}
	if len(r.Tokens) != 40 {
		t.Fatalf("%d tokens, want 40", len(r.Tokens))
	}
}

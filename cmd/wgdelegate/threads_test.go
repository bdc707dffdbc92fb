package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate"
)

func TestCPUThreadsFlag(t *testing.T) {
	for v, want := range map[string]int{"inline": wgdelegate.CPUThreadsInline, "default": 0, "0": 0, "1": 1, "64": 64} {
		n := 99
		if err := cpuThreadsFlag(&n)(v); err != nil || n != want {
			t.Errorf("--cpu-threads %q: %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"-1", "65", "x", "1.5", " 2", "Inline", "0x2"} {
		n := 99
		if err := cpuThreadsFlag(&n)(v); err == nil || n != 99 {
			t.Errorf("--cpu-threads %q: accepted (%d)", v, n)
		}
	}
	r, err := parseRunArgs([]string{"--cpu-threads", "inline", "--output-dir", "o", "m.pte"})
	if err != nil || r.cpuThreads != wgdelegate.CPUThreadsInline {
		t.Errorf("run: %+v, %v", r, err)
	}
	p, err := parseProfileArgs([]string{"m.pte", "--cpu-threads=3"})
	if err != nil || p.cpuThreads != 3 {
		t.Errorf("profile: %+v, %v", p, err)
	}
	b, err := parseBenchArgs([]string{"--cpu-threads", "2", "m.pte"})
	if err != nil || b.cpuThreads != 2 {
		t.Errorf("bench: %+v, %v", b, err)
	}
}

func TestCPUThreadsFlagRejected(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "out")
	for _, cmd := range [][]string{{"run", "--output-dir", out}, {"profile"}, {"bench"}} {
		args := append(append([]string(nil), cmd...), "--cpu-threads", "many", f.pteInline)
		mustFail(t, []string{cmd[0], "--cpu-threads", `"many"`, "inline, default or a worker count 0..64"}, args...)
		args = append(append([]string(nil), cmd...), f.pteInline, "--cpu-threads")
		mustFail(t, []string{"--cpu-threads", "needs a value"}, args...)
	}
}

// TestRunCPUThreadsInline runs a model on a device with inline dispatches.
func TestRunCPUThreadsInline(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "out")
	code, s, stderr := invoke(t, "run", "-v", "--cpu-threads", "inline", "--input", f.x, "--output-dir", out, f.pteInline)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkTwoOutputs(t, out)
	if !strings.Contains(s, "cpu threads: inline") && strings.Contains(s, "llvmpipe") {
		t.Errorf("run -v does not report the thread setting:\n%s", s)
	}
	s = mustRun(t, "bench", "-n", "1", "--cpu-threads", "inline", "--input", f.x, f.pteInline)
	if !strings.Contains(s, "cpu threads") && strings.Contains(s, "llvmpipe") {
		t.Errorf("bench does not report the thread setting:\n%s", s)
	}
}

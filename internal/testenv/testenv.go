// Package testenv says how thoroughly the tests run.
//
// The README's `go test ./...` is the contributor's inner loop: every op
// with one input set under both memory plans (on a CPU adapter a large op
// case under one, opstest.LargeBytes, and a case of the kernel family's
// ops one plan in each family), every end-to-end model, in a few minutes
// on a 2-core machine. With the environment variable
// WGDELEGATE_TEST_LONG=1 (CI sets it) the same command also runs the
// exhaustive sweeps: every seed of every op case (opstest.Seeds), every
// case under both plans in both families, the reference interpreter
// checked against itself, the longer soak and the server's larger load
// test. -short (the race detector's run) keeps to the default's coverage
// or less.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// LongEnv is the environment variable that turns on the long sweeps.
const LongEnv = "WGDELEGATE_TEST_LONG"

// Long reports whether the long sweeps run: LongEnv is set to anything
// but "" or "0".
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0"
}

// RunCEnv names llama2.c's run.c for the tests that decode against it.
const RunCEnv = "LLAMA2C_RUN_C"

// RunC returns llama2.c's run.c for the tests that compare with it:
// $LLAMA2C_RUN_C, or shared/reference/llama2c/run.c beside the repository
// (or beside the directory of worktrees it is in), looked up from a
// package directory two or three levels below the repository root; ""
// when there is none.
func RunC() string {
	if p := os.Getenv(RunCEnv); p != "" {
		return p
	}
	for _, up := range []string{"../../..", "../../../.."} {
		p := filepath.Join(up, "shared", "reference", "llama2c", "run.c")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// RunCSource is RunC for a test that needs run.c: it skips tb when there
// is none.
func RunCSource(tb testing.TB) string {
	tb.Helper()
	src := RunC()
	if src == "" {
		tb.Skipf("llama2.c's run.c not found: set %s", RunCEnv)
	}
	return src
}

// CCompiler returns the first C compiler on PATH (cc, gcc, clang), for
// the tests that build run.c; it skips tb when there is none.
func CCompiler(tb testing.TB) string {
	tb.Helper()
	for _, c := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	tb.Skip("no C compiler (cc, gcc, clang) on PATH to build run.c")
	return ""
}

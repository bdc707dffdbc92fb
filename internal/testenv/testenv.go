// Package testenv says how thoroughly the tests run.
//
// The README's `go test ./...` is the contributor's inner loop: every op
// with one input set under both memory plans, every end-to-end model,
// in a few minutes on a 2-core machine. With the environment variable
// WGDELEGATE_TEST_LONG=1 (CI sets it) the same command also runs the
// exhaustive sweeps: every seed of every op case (opstest.Seeds), the
// reference interpreter checked against itself, and the longer soak.
// -short (the race detector's run) keeps to the default's coverage or less.
package testenv

import "os"

// LongEnv is the environment variable that turns on the long sweeps.
const LongEnv = "WGDELEGATE_TEST_LONG"

// Long reports whether the long sweeps run: LongEnv is set to anything
// but "" or "0".
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0"
}

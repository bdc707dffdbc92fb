//go:build !race

package llm_test

// raceEnabled: the race detector is on (tests that only look for
// super-linear time use smaller inputs under it).
const raceEnabled = false

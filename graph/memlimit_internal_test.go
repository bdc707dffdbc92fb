package graph

import (
	"math"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"MemTotal:       24567892 kB\nMemFree:        1 kB\n", 24567892 * 1024},
		{"MemFree: 5 kB\nMemTotal: 1024 kB\n", 1 << 20},
		{"MemTotal: 12 MB\n", 0},
		{"MemTotal: x kB\n", 0},
		{"MemTotal: -4 kB\n", 0},
		{"MemTotal: 99999999999999999 kB\n", 0},
		{"", 0},
	} {
		if got := parseMemTotal([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.in, got, tc.want)
		}
	}
	if got := hostMemoryLimit(0); got != math.MaxInt64 {
		t.Errorf("unknown host memory: limit %d, want none", got)
	}
	if got := hostMemoryLimit(32 << 30); got != 24<<30 {
		t.Errorf("32 GiB host: limit %d, want 24 GiB", got)
	}
}

// TestDefaultMemoryLimit: on this test device (lavapipe, a CPU adapter)
// the default is three quarters of the host's memory; on a discrete GPU
// there is none.
func TestDefaultMemoryLimit(t *testing.T) {
	dev := device(t)
	got := DefaultMemoryLimit(dev)
	switch dev.Info().AdapterType {
	case "discrete-gpu":
		if got != math.MaxInt64 {
			t.Errorf("discrete GPU: limit %d, want none", got)
		}
	default:
		if want := hostMemoryLimit(hostMemory()); got != want || hostMemory() == 0 {
			t.Errorf("%s adapter: limit %d, want %d (host memory %d)", dev.Info().AdapterType, got, want, hostMemory())
		}
	}
}

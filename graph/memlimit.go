package graph

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"strconv"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// DefaultMemoryLimit is the tensor memory a graph on dev may use unless
// Options.MemoryLimit says otherwise. WebGPU reports no memory size, so
// the rule follows where the adapter's buffers live:
//
//   - a CPU adapter (lavapipe) or an integrated GPU keeps them in the
//     host's memory: three quarters of the host's physical memory, so
//     that a mistaken or hostile blob is refused before it exhausts the
//     host rather than after (no limit where the size is unknown);
//   - a discrete GPU keeps them in its own memory, whose size WebGPU does
//     not say: no limit; a model larger than the device fails when the
//     driver refuses a buffer, with an error, not a crash.
//
// Per-buffer limits (maxBufferSize, maxStorageBufferBindingSize) are the
// adapter's and are checked separately.
func DefaultMemoryLimit(dev *gpu.Device) int64 {
	if dev.Info().AdapterType == "discrete-gpu" {
		return math.MaxInt64
	}
	return hostMemoryLimit(hostMemory())
}

// hostMemoryLimit is three quarters of total host memory bytes, or no
// limit when total is unknown (0).
func hostMemoryLimit(total int64) int64 {
	if total <= 0 {
		return math.MaxInt64
	}
	return total / 4 * 3
}

// hostMemory returns the host's physical memory in bytes (MemTotal of
// /proc/meminfo), 0 where it cannot be read.
func hostMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemTotal(b)
}

// parseMemTotal reads the MemTotal line ("MemTotal:  24567892 kB") of a
// /proc/meminfo, 0 when absent or malformed.
func parseMemTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "MemTotal:" && string(f[2]) == "kB" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil || kb <= 0 || kb > math.MaxInt64/1024 {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

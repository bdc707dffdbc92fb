package opstest

import (
	"context"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// shared is the device the package's tests share (benchmarks open their
// own): opened by the first test that asks, closed by TestMain.
var shared struct {
	once sync.Once
	dev  *gpu.Device
	err  error
}

// testDevice returns the device the package's tests share, opening it on
// first use. Its shader and pipeline caches then hold each kernel once per
// test binary: with a device per test, every test that builds the
// conformance cases (the guard's builds, the suite, the fusion and kernel
// choice checks) compiled the same kernels again, and lavapipe compiled
// them again at their first dispatch. The tests do not close it.
//
// Every test of the package but those that set the environment (t.Setenv)
// runs in parallel (t.Parallel) on it: the device serialises what must be
// serialised, and the host's work (building cases, the reference, the
// comparisons, shader translation) is most of a test's time on lavapipe,
// so a second core is kept busy; on a GPU host's many cores, more so.
func testDevice(t testing.TB) *gpu.Device {
	t.Helper()
	shared.once.Do(func() { shared.dev, shared.err = gpu.Open(context.Background(), gpu.Options{}) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dev
}

// closeTestDevice closes the shared device if a test opened it.
func closeTestDevice() error {
	if shared.dev == nil {
		return nil
	}
	return shared.dev.Close()
}

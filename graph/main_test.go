package graph

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

var (
	devOnce sync.Once
	testDev *gpu.Device
	devErr  error
)

// device returns the process-wide test device. Tests run real WGSL on the
// default adapter (lavapipe in CI); nothing GPU-facing is mocked.
func device(t testing.TB) *gpu.Device {
	t.Helper()
	devOnce.Do(func() { testDev, devErr = gpu.Open(context.Background(), gpu.Options{}) })
	if devErr != nil {
		t.Fatalf("open device: %v", devErr)
	}
	return testDev
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testDev != nil {
		testDev.Close()
	}
	os.Exit(code)
}

package graph

import (
	"context"
	"flag"
	"runtime"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
)

var soak = flag.Bool("soak", false, "run the soak test at full length (10,000 executes, 200 load/close cycles)")

// snapshot is what must return to its baseline after a soak.
type snapshot struct {
	heap       uint64
	goroutines int
	live       gpu.LiveObjects
}

func takeSnapshot(dev *gpu.Device) snapshot {
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return snapshot{heap: ms.HeapAlloc, goroutines: runtime.NumGoroutine(), live: dev.LiveObjects()}
}

// TestSoak executes a graph many times and loads/closes graphs repeatedly,
// then checks that the Go heap, the goroutine count and the device's live
// GPU objects (buffers, bind groups, cached pipelines and modules) are back
// at their baseline. 50 executes and 5 cycles by default and with -short,
// 300 and 20 in the long sweeps (testenv.Long); -soak runs the full length.
func TestSoak(t *testing.T) {
	executes, cycles := 50, 5
	switch {
	case *soak:
		executes, cycles = 10000, 200
	case testenv.Long() && !testing.Short():
		executes, cycles = 300, 20
	}
	dev := device(t)
	ctx := context.Background()
	blobs := seedGraphs(t)

	// Warm-up: the first load fills the device's pipeline cache, which
	// lives as long as the device; it is part of the baseline.
	for _, blob := range blobs {
		g, err := Load(ctx, dev, blob, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Execute(ctx, randomInputs(g, 1)); err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
	base := takeSnapshot(dev)
	start := time.Now()

	g, err := Load(ctx, dev, blobs[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := randomInputs(g, 2)
	for i := 0; i < executes; i++ {
		if _, err := g.Execute(ctx, in); err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < cycles; i++ {
		g, err := Load(ctx, dev, blobs[i%len(blobs)], Options{})
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if _, err := g.Execute(ctx, randomInputs(g, uint64(i))); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		g.Close()
	}
	end := takeSnapshot(dev)
	t.Logf("soak: %d executes + %d load/close cycles in %v; heap %d -> %d bytes, goroutines %d -> %d, live %+v -> %+v",
		executes, cycles, time.Since(start).Round(time.Millisecond), base.heap, end.heap, base.goroutines, end.goroutines, base.live, end.live)
	if end.live != base.live {
		t.Errorf("live GPU objects %+v, baseline %+v", end.live, base.live)
	}
	if end.goroutines > base.goroutines {
		t.Errorf("%d goroutines, baseline %d", end.goroutines, base.goroutines)
	}
	// The heap may wobble by a little (sync.Pool, runtime caches); growth
	// proportional to the work would be megabytes.
	if end.heap > base.heap+512<<10 {
		t.Errorf("heap grew from %d to %d bytes", base.heap, end.heap)
	}
}

// randomInputs returns deterministic pseudo-random inputs of g's full
// (serialized) input shapes.
func randomInputs(g *WebGPUGraph, seed uint64) []Tensor {
	in := make([]Tensor, g.NumInputs())
	for i := range in {
		dt, shape := g.InputInfo(i)
		data := make([]byte, Numel(shape)*int64(dt.Size()))
		x := seed*0x9e3779b97f4a7c15 + uint64(i)
		for k := range data {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			data[k] = byte(x)
		}
		if dt.Size() == 4 { // keep float32 values finite and small
			for k := 3; k < len(data); k += 4 {
				data[k] = 0x3e
			}
		}
		in[i] = Tensor{DType: dt, Shape: shape, Data: data}
	}
	return in
}

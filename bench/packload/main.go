// Command packload loads a model once with linear weight packing forced on
// (KernelConfig.PackLinear) through a packed-weight cache and prints what
// `wgdelegate bench` would report for the load. Run it twice on the same
// cache directory for a cold and a warm load:
//
//	go run ./bench/bigmodel -kind mlp -mib 64 -out /tmp/big
//	go run ./bench/packload -cache /tmp/wgdc /tmp/big   # cold
//	go run ./bench/packload -cache /tmp/wgdc /tmp/big   # warm
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"path/filepath"
	"runtime"
	"time"

	"github.com/wgdelegate/wgdelegate"
)

func main() {
	cache := flag.String("cache", "", "packed-weight cache directory (required)")
	flag.Parse()
	if *cache == "" || flag.NArg() != 1 {
		log.Fatal("usage: packload -cache DIR MODELDIR (with model.pte and weights.ptd)")
	}
	dir := flag.Arg(0)
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	m, err := wgdelegate.Open(ctx, filepath.Join(dir, "model.pte"), wgdelegate.WithDevice(dev),
		wgdelegate.WithDataFiles(filepath.Join(dir, "weights.ptd")), wgdelegate.WithPackedCache(*cache),
		wgdelegate.WithKernels(wgdelegate.KernelConfig{PackLinear: true}))
	if err != nil {
		log.Fatal(err)
	}
	load := time.Since(start)
	runtime.ReadMemStats(&after)
	defer m.Close()
	s := m.PackedCacheStats()
	fmt.Printf(`{"load_ms": %.1f, "load_heap_bytes": %d, "packed_cache": {"hits": %d, "misses": %d, "bytes": %d}}`+"\n",
		float64(load.Microseconds())/1000, after.TotalAlloc-before.TotalAlloc, s.Hits, s.Misses, s.Bytes)
}

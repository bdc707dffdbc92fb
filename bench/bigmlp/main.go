// Command bigmlp writes an MLP with large linear weights (model.pte plus
// weights.ptd) for load benchmarks, in particular of the packed-weight
// cache:
//
//	go run ./bench/bigmlp -mib 64 -out /tmp/big
//	wgdelegate bench --packed-cache /tmp/wgd-cache --json --data /tmp/big/weights.ptd /tmp/big/model.pte  # cold
//	wgdelegate bench --packed-cache /tmp/wgd-cache --json --data /tmp/big/weights.ptd /tmp/big/model.pte  # warm
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/wgdelegate/wgdelegate/internal/models"
)

func main() {
	mib := flag.Int("mib", 64, "approximate weight size in MiB (two square linear layers)")
	out := flag.String("out", "", "directory for model.pte and weights.ptd (required)")
	batch := flag.Int64("batch", 8, "rows of the input (an upper bound: the batch is dynamic)")
	flag.Parse()
	if *out == "" {
		log.Fatal("bigmlp: -out is required")
	}
	// Two [n, n] float32 weights: 8·n² bytes.
	n := int64(math.Sqrt(float64(*mib) * (1 << 20) / 8))
	n -= n % 4
	m := models.NewMLP(models.MLPConfig{MaxBatch: *batch, In: n, Hidden: n, Out: n, Seed: 1})
	f, err := models.Encode(m.B, true)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, data := range map[string][]byte{"model.pte": f.PTE, "weights.ptd": f.PTD} {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("wrote %s: MLP [%d x %d] -> %d -> %d, %.1f MiB of weights\n", *out, *batch, n, n, n, float64(len(f.PTD))/(1<<20))
}

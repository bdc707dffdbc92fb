// Command bigmodel writes a model with large weights (model.pte plus
// weights.ptd) for load benchmarks, in particular of the packed-weight
// cache:
//
//	go run ./bench/bigmodel -kind conv -mib 64 -out /tmp/bigconv
//	wgdelegate bench --packed-cache /tmp/wgd-cache --json --data /tmp/bigconv/weights.ptd /tmp/bigconv/model.pte  # cold
//	wgdelegate bench --packed-cache /tmp/wgd-cache --json --data /tmp/bigconv/weights.ptd /tmp/bigconv/model.pte  # warm
//
// -kind conv is a stack of 3×3 convolutions (internal/models.ConvStack),
// whose weights the convolution kernel reads packed; -kind mlp is -linears
// square linear layers (two by default) with a relu (or -act gelu) between
// them and a dynamic batch (internal/models.MLP). Memory is planned the way
// the Vulkan exporter plans it (greedy, buffers reused as soon as a tensor
// is dead):
//
//	go run ./bench/bigmodel -kind mlp -linears 4 -prepack -out /tmp/mlp4   # 4 × 2048², 64 MiB
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

func main() {
	kind := flag.String("kind", "conv", "model: conv (3×3 convolution stack) or mlp (square linear layers)")
	linears := flag.Int("linears", 2, "mlp: number of linear layers")
	act := flag.String("act", "relu", "mlp: activation between the linears, relu or gelu")
	mib := flag.Float64("mib", 64, "approximate weight size in MiB")
	out := flag.String("out", "", "directory for model.pte and weights.ptd (required)")
	prepack := flag.Bool("prepack", false, "mlp: weights behind et_vk.prepack, as the Vulkan exporter writes them")
	batch := flag.Int64("batch", 8, "mlp: rows of the input (an upper bound: the batch is dynamic)")
	layers := flag.Int64("layers", 8, "conv: number of 3×3 convolutions")
	hw := flag.Int64("hw", 4, "conv: input height and width")
	flag.Parse()
	if *out == "" {
		log.Fatal("bigmodel: -out is required")
	}
	var b *serialization.Builder
	var desc string
	switch *kind {
	case "mlp":
		// -linears [n, n] float32 weights: 4·linears·n² bytes.
		if *linears < 2 {
			log.Fatal("bigmodel: -linears must be at least 2")
		}
		n := int64(math.Sqrt(*mib * (1 << 20) / float64(4**linears)))
		n -= n % 4
		b = models.NewMLP(models.MLPConfig{MaxBatch: *batch, In: n, Hidden: n, Out: n, Seed: 1, Prepack: *prepack, Linears: *linears, Act: *act}).B
		desc = fmt.Sprintf("MLP [%d x %d], %d linears of %d -> %d, %s", *batch, n, *linears, n, n, *act)
	case "conv":
		cfg := models.ConvStackForMiB(*mib, *layers, *hw)
		b = models.NewConvStack(cfg).B
		desc = fmt.Sprintf("%d 3x3 convolutions %d -> %d channels on [%d, %d, %d, %d]", cfg.Layers, cfg.C, cfg.C, cfg.N, cfg.C, cfg.H, cfg.W)
	default:
		log.Fatalf("bigmodel: unknown -kind %q (conv or mlp)", *kind)
	}
	models.ApplyPlan(b, models.PlanExporter)
	f, err := models.Encode(b, true)
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
	fmt.Printf("wrote %s: %s, %.1f MiB of weights\n", *out, desc, float64(len(f.PTD))/(1<<20))
}

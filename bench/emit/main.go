// Command emit writes the benchmark models of bench/models for
// bench/compare.sh, and can time one of them the way "wgdelegate bench
// --json" does (for trees where that command is missing).
//
//	go run ./bench/emit -out DIR             # DIR/<model>/{model.pte, weights.ptd, input.npy, <weight>.npy, out.npy, spec.json}
//	go run ./bench/emit -bench DIR/<model>   # {"load_ms":..,"first_execute_ms":..,"execute_ms":{"min","median","max"}}
//
// out.npy is wgdelegate's output for input.npy, which the PyTorch side
// compares its own result with; spec.json lists the layers (see
// models.Layer) that the PyTorch side replays.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/bench/models"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/npy"
)

func main() {
	out := flag.String("out", "", "directory to write every model to")
	bench := flag.String("bench", "", "a model directory written by -out to time")
	iters := flag.Int("iterations", 20, "timed executes after the first (with -bench)")
	flag.Parse()
	var err error
	switch {
	case *out != "":
		err = emit(*out)
	case *bench != "":
		err = benchDir(*bench, *iters)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "emit:", err)
		os.Exit(1)
	}
}

// spec is spec.json.
type spec struct {
	Name   string         `json:"name"`
	Doc    string         `json:"doc"`
	Layers []models.Layer `json:"layers"`
}

func emit(dir string) error {
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	for _, m := range models.All() {
		d := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		pte, ptd, err := m.Files()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if err := os.WriteFile(filepath.Join(d, "model.pte"), pte, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "weights.ptd"), ptd, 0o644); err != nil {
			return err
		}
		write := func(name string, t models.Tensor) error {
			return npy.WriteFile(filepath.Join(d, name+".npy"), graph.Float32Tensor(t.Shape, t.Data))
		}
		if err := write("input", m.Input); err != nil {
			return err
		}
		for name, w := range m.Weights {
			if err := write(name, w); err != nil {
				return err
			}
		}
		js, err := json.MarshalIndent(spec{Name: m.Name, Doc: m.Doc, Layers: m.Layers}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "spec.json"), js, 0o644); err != nil {
			return err
		}
		model, err := dev.Load(ctx, pte, ptd)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		outs, err := model.Execute(ctx, wgdelegate.Float32Tensor(m.Input.Shape, m.Input.Data))
		model.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if err := npy.WriteFile(filepath.Join(d, "out.npy"), graph.Tensor(outs[0])); err != nil {
			return err
		}
		fmt.Printf("%s: %s\n", d, m.Doc)
	}
	return nil
}

// benchDir times the model in dir like "wgdelegate bench --json".
func benchDir(dir string, iters int) error {
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	in, err := npy.ReadFile(filepath.Join(dir, "input.npy"))
	if err != nil {
		return err
	}
	t0 := time.Now()
	m, err := dev.LoadFile(ctx, filepath.Join(dir, "model.pte"), filepath.Join(dir, "weights.ptd"))
	if err != nil {
		return err
	}
	defer m.Close()
	load := time.Since(t0)
	x := wgdelegate.Tensor(in)
	t0 = time.Now()
	if _, err := m.Execute(ctx, x); err != nil {
		return err
	}
	first := time.Since(t0)
	ts := make([]float64, iters)
	for i := range ts {
		t := time.Now()
		if _, err := m.Execute(ctx, x); err != nil {
			return err
		}
		ts[i] = ms(time.Since(t))
	}
	slices.Sort(ts)
	med := ts[len(ts)/2]
	if len(ts)%2 == 0 {
		med = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	res := map[string]any{
		"load_ms": ms(load), "first_execute_ms": ms(first),
		"execute_ms":             map[string]float64{"min": ts[0], "median": med, "max": ts[len(ts)-1]},
		"dispatches_per_execute": m.MemoryStats().NumDispatches,
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

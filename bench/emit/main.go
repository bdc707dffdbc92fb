// Command emit writes the benchmark models of bench/models for
// bench/compare.sh, and can time one of them the way "wgdelegate bench
// --json" does (for trees where that command is missing).
//
//	go run ./bench/emit -out DIR             # DIR/<model>/{model.pte, weights.ptd, input_<i>.npy, out_<i>.npy, graph.json, c<id>.npy}
//	go run ./bench/emit -bench DIR/<model>   # {"load_ms":..,"first_execute_ms":..,"execute_ms":{"min","median","max"}}
//
// out_<i>.npy are wgdelegate's outputs for the inputs, which the PyTorch
// side compares its own results with; graph.json is the delegate graph
// (values, op chain, inputs, outputs; constants in c<id>.npy) that the
// PyTorch side replays op by op with torch.ops.aten.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/bench/models"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/npy"
	"github.com/wgdelegate/wgdelegate/serialization"
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

// gval is one value of graph.json (see bench/README.md).
type gval struct {
	K     string  `json:"k"` // null int double bool ints doubles bools list str sym tensor
	V     any     `json:"v,omitempty"`
	DType string  `json:"dtype,omitempty"`
	Dims  []int64 `json:"dims,omitempty"`
	Const string  `json:"const,omitempty"` // a constant's .npy file
}

// gop is one op call of graph.json.
type gop struct {
	Op   string  `json:"op"`
	Args []int32 `json:"args"`
}

// gjson is graph.json: the delegate graph in a form a Python interpreter
// replays with torch.ops.aten.
type gjson struct {
	Name    string   `json:"name"`
	Doc     string   `json:"doc"`
	Values  []gval   `json:"values"`
	Chain   []gop    `json:"chain"`
	Inputs  []uint32 `json:"inputs"`
	Outputs []uint32 `json:"outputs"`
}

func emit(dir string) error {
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	all, err := models.All()
	if err != nil {
		return err
	}
	for _, m := range all {
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
		for i, in := range m.Inputs {
			if err := npy.WriteFile(filepath.Join(d, fmt.Sprintf("input_%d.npy", i)), in); err != nil {
				return err
			}
		}
		if err := writeGraph(d, m); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		model, err := dev.Load(ctx, pte, ptd)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		outs, err := model.Execute(ctx, m.Inputs...)
		model.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		for i, o := range outs {
			if err := npy.WriteFile(filepath.Join(d, fmt.Sprintf("out_%d.npy", i)), o); err != nil {
				return err
			}
		}
		fmt.Printf("%s: %s\n", d, m.Doc)
	}
	return nil
}

// writeGraph writes graph.json and every constant as c<id>.npy.
func writeGraph(d string, m *models.Model) error {
	raw, err := m.Builder.Blob()
	if err != nil {
		return err
	}
	blob, err := serialization.DecodeBlob(raw)
	if err != nil {
		return err
	}
	named := map[string][]byte{}
	for _, nb := range m.Builder.NamedBlobs() {
		named[nb.Key] = nb.Data
	}
	g := blob.Graph
	out := gjson{Name: m.Name, Doc: m.Doc, Inputs: g.InputIDs, Outputs: g.OutputIDs}
	for id, v := range g.Values {
		var x gval
		switch v.Kind {
		case serialization.KindNull:
			x.K = "null"
		case serialization.KindInt:
			x.K, x.V = "int", v.Int
		case serialization.KindDouble:
			x.K, x.V = "double", v.Double
		case serialization.KindBool:
			x.K, x.V = "bool", v.Bool
		case serialization.KindIntList:
			x.K, x.V = "ints", v.Ints
		case serialization.KindDoubleList:
			x.K, x.V = "doubles", v.Doubles
		case serialization.KindBoolList:
			x.K, x.V = "bools", v.Bools
		case serialization.KindValueList:
			x.K, x.V = "list", v.IDs
		case serialization.KindString:
			x.K, x.V = "str", v.String
		case serialization.KindSymInt:
			x.K, x.V = "sym", v.SymInt
		case serialization.KindTensor:
			t := v.Tensor
			x.K, x.DType = "tensor", t.DataType.String()
			n := int64(1)
			for _, dd := range t.Dims {
				x.Dims = append(x.Dims, int64(dd))
				n *= int64(dd)
			}
			if t.ConstantID >= 0 {
				c := g.Constants[t.ConstantID]
				nb := n * int64(t.DataType.Size())
				var data []byte
				if c.IsNamed() {
					data = named[c.NamedKey]
				} else if c.Offset <= uint64(len(blob.Constants)) {
					data = blob.Constants[c.Offset:]
				}
				if int64(len(data)) < nb {
					return fmt.Errorf("constant %d: %d bytes, want %d", id, len(data), nb)
				}
				x.Const = fmt.Sprintf("c%d.npy", id)
				if err := npy.WriteFile(filepath.Join(d, x.Const), graph.Tensor{DType: t.DataType, Shape: x.Dims, Data: data[:nb]}); err != nil {
					return err
				}
			}
		default:
			x.K = "none"
		}
		out.Values = append(out.Values, x)
	}
	for _, op := range g.Chain {
		out.Chain = append(out.Chain, gop{Op: op.Name, Args: op.Args})
	}
	js, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "graph.json"), js, 0o644)
}

// benchDir times the model in dir like "wgdelegate bench --json".
func benchDir(dir string, iters int) error {
	ctx := context.Background()
	dev, err := wgdelegate.OpenDevice(ctx, wgdelegate.DeviceOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	var in []wgdelegate.Tensor
	for i := 0; ; i++ {
		t, err := npy.ReadFile(filepath.Join(dir, fmt.Sprintf("input_%d.npy", i)))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		in = append(in, t)
	}
	t0 := time.Now()
	m, err := dev.LoadFile(ctx, filepath.Join(dir, "model.pte"), filepath.Join(dir, "weights.ptd"))
	if err != nil {
		return err
	}
	defer m.Close()
	load := time.Since(t0)
	t0 = time.Now()
	if _, err := m.Execute(ctx, in...); err != nil {
		return err
	}
	first := time.Since(t0)
	ts := make([]float64, iters)
	for i := range ts {
		t := time.Now()
		if _, err := m.Execute(ctx, in...); err != nil {
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

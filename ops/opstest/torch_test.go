package opstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

var torchPython = flag.String("torch", "", "python3 with PyTorch: cross-check the reference against torch on every conformance case")

// TestTorchCrossCheck evaluates every conformance case's graph with PyTorch
// (testdata/torch_eval.py calls torch.ops.aten.<op>.<overload> with the
// graph's arguments) and compares the result with the plain-Go reference,
// so the reference's semantics are themselves checked against torch. It
// runs only with -torch=/path/to/python3 (Debian's python3-torch); cases
// with ops torch does not know (et_vk.*, llama.*, prepack) are skipped.
func TestTorchCrossCheck(t *testing.T) {
	t.Parallel()
	if *torchPython == "" {
		t.Skip("no -torch python given")
	}
	cmd := exec.Command(*torchPython, "testdata/torch_eval.py")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	lines := bufio.NewReader(stdout)
	skipped := map[string]int{}
	checked := 0
	for _, c := range Cases {
		r := rand.New(rand.NewPCG(1, 0x5eed))
		b := serialization.NewBuilder()
		inputs := c.Build(b, r)
		raw, err := b.Blob()
		if err != nil {
			t.Fatal(err)
		}
		blob, err := serialization.DecodeBlob(raw)
		if err != nil {
			t.Fatal(err)
		}
		named := serialization.NewNamedDataMap()
		for _, nb := range b.NamedBlobs() {
			named.Add(nb.Key, nb.Data)
		}
		want, err := reference.Run(blob, named, inputs)
		if err != nil {
			t.Errorf("%s: reference: %v", c.Name, err)
			continue
		}
		big := int64(0)
		for _, in := range inputs {
			big += in.Numel()
		}
		if big > 1<<18 {
			skipped["large inputs"]++
			continue
		}
		desc, err := torchGraph(blob, named, inputs)
		if err != nil {
			skipped[err.Error()]++
			continue
		}
		if _, err := stdin.Write(append(desc, '\n')); err != nil {
			t.Fatalf("python: %v: %s", err, errb.String())
		}
		line, err := lines.ReadBytes('\n')
		if err != nil {
			t.Fatalf("python: %v: %s", err, errb.String())
		}
		out := bytes.NewBuffer(line)
		var res struct {
			Skip    string
			Outputs []struct {
				Shape []int64
				Data  []any
			}
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Errorf("%s: %v: %s", c.Name, err, out.String())
			continue
		}
		if res.Skip != "" {
			skipped[res.Skip]++
			continue
		}
		checked++
		tol := Tolerance{Abs: 1e-4, Rel: 1e-4}
		if c.Tol.Rel > tol.Rel {
			tol = c.Tol
		}
		for i, o := range res.Outputs {
			got := reference.New(want[i].DType, o.Shape)
			if len(got.V) != len(o.Data) {
				t.Errorf("%s: output %d: torch gave %d values for %v", c.Name, i, len(o.Data), o.Shape)
				continue
			}
			for k, x := range o.Data {
				switch v := x.(type) {
				case float64:
					got.V[k] = v
				case string:
					got.V[k], _ = strconv.ParseFloat(v, 64)
				case bool:
					if v {
						got.V[k] = 1
					}
				}
			}
			if err := Compare(got, want[i], tol); err != nil {
				t.Errorf("%s: output %d: torch vs reference (got = torch): %v", c.Name, i, err)
			}
		}
	}
	t.Logf("%d cases checked against torch; skipped: %v", checked, skipped)
}

// torchGraph describes blob's graph with its input and constant values as
// JSON for torch_eval.py.
func torchGraph(blob *serialization.Blob, named serialization.NamedData, inputs []*reference.Tensor) ([]byte, error) {
	g := blob.Graph
	for _, op := range g.Chain {
		if strings.HasPrefix(op.Name, "et_vk.") || strings.HasPrefix(op.Name, "llama.") || strings.Contains(op.Name, "kv_cache") ||
			op.Name == "update_cache.default" || strings.HasPrefix(op.Name, "dim_order_ops.") || !strings.Contains(op.Name, ".") {
			return nil, fmt.Errorf("non-aten op %s", op.Name)
		}
	}
	isInput := map[int32]int{}
	for i, id := range g.InputIDs {
		isInput[int32(id)] = i
	}
	enc := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return v
	}
	type val map[string]any
	vals := make([]val, len(g.Values))
	for i, v := range g.Values {
		switch v.Kind {
		case serialization.KindTensor:
			t := v.Tensor
			m := val{"kind": "tensor", "dtype": t.DataType.String()}
			var data *reference.Tensor
			if k, ok := isInput[int32(i)]; ok {
				data = inputs[k]
			} else if t.ConstantID >= 0 {
				shape := make([]int64, len(t.Dims))
				for j, d := range t.Dims {
					shape[j] = int64(d)
				}
				b, err := blob.ResolveConstant(t, named)
				if err != nil {
					return nil, err
				}
				if data, err = reference.Decode(t.DataType, shape, b); err != nil {
					return nil, err
				}
			}
			if data != nil {
				d := make([]any, len(data.V))
				for j, x := range data.V {
					d[j] = enc(x)
				}
				m["data"], m["shape"] = d, append([]int64{}, data.Shape...)
			}
			vals[i] = m
		case serialization.KindInt:
			vals[i] = val{"kind": "int", "value": v.Int}
		case serialization.KindDouble:
			vals[i] = val{"kind": "double", "value": enc(v.Double)}
		case serialization.KindBool:
			vals[i] = val{"kind": "bool", "value": v.Bool}
		case serialization.KindString:
			vals[i] = val{"kind": "string", "value": v.String}
		case serialization.KindIntList:
			vals[i] = val{"kind": "intlist", "value": v.Ints}
		case serialization.KindDoubleList:
			vals[i] = val{"kind": "doublelist", "value": v.Doubles}
		case serialization.KindBoolList:
			vals[i] = val{"kind": "boollist", "value": v.Bools}
		case serialization.KindValueList:
			vals[i] = val{"kind": "valuelist", "ids": v.IDs}
		case serialization.KindSymInt:
			return nil, fmt.Errorf("SymInt values")
		default:
			vals[i] = val{"kind": "null"}
		}
	}
	chain := make([]map[string]any, len(g.Chain))
	for i, op := range g.Chain {
		chain[i] = map[string]any{"name": op.Name, "args": op.Args}
	}
	return json.Marshal(map[string]any{"values": vals, "chain": chain, "outputs": g.OutputIDs})
}

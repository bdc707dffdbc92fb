package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestInspectFP16: inspect labels FLOAT16 tensors with their device dtype
// (float32) and, for inputs and outputs, the host dtype their staging
// gives, and sizes the memory plan as the device allocates (4 bytes an
// element, not 2), with a linear's FLOAT16 weight deferred (held as packed
// halves, as a load does).
func TestInspectFP16(t *testing.T) {
	h, f := serialization.Float16, serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(h, []uint32{2, 3}, -1)
	b.SetStaging(x, f)
	c := b.InlineConst(h, []uint32{2, 3}, make([]byte, 12))
	y := b.Tensor(h, []uint32{2, 3}, 0)
	b.SetStaging(y, f)
	b.Op("aten.add.Tensor", x, c, b.Int(1), y)
	w, _ := b.NamedConst(h, []uint32{4, 8}, make([]byte, 64))
	x2 := b.Tensor(h, []uint32{1, 8}, -1)
	b.SetStaging(x2, f)
	z := b.Tensor(h, []uint32{1, 4}, -1)
	b.SetStaging(z, f)
	b.Op("aten.linear.default", x2, w, b.Null(), z)
	b.Inputs(x, x2)
	b.Outputs(y, z)
	raw, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fp16.bin")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustRun(t, "inspect", path)
	for _, want := range []string{"float16(float32 on device)", "float16(float32 on device),host:float32", "1, 24 bytes"} {
		if !strings.Contains(s, want) {
			t.Errorf("inspect lacks %q:\n%s", want, s)
		}
	}
	var doc inspectDoc
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", path)), &doc); err != nil {
		t.Fatal(err)
	}
	in := doc.Graphs[0].Inputs[0]
	if in.DType != "float16" || in.DeviceDType != "float32" || in.HostDType != "float32" {
		t.Errorf("input %+v", in)
	}
	if mp := doc.Graphs[0].MemoryPlan; mp.SharedBytes != 24 || mp.DeferredConstants != 1 || mp.DeferredBytes != 4*8*4 {
		t.Errorf("memory plan %+v, want 24 shared bytes and the 128-byte weight deferred", mp)
	}
}

// TestRunFP16: run feeds a float32 .npy to a FLOAT16 input (rounded to
// half) and writes FLOAT16 outputs as float32 .npy, with both stagings:
// FLOAT32 (the host sees float32) and FLOAT16 (the host sees halves).
func TestRunFP16(t *testing.T) {
	for _, staging := range []serialization.DataType{serialization.Float32, serialization.Float16} {
		h := serialization.Float16
		b := serialization.NewBuilder()
		x := b.Tensor(h, []uint32{2, 3}, -1)
		b.SetStaging(x, staging)
		y := b.Tensor(h, []uint32{2, 3}, -1)
		b.SetStaging(y, staging)
		b.Op("aten.mul.Tensor", x, x, y)
		b.Inputs(x)
		b.Outputs(y)
		dir := t.TempDir()
		model := write(t, dir, "fp16.bin", mustBlob(t, b))
		// 1/3 is not a half: it rounds to 0.333251953125 before squaring.
		in := []float32{1.0 / 3, -2, 0.5, 300, 1e-3, 7}
		xp := writeNPY(t, dir, "x.npy", graph.Float32Tensor([]int64{2, 3}, in))
		out := filepath.Join(dir, "out")
		mustRun(t, "run", "--input", xp, "--output-dir", out, model)
		got := readNPY(t, filepath.Join(out, "output_0.npy"))
		if got.DType != serialization.Float32 || !slices.Equal(got.Shape, []int64{2, 3}) {
			t.Fatalf("staging %v: output %v %v, want float32 [2 3]", staging, got.DType, got.Shape)
		}
		for i, v := range float32s(t, got) {
			xh := wgdelegate.HalfToFloat32(wgdelegate.Float32ToHalf(in[i]))
			if want := wgdelegate.HalfToFloat32(wgdelegate.Float32ToHalf(xh * xh)); v != want {
				t.Errorf("staging %v: output[%d] = %v, want %v (the half of x²)", staging, i, v, want)
			}
		}
	}
}

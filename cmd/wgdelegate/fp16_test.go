package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestInspectFP16: inspect labels FLOAT16 tensors with their device dtype
// (float32) and, for inputs and outputs, the host dtype their staging
// gives, and sizes the memory plan as the device allocates (4 bytes an
// element, not 2).
func TestInspectFP16(t *testing.T) {
	h, f := serialization.Float16, serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(h, []uint32{2, 3}, -1)
	b.SetStaging(x, f)
	c := b.InlineConst(h, []uint32{2, 3}, make([]byte, 12))
	y := b.Tensor(h, []uint32{2, 3}, 0)
	b.SetStaging(y, f)
	b.Op("aten.add.Tensor", x, c, b.Int(1), y)
	b.Inputs(x)
	b.Outputs(y)
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
	if mp := doc.Graphs[0].MemoryPlan; mp.SharedBytes != 24 {
		t.Errorf("memory plan %+v, want 24 shared bytes", mp)
	}
}

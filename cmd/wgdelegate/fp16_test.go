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

package wgdelegate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops/reference"
)

// End-to-end model tests: whole networks written with the serialization
// writer (internal/models, shared with the examples), saved as files,
// opened with wgdelegate.Open on the real device and compared with the
// plain-Go reference interpreter at 1e-3 relative (models.Tol).

// openModel writes f to a temporary directory and opens it on the shared
// test device.
func openModel(t *testing.T, f models.Files) *wgdelegate.Model {
	t.Helper()
	dir := t.TempDir()
	pte := filepath.Join(dir, "model.pte")
	if err := os.WriteFile(pte, f.PTE, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := []wgdelegate.Option{wgdelegate.WithDevice(device(t))}
	if f.PTD != nil {
		ptd := filepath.Join(dir, "weights.ptd")
		if err := os.WriteFile(ptd, f.PTD, 0o644); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, wgdelegate.WithDataFiles(ptd))
	}
	m, err := wgdelegate.Open(context.Background(), pte, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// compareOutputs checks every output against the reference's.
func compareOutputs(t *testing.T, what string, got []wgdelegate.Tensor, want []*reference.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for i := range want {
		d, err := models.Compare(got[i], want[i], models.Tol)
		if err != nil {
			t.Fatalf("%s: output %d: %v", what, i, err)
		}
		t.Logf("%s: output %d %v: %v", what, i, got[i].Shape, d)
	}
}

// TestE2ECNN: conv 3×3 + batch norm + relu, max pool, depthwise conv with
// stride 2, pointwise conv + relu, avg pool, view, linear, softmax, with
// the weights in the .pte's own named data; executed twice with different
// images.
func TestE2ECNN(t *testing.T) {
	m := models.NewCNN(models.DefaultCNN)
	f, err := models.Encode(m.B, false)
	if err != nil {
		t.Fatal(err)
	}
	model := openModel(t, f)
	for run, seed := range []uint64{10, 11} {
		x := m.Input(seed)
		got, err := model.Execute(context.Background(), wgdelegate.FromFloat32(m.InputShape(), x))
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Reference(x)
		if err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, fmt.Sprintf("run %d", run), got, want)
	}
}

// TestE2EDecoderKVCache: a transformer decoder layer (rms_norm, q/k/v
// projections, rotary embedding, sdpa_with_kv_cache with grouped-query
// attention, SwiGLU feed-forward, residuals) with its weights in a .ptd,
// stepped over several Execute calls of one loaded model. The token count
// per step is dynamic (prefill 3, then 1, 1, 2, 1), input_pos is a SymInt
// input, and the attended sequence grows from 3 to 8 positions; each
// step is checked against a reference that replays the same steps, which
// holds only if the cache rows each Execute writes persist into the next.
func TestE2EDecoderKVCache(t *testing.T) {
	d, err := models.NewDecoder(models.DefaultDecoder)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(d.B, true)
	if err != nil {
		t.Fatal(err)
	}
	model := openModel(t, f)
	ref := d.NewReference()
	steps := [][]int32{{5, 17, 42}, {7}, {88}, {1, 30}, {64}}
	pos := int64(0)
	for i, toks := range steps {
		got, err := model.Execute(context.Background(), d.Inputs(toks, pos)...)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want, err := ref.Step(toks, pos)
		if err != nil {
			t.Fatalf("step %d: reference: %v", i, err)
		}
		compareOutputs(t, fmt.Sprintf("step %d (input_pos %d, %d tokens)", i, pos, len(toks)), got, want)
		pos += int64(len(toks))
	}
}

// TestE2EMLPDynamicBatch: one loaded MLP (declared batch 8, an upper
// bound) executed with batches of 1, 3, 8 and 3 again; outputs come back
// with the live batch size.
func TestE2EMLPDynamicBatch(t *testing.T) {
	m := models.NewMLP(models.DefaultMLP)
	f, err := models.Encode(m.B, true)
	if err != nil {
		t.Fatal(err)
	}
	model := openModel(t, f)
	for i, rows := range []int64{1, 3, 8, 3} {
		x := m.Input(rows, uint64(20+i))
		got, err := model.Execute(context.Background(), wgdelegate.FromFloat32([]int64{rows, m.Cfg.In}, x))
		if err != nil {
			t.Fatalf("batch %d: %v", rows, err)
		}
		want, err := m.Reference(x, rows)
		if err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, fmt.Sprintf("batch %d", rows), got, []*reference.Tensor{want})
	}
	// Over the bound is an error, not a crash.
	rows := m.Cfg.MaxBatch + 1
	if _, err := model.Execute(context.Background(), wgdelegate.FromFloat32([]int64{rows, m.Cfg.In}, m.Input(rows, 1))); err == nil {
		t.Fatalf("batch %d over the bound %d: no error", rows, m.Cfg.MaxBatch)
	}
}

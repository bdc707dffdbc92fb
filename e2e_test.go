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
	"github.com/wgdelegate/wgdelegate/serialization"
)

// End-to-end model tests: whole networks written with the serialization
// writer (internal/models, shared with the examples), saved as files,
// opened with wgdelegate.Open on the real device and compared with the
// plain-Go reference interpreter at 1e-3 relative (models.Tol).

// openModel writes f to a temporary directory and opens it on the shared
// test device.
func openModel(t *testing.T, f models.Files, extra ...wgdelegate.Option) *wgdelegate.Model {
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
	m, err := wgdelegate.Open(context.Background(), pte, append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// compareOutputs checks every output against the reference's at
// models.Tol.
func compareOutputs(t *testing.T, what string, got []wgdelegate.Tensor, want []*reference.Tensor) {
	t.Helper()
	compareAt(t, models.Tol, what, got, want)
}

// compareAt checks every output against the reference's at tol.
func compareAt(t *testing.T, tol models.Tolerance, what string, got []wgdelegate.Tensor, want []*reference.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for i := range want {
		d, err := models.Compare(got[i], want[i], tol)
		if err != nil {
			t.Fatalf("%s: output %d: %v", what, i, err)
		}
		t.Logf("%s: output %d %v %v: %v", what, i, got[i].DType, got[i].Shape, d)
	}
}

// TestE2ECNN: conv 3×3 + batch norm + relu, max pool, depthwise conv with
// stride 2, pointwise conv + relu, avg pool, view, linear, softmax, with
// the weights in the .pte's own named data; executed twice with different
// images. The dynamic variant declares a batch of 3 as the bound and runs
// batches of 1, 3 and 2 through one loaded model (the flattening view
// sized by sym_size.int).
func TestE2ECNN(t *testing.T) {
	dyn := models.CNNConfig{N: 3, C: 3, H: 16, W: 24, C1: 8, C2: 12, Classes: 5, Seed: 4, BatchNormEpsilon: 1e-3, DynamicBatch: true}
	for _, tc := range []struct {
		name    string
		cfg     models.CNNConfig
		batches []int64
	}{
		{"default", models.DefaultCNN, []int64{1, 1}},
		{"dynamic_batch", dyn, []int64{1, 3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := models.NewCNN(tc.cfg)
			forEachPlan(t, m.B, false, func(t *testing.T, model *wgdelegate.Model) {
				for run, n := range tc.batches {
					x := m.BatchInput(n, uint64(10+run))
					got, err := model.Execute(context.Background(), wgdelegate.FromFloat32(m.BatchShape(n), x))
					if err != nil {
						t.Fatal(err)
					}
					want, err := m.Reference(x)
					if err != nil {
						t.Fatal(err)
					}
					compareOutputs(t, fmt.Sprintf("run %d (batch %d)", run, n), got, want)
				}
			})
		})
	}
}

// forEachPlan runs run on the model b builds under each of models.Plans
// (b's mem_obj_ids are rewritten in place), encoded with separate weights
// or not, and checks that every plan records as many dispatches: the
// exporter's memory plan must not cost a fusion.
func forEachPlan(t *testing.T, b *serialization.Builder, separate bool, run func(t *testing.T, m *wgdelegate.Model)) {
	t.Helper()
	counts := map[models.Plan]int{}
	forEachPlanOpts(t, b, separate, nil, func(t *testing.T, plan models.Plan, model *wgdelegate.Model) {
		run(t, model)
		counts[plan] = model.MemoryStats().NumDispatches
		if st := model.MemoryStats(); st.AddedSharedBytes != 0 {
			t.Errorf("the re-plan added %d bytes to the plan's shared objects", st.AddedSharedBytes)
		}
	})
	if len(counts) == len(models.Plans) && counts[models.PlanDedicated] != counts[models.PlanExporter] {
		t.Errorf("dispatches per plan %v, want the same", counts)
	}
}

// forEachPlanOpts runs run on the model b builds under each of
// models.Plans, encoded with separate weights or not and opened with the
// extra load options opts; it checks nothing itself.
func forEachPlanOpts(t *testing.T, b *serialization.Builder, separate bool, opts []wgdelegate.Option, run func(t *testing.T, plan models.Plan, m *wgdelegate.Model)) {
	t.Helper()
	for _, plan := range models.Plans {
		t.Run("plan="+string(plan), func(t *testing.T) {
			models.ApplyPlan(b, plan)
			f, err := models.Encode(b, separate)
			if err != nil {
				t.Fatal(err)
			}
			run(t, plan, openModel(t, f, opts...))
		})
	}
}

// decodeStep is one Execute of a decoder: the new tokens and input_pos.
type decodeStep struct {
	tokens []int32
	pos    int64
}

// checkDecodeSteps executes steps on model in order and checks each
// step's outputs at tol against a fresh reference of d replaying them.
func checkDecodeSteps(t *testing.T, model *wgdelegate.Model, d *models.Decoder, steps []decodeStep, tol models.Tolerance) {
	t.Helper()
	ref := d.NewReference()
	for i, s := range steps {
		got, err := model.Execute(context.Background(), d.Inputs(s.tokens, s.pos)...)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want, err := ref.Step(s.tokens, s.pos)
		if err != nil {
			t.Fatalf("step %d: reference: %v", i, err)
		}
		compareAt(t, tol, fmt.Sprintf("step %d (input_pos %d, %d tokens)", i, s.pos, len(s.tokens)), got, want)
	}
}

// checkMLPBatches executes m on model with a batch of each of rows (the
// inputs drawn from seeds seed, seed+1, …) and checks the outputs
// against the reference's.
func checkMLPBatches(t *testing.T, model *wgdelegate.Model, m *models.MLP, rows []int64, seed uint64) {
	t.Helper()
	for i, n := range rows {
		x := m.Input(n, seed+uint64(i))
		got, err := model.Execute(context.Background(), wgdelegate.FromFloat32([]int64{n, m.Cfg.In}, x))
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		want, err := m.Reference(x, n)
		if err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, fmt.Sprintf("batch %d", n), got, []*reference.Tensor{want})
	}
}

// TestE2EDecoderKVCache: a transformer decoder layer (rms_norm, q/k/v
// projections, rotary embedding, KV-cache attention with grouped-query
// heads, SwiGLU feed-forward, residuals) with its weights in a .ptd,
// stepped over several Execute calls of one loaded model. The token count
// per step is dynamic (prefill 3, then 1, 1, 2, 1), input_pos is a SymInt
// input, and the attended sequence grows from 3 to 8 positions; then a
// new 4-token prompt restarts at input_pos 0, overwriting the cache rows,
// and decodes once more. Each step is checked against a reference that
// replays the same steps, which holds only if the cache rows each Execute
// writes persist into the next. Both cache op styles run:
// sdpa_with_kv_cache, and update_cache ×2 + llama.custom_sdpa.
func TestE2EDecoderKVCache(t *testing.T) {
	steps := []decodeStep{{[]int32{5, 17, 42}, 0}, {[]int32{7}, 3}, {[]int32{88}, 4}, {[]int32{1, 30}, 5}, {[]int32{64}, 7},
		{[]int32{9, 2, 71, 40}, 0}, {[]int32{12}, 4}}
	for _, split := range []bool{false, true} {
		name := "sdpa_with_kv_cache"
		if split {
			name = "update_cache+custom_sdpa"
		}
		t.Run(name, func(t *testing.T) {
			cfg := models.DefaultDecoder
			cfg.SplitCache = split
			d, err := models.NewDecoder(cfg)
			if err != nil {
				t.Fatal(err)
			}
			forEachPlan(t, d.B, true, func(t *testing.T, model *wgdelegate.Model) {
				checkDecodeSteps(t, model, d, steps, models.Tol)
			})
		})
	}
}

// TestE2EMLPDynamicBatch: one loaded MLP (declared batch 8, an upper
// bound) executed with batches of 1, 3, 8 and 3 again; outputs come back
// with the live batch size. With its weights as constants and behind
// et_vk.prepack.
func TestE2EMLPDynamicBatch(t *testing.T) {
	for _, prepacked := range []bool{false, true} {
		for _, plan := range models.Plans {
			t.Run(fmt.Sprintf("prepack=%v/plan=%s", prepacked, plan), func(t *testing.T) {
				cfg := models.DefaultMLP
				cfg.Prepack = prepacked
				m := models.NewMLP(cfg)
				models.ApplyPlan(m.B, plan)
				testMLPDynamicBatch(t, m)
			})
		}
	}
}

// TestE2EMLPExporterPlan: MLPs of 3 and 4 linears with relu (and gelu)
// between them, weights behind et_vk.prepack and memory planned the
// exporter's way, so that each activation shares a buffer with the input
// of the linear before it. Fusion must stay on (one dispatch per linear,
// as under dedicated buffers) and the results must match the reference;
// the exporter's shared objects are enough (no buffer added).
func TestE2EMLPExporterPlan(t *testing.T) {
	for _, c := range []struct {
		linears int
		act     string
	}{{3, "relu"}, {4, "relu"}, {3, "gelu"}} {
		dispatches := map[models.Plan]int{}
		for _, plan := range models.Plans {
			t.Run(fmt.Sprintf("linears=%d/%s/plan=%s", c.linears, c.act, plan), func(t *testing.T) {
				cfg := models.MLPConfig{MaxBatch: 8, In: 12, Hidden: 20, Out: 7, Seed: 9, Prepack: true, Linears: c.linears, Act: c.act}
				m := models.NewMLP(cfg)
				models.ApplyPlan(m.B, plan)
				f, err := models.Encode(m.B, true)
				if err != nil {
					t.Fatal(err)
				}
				model := openModel(t, f)
				st := model.MemoryStats()
				dispatches[plan] = st.NumDispatches
				if st.NumDispatches != c.linears {
					t.Errorf("%d dispatches, want %d (one per linear, activations fused)", st.NumDispatches, c.linears)
				}
				if st.AddedSharedBytes != 0 {
					t.Errorf("the re-plan added %d bytes of shared buffers to the exporter's plan", st.AddedSharedBytes)
				}
				if plan == models.PlanExporter && (st.NumSharedObjects != 2 || st.MovedTensors == 0) {
					t.Errorf("exporter plan: %d shared objects, %d tensors moved; want 2 objects and some moved by fusion", st.NumSharedObjects, st.MovedTensors)
				}
				testMLPDynamicBatch(t, m, model)
			})
		}
		if dispatches[models.PlanDedicated] != dispatches[models.PlanExporter] {
			t.Errorf("linears=%d: %v dispatches per plan, want the same", c.linears, dispatches)
		}
	}
}

// testMLPDynamicBatch is TestE2EMLPDynamicBatch for one MLP, opened from
// its files unless a model is given.
func testMLPDynamicBatch(t *testing.T, m *models.MLP, loaded ...*wgdelegate.Model) {
	var model *wgdelegate.Model
	if len(loaded) > 0 {
		model = loaded[0]
	} else {
		f, err := models.Encode(m.B, true)
		if err != nil {
			t.Fatal(err)
		}
		model = openModel(t, f)
	}
	checkMLPBatches(t, model, m, []int64{1, 3, 8, 3}, 20)
	// Over the bound is an error, not a crash.
	rows := m.Cfg.MaxBatch + 1
	if _, err := model.Execute(context.Background(), wgdelegate.FromFloat32([]int64{rows, m.Cfg.In}, m.Input(rows, 1))); err == nil {
		t.Fatalf("batch %d over the bound %d: no error", rows, m.Cfg.MaxBatch)
	}
}

package wgdelegate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestE2EQuantizedCNN: the statically quantized CNN (models.QCNN: quantize,
// q8ta conv 3×3 + relu, depthwise conv stride 2 + relu, pointwise conv,
// q8ta_relu, dequantize → avg pool → quantize, view, q8ta_linear,
// dequantize) opened with wgdelegate.Open under both memory plans and
// compared with the reference interpreter: the int8 logits exactly, the
// dequantized logits at models.Tol. The Int8IO variant takes and returns
// int8 tensors (the program as quantize_io_pass leaves it), with a batch
// of 2 (q8ta_linear instead of the gemv name).
func TestE2EQuantizedCNN(t *testing.T) {
	int8IO := models.DefaultQCNN
	int8IO.Int8IO, int8IO.N, int8IO.Seed = true, 2, 5
	for _, tc := range []struct {
		name string
		cfg  models.QCNNConfig
	}{{"float_io", models.DefaultQCNN}, {"int8_io", int8IO}} {
		t.Run(tc.name, func(t *testing.T) {
			m := models.NewQCNN(tc.cfg)
			forEachPlan(t, m.B, false, func(t *testing.T, model *wgdelegate.Model) {
				// Every int8 weight (each q8ta conv and linear has one)
				// is reported at a byte per weight plus scales and sums.
				var weights int
				for _, op := range m.B.Graph().Chain {
					if strings.HasPrefix(op.Name, "et_vk.q8ta_conv2d") || strings.HasPrefix(op.Name, "et_vk.q8ta_linear") {
						weights++
					}
				}
				if st := model.MemoryStats(); weights == 0 || st.NumQuantizedWeights != weights || st.QuantizedWeightBytes <= st.QuantizedParams {
					t.Fatalf("%d int8 weights; MemoryStats reports %d, %d params in %d bytes", weights, st.NumQuantizedWeights, st.QuantizedParams, st.QuantizedWeightBytes)
				}
				for run := range 2 {
					x := m.Input(uint64(30 + run))
					xq := m.QuantizeInput(x)
					in := wgdelegate.FromFloat32(m.InputShape(), x)
					if tc.cfg.Int8IO {
						in = wgdelegate.FromInt8(m.InputShape(), xq)
					}
					got, err := model.Execute(context.Background(), in)
					if err != nil {
						t.Fatal(err)
					}
					want, err := m.Reference(x, xq)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("%d outputs, want %d", len(got), len(want))
					}
					for i := range want {
						tol := models.Tolerance{} // int8 codes: exact
						if got[i].DType == wgdelegate.Float32 {
							tol = models.Tol
						}
						if _, err := models.Compare(got[i], want[i], tol); err != nil {
							t.Fatalf("run %d: output %d: %v", run, i, err)
						}
					}
					codes, err := got[len(got)-1].Int8s()
					if err != nil {
						t.Fatal(err)
					}
					distinct := map[int8]bool{}
					for _, c := range codes {
						distinct[c] = true
					}
					if len(distinct) < len(codes)/2 {
						t.Errorf("run %d: int8 logits %v have %d distinct values: the model computes little", run, codes, len(distinct))
					}
					t.Logf("run %d: int8 logits %v", run, fmt.Sprint(codes))
				}
			})
		})
	}
}

// TestE2EQuantizedCNNMatchesUnfused runs the network twice on the device:
// as the exporter writes it (q8ta ops, integer accumulation) and as the
// quantizer hands it to the exporter (models.QCNN.Unfused: dequantize →
// float aten.convolution / aten.linear / aten.relu → quantize around every
// layer, float32 weights code·scale). Both compute the same real numbers
// in a different float32 order, so an int8 code may move by one where a
// value sits next to a rounding boundary, and the move can carry into
// later layers: the int8 logits must agree within 2 codes, and most
// exactly.
func TestE2EQuantizedCNNMatchesUnfused(t *testing.T) {
	int8IO := models.DefaultQCNN
	int8IO.Int8IO, int8IO.N, int8IO.Seed = true, 2, 5
	for _, cfg := range []models.QCNNConfig{models.DefaultQCNN, int8IO} {
		m := models.NewQCNN(cfg)
		var models2 [2]*wgdelegate.Model
		for i, b := range []*serialization.Builder{m.B, m.Unfused} {
			models.ApplyPlan(b, models.PlanExporter)
			f, err := models.Encode(b, false)
			if err != nil {
				t.Fatal(err)
			}
			models2[i] = openModel(t, f)
		}
		same, total := 0, 0
		for run := range 3 {
			x := m.Input(uint64(50 + run))
			in := wgdelegate.FromFloat32(m.InputShape(), x)
			if cfg.Int8IO {
				in = wgdelegate.FromInt8(m.InputShape(), m.QuantizeInput(x))
			}
			var codes [2][]int8
			for i, model := range models2 {
				got, err := model.Execute(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				if codes[i], err = got[len(got)-1].Int8s(); err != nil {
					t.Fatal(err)
				}
			}
			for j := range codes[0] {
				d := int(codes[0][j]) - int(codes[1][j])
				if d < -2 || d > 2 {
					t.Fatalf("int8io=%v run %d: logit %d: fused %d, unfused %d", cfg.Int8IO, run, j, codes[0][j], codes[1][j])
				}
				if d == 0 {
					same++
				}
				total++
			}
			t.Logf("int8io=%v run %d: fused %v, unfused %v", cfg.Int8IO, run, codes[0], codes[1])
		}
		if same*4 < total*3 {
			t.Errorf("int8io=%v: only %d of %d int8 logits agree exactly", cfg.Int8IO, same, total)
		}
	}
}

package wgdelegate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
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

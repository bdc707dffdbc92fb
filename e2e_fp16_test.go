package wgdelegate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// compareFP16 checks every output against the reference's at
// models.FP16Tol.
func compareFP16(t *testing.T, what string, got []wgdelegate.Tensor, want []*reference.Tensor) {
	t.Helper()
	compareAt(t, models.FP16Tol, what, got, want)
}

// halves returns x's values as a float16 tensor (rounded to nearest even).
func halves(shape []int64, x []float32) wgdelegate.Tensor {
	h := make([]uint16, len(x))
	for i, v := range x {
		h[i] = tensor.Float32ToHalf(v)
	}
	return tensor.FromFloat16(shape, h)
}

// TestE2EFP16MLP: the MLP written as a force_fp16 export (every weight a
// FLOAT16 named constant in a .ptd, routed through et_vk.prepack or not;
// every activation FLOAT16) opened with wgdelegate.Open under both memory
// plans, run on dynamic batches. With float32 staging the host feeds and
// receives float32, as for a real force_fp16 export; with float16 staging
// (a model exported in half) it receives float16, and float32 data is
// accepted too, converted: the results equal those of the same values
// passed as halves, bit for bit.
func TestE2EFP16MLP(t *testing.T) {
	ctx := context.Background()
	for _, staging := range []serialization.DataType{serialization.Float32, serialization.Float16} {
		for _, prepacked := range []bool{false, true} {
			for _, plan := range models.Plans {
				t.Run(fmt.Sprintf("staging=%v/prepack=%v/plan=%s", staging, prepacked, plan), func(t *testing.T) {
					cfg := models.MLPConfig{MaxBatch: 8, In: 24, Hidden: 40, Out: 9, Seed: 5, Prepack: prepacked, Linears: 3}
					m := models.NewMLP(cfg)
					var err error
					if m.B, err = models.ForceFP16(m.B, staging); err != nil {
						t.Fatal(err)
					}
					models.ApplyPlan(m.B, plan)
					f, err := models.Encode(m.B, true)
					if err != nil {
						t.Fatal(err)
					}
					model := openModel(t, f)
					if dt, _, _ := model.InputInfo(0); dt != staging {
						t.Errorf("InputInfo dtype %v, want %v", dt, staging)
					}
					if dt, _, _ := model.OutputInfo(0); dt != staging {
						t.Errorf("OutputInfo dtype %v, want %v", dt, staging)
					}
					st := model.MemoryStats()
					// x, 3 weights and 3 biases (and their prepacked
					// copies), 2 hidden activations (and their
					// activations), y.
					if st.NumFloat16Tensors < 1+6+4+1 || st.Float16TensorBytes <= 0 {
						t.Errorf("MemoryStats: %d float16 tensors, %d bytes", st.NumFloat16Tensors, st.Float16TensorBytes)
					}
					for i, rows := range []int64{1, 5, 8} {
						x := m.Input(rows, uint64(30+i))
						shape := []int64{rows, cfg.In}
						in := wgdelegate.FromFloat32(shape, x)
						if staging == serialization.Float16 {
							in = halves(shape, x)
						}
						got, err := model.Execute(ctx, in)
						if err != nil {
							t.Fatalf("batch %d: %v", rows, err)
						}
						want, err := m.Reference(x, rows)
						if err != nil {
							t.Fatal(err)
						}
						if staging == serialization.Float16 {
							// The reference returns a FLOAT16 output
							// staged as float16 as float16.
							if want.DType != serialization.Float16 {
								t.Fatalf("reference output %v", want.DType)
							}
						}
						compareFP16(t, fmt.Sprintf("batch %d", rows), got, []*reference.Tensor{want})
						// Float32 data for any FLOAT16 input is rounded to
						// half on upload: the same result as the halves.
						other := wgdelegate.FromFloat32(shape, x)
						if staging == serialization.Float32 {
							other = halves(shape, x)
						}
						again, err := model.Execute(ctx, other)
						if err != nil {
							t.Fatalf("batch %d, %v data: %v", rows, other.DType, err)
						}
						if again[0].DType != got[0].DType || !bytes.Equal(again[0].Data, got[0].Data) {
							t.Errorf("batch %d: %v data gave other results than %v data", rows, other.DType, in.DType)
						}
					}
				})
			}
		}
	}
}

// TestE2EFP16CNN: the CNN (convolutions, batch norm, pools, linear,
// softmax) as a force_fp16 export with float32 staging, its weights in the
// .pte's own named data, under both memory plans.
func TestE2EFP16CNN(t *testing.T) {
	m := models.NewCNN(models.DefaultCNN)
	var err error
	if m.B, err = models.ForceFP16(m.B, serialization.Float32); err != nil {
		t.Fatal(err)
	}
	forEachPlan(t, m.B, false, func(t *testing.T, model *wgdelegate.Model) {
		for run := range 2 {
			x := m.Input(uint64(40 + run))
			got, err := model.Execute(context.Background(), wgdelegate.FromFloat32(m.InputShape(), x))
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Reference(x)
			if err != nil {
				t.Fatal(err)
			}
			compareFP16(t, fmt.Sprintf("run %d", run), got, want)
		}
	})
}

// TestFP16InputErrors: wrong data for a FLOAT16 input is an error
// wrapping ErrInput, never a panic or a silent misread: a float16 byte
// count that does not match the shape, an odd byte count, integer data,
// and float16 data for a float32 input.
func TestFP16InputErrors(t *testing.T) {
	ctx := context.Background()
	cfg := models.MLPConfig{MaxBatch: 4, In: 8, Hidden: 8, Out: 3, Seed: 2}
	m := models.NewMLP(cfg)
	b32 := m.B
	var err error
	if m.B, err = models.ForceFP16(m.B, serialization.Float16); err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(m.B, false)
	if err != nil {
		t.Fatal(err)
	}
	model := openModel(t, f)
	shape := []int64{2, cfg.In}
	good := halves(shape, m.Input(2, 1))
	for name, in := range map[string]wgdelegate.Tensor{
		"float16 one element short": {DType: wgdelegate.Float16, Shape: shape, Data: good.Data[:len(good.Data)-2]},
		"float16 odd byte count":    {DType: wgdelegate.Float16, Shape: shape, Data: good.Data[:len(good.Data)-1]},
		"float16 bytes as float32":  {DType: wgdelegate.Float32, Shape: shape, Data: good.Data},
		"int32 data":                wgdelegate.FromInt32(shape, make([]int32, 16)),
		"unknown dtype":             {DType: 99, Shape: shape, Data: good.Data},
	} {
		if _, err := model.Execute(ctx, in); !errors.Is(err, wgdelegate.ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
	if _, err := model.Execute(ctx, good); err != nil {
		t.Fatalf("good input: %v", err)
	}
	f32, err := models.Encode(b32, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openModel(t, f32).Execute(ctx, good); !errors.Is(err, wgdelegate.ErrInput) {
		t.Errorf("float16 data for a float32 input: %v, want ErrInput", err)
	}
}

// TestE2EFP16DecoderKVCache: the decoder layer of TestE2EDecoderKVCache
// as a force_fp16 export (FLOAT16 weights, rope tables, activations and
// KV caches, the caches updated in place across Executes), its weights in
// a .ptd, both cache op styles, stepped through prefill, decode and a
// restart, against the float32 reference on the same half-rounded values.
func TestE2EFP16DecoderKVCache(t *testing.T) {
	steps := []decodeStep{{[]int32{5, 17, 42}, 0}, {[]int32{7}, 3}, {[]int32{88}, 4}, {[]int32{1, 30}, 5}, {[]int32{9, 2}, 0}, {[]int32{12}, 2}}
	for _, c := range []struct{ split, noHalf bool }{{false, false}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("split_cache=%v/no_half_weights=%v", c.split, c.noHalf), func(t *testing.T) {
			cfg := models.DefaultDecoder
			cfg.SplitCache = c.split
			d, err := models.NewDecoderFP16(cfg)
			if err != nil {
				t.Fatal(err)
			}
			forEachPlanOpts(t, d.B, true, []wgdelegate.Option{wgdelegate.WithKernels(ops.Config{NoHalfWeights: c.noHalf})}, func(t *testing.T, _ models.Plan, model *wgdelegate.Model) {
				st := model.MemoryStats()
				if st.NumFloat16Tensors == 0 {
					t.Error("no float16 tensors")
				}
				// Half weights: the linear weights' float32 copies (wq,
				// wk, wv, wo, w1, w2, w3, output) have no buffer; other
				// constants (rope tables behind et_vk.prepack) may be
				// deferred too.
				if !c.noHalf && (st.PackedWeightBytes == 0 || st.DeferredConstantBytes < 2*st.PackedWeightBytes) {
					t.Errorf("half weights: %d packed bytes, %d deferred", st.PackedWeightBytes, st.DeferredConstantBytes)
				}
				checkDecodeSteps(t, model, d, steps, models.FP16Tol)
			})
		})
	}
}

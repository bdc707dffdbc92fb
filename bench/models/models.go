// Package models lists the benchmark models: the networks of
// internal/models (the examples' CNN, MLP and transformer decoder layer)
// and a few sized for measuring (a larger MLP, a long elementwise chain),
// each a VkGraph builder with deterministic weights and one set of inputs.
// BenchmarkModels (in the root package) and bench/compare.sh use them.
// Every model's memory is planned the way the Vulkan exporter plans it.
package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate"
	im "github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Model is a benchmark model: its graph and one set of inputs.
type Model struct {
	Name    string
	Doc     string
	Builder *serialization.Builder
	Inputs  []wgdelegate.Tensor
}

// All returns the benchmark models, built afresh.
func All() ([]*Model, error) {
	ms := []*Model{
		mlp("mlp", 2, 4, 8, 3),
		mlp("mlp_512", 16, 512, 1024, 10),
		ewChain("ew_chain_1m", 256, 4096),
	}
	cnn := im.NewCNN(im.DefaultCNN)
	ms = append(ms, &Model{Name: "cnn", Doc: "internal/models CNN, 1x3x32x32 (conv, batch norm, pools, linear, softmax)", Builder: cnn.B,
		Inputs: []wgdelegate.Tensor{wgdelegate.Float32Tensor(cnn.InputShape(), cnn.Input(1))}})
	dm := im.NewMLP(im.DefaultMLP)
	ms = append(ms, &Model{Name: "mlp_gelu_b8", Doc: "internal/models MLP: linear(16->32) gelu linear(32->8), batch 8", Builder: dm.B,
		Inputs: []wgdelegate.Tensor{wgdelegate.Float32Tensor([]int64{8, dm.Cfg.In}, dm.Input(8, 1))}})
	dec, err := im.NewDecoder(im.DefaultDecoder)
	if err != nil {
		return nil, err
	}
	ms = append(ms, &Model{Name: "decoder_step", Doc: "internal/models decoder layer, one token with a KV cache", Builder: dec.B,
		Inputs: dec.Inputs([]int32{5}, 3)})
	// Memory planned as real exports are: greedy, shared objects reused
	// as soon as a tensor's last reader has run.
	for _, m := range ms {
		im.ApplyPlan(m.Builder, im.PlanExporter)
	}
	return ms, nil
}

// mlp is examples/mlp's network, y = linear2(relu(linear1(x))), for batch
// rows of in features, hidden units and out outputs ("mlp" has the
// example's sizes; the weights are drawn alike, not the same numbers).
func mlp(name string, batch, in, hidden, out int64) *Model {
	r := rand.New(rand.NewPCG(1, 2))
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, u32(batch, in), 0)
	h := b.Tensor(f, u32(batch, hidden), 1)
	rl := b.Tensor(f, u32(batch, hidden), 2)
	y := b.Tensor(f, u32(batch, out), 1)
	b.Op("aten.linear.default", x, weight(b, r, 0.5, hidden, in), weight(b, r, 0.1, hidden), h)
	b.Op("aten.relu.default", h, rl)
	b.Op("aten.linear.default", rl, weight(b, r, 0.5, out, hidden), weight(b, r, 0.1, out), y)
	b.Inputs(x)
	b.Outputs(y)
	return &Model{Name: name, Builder: b, Inputs: []wgdelegate.Tensor{randTensor(r, 1, batch, in)},
		Doc: fmt.Sprintf("linear(%d->%d) relu linear(%d->%d), batch %d", in, hidden, hidden, out, batch)}
}

// ewChain is a chain of six elementwise ops on a [rows, cols] input:
// tanh(sigmoid(gelu(x + bias) * 0.5) * scale), bias and scale [cols] rows.
// With fusion the GPU runs it as one kernel.
func ewChain(name string, rows, cols int64) *Model {
	r := rand.New(rand.NewPCG(3, 4))
	b := serialization.NewBuilder()
	f := serialization.Float32
	d := u32(rows, cols)
	x := b.Tensor(f, d, -1)
	t := []int32{b.Tensor(f, d, 0), b.Tensor(f, d, 1), b.Tensor(f, d, 0), b.Tensor(f, d, 1), b.Tensor(f, d, 0), b.Tensor(f, d, -1)}
	b.Op("aten.add.Tensor", x, weight(b, r, 1, cols), b.Int(1), t[0])
	b.Op("aten.gelu.default", t[0], b.String("none"), t[1])
	b.Op("aten.mul.Scalar", t[1], b.Double(0.5), t[2])
	b.Op("aten.sigmoid.default", t[2], t[3])
	b.Op("aten.mul.Tensor", t[3], weight(b, r, 1, cols), t[4])
	b.Op("aten.tanh.default", t[4], t[5])
	b.Inputs(x)
	b.Outputs(t[5])
	return &Model{Name: name, Builder: b, Inputs: []wgdelegate.Tensor{randTensor(r, 1, rows, cols)},
		Doc: fmt.Sprintf("x[%d,%d] + bias, gelu, *0.5, sigmoid, *scale, tanh", rows, cols)}
}

// Files encodes the model as a .pte (the delegate in a segment) and a .ptd
// holding its weights.
func (m *Model) Files() (pte, ptd []byte, err error) {
	f, err := im.Encode(m.Builder, true)
	return f.PTE, f.PTD, err
}

// weight adds a normal random named constant of the given shape.
func weight(b *serialization.Builder, r *rand.Rand, scale float64, shape ...int64) int32 {
	t := randTensor(r, scale, shape...)
	id, _ := b.NamedConst(serialization.Float32, u32(shape...), t.Data)
	return id
}

func randTensor(r *rand.Rand, scale float64, shape ...int64) wgdelegate.Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return wgdelegate.Float32Tensor(shape, v)
}

func u32(s ...int64) []uint32 {
	d := make([]uint32, len(s))
	for i, x := range s {
		d[i] = uint32(x)
	}
	return d
}

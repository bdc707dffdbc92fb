// Package models builds the benchmark models: small networks as VkGraph
// delegate graphs with deterministic weights, plus a description of the
// same computation that bench/compare.sh replays in PyTorch (see
// bench/README.md).
package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Layer is one step of a model, applied to the running value x in order:
//
//	linear:     x = x @ W.T + B            (Weight [out, in], Bias [out])
//	relu, gelu, sigmoid, tanh: x = f(x)
//	add:        x = x + Weight             (broadcast)
//	mul:        x = x * Weight             (broadcast)
//	mul_scalar: x = x * Scalar
type Layer struct {
	Op     string  `json:"op"`
	Weight string  `json:"weight,omitempty"` // a key of Model.Weights
	Bias   string  `json:"bias,omitempty"`
	Scalar float64 `json:"scalar,omitempty"`
}

// Tensor is a float32 array with its shape.
type Tensor struct {
	Shape []int64
	Data  []float32
}

// Model is a benchmark model: its graph, weights and one input.
type Model struct {
	Name    string
	Doc     string
	Layers  []Layer
	Weights map[string]Tensor
	Input   Tensor
	Builder *serialization.Builder
}

// All returns the benchmark models, built afresh.
func All() []*Model {
	return []*Model{
		MLP("mlp", 2, 4, 8, 3),
		MLP("mlp_512", 16, 512, 1024, 10),
		EWChain("ew_chain_1m", 256, 4096),
	}
}

// MLP is examples/mlp's network, y = linear2(relu(linear1(x))), for batch
// rows of in features, hidden units and out outputs ("mlp" has the
// example's sizes; the weights are drawn alike but not the same numbers).
func MLP(name string, batch, in, hidden, out int64) *Model {
	r := rand.New(rand.NewPCG(1, 2))
	m := &Model{Name: name, Weights: map[string]Tensor{},
		Doc: fmt.Sprintf("linear(%d->%d) relu linear(%d->%d), batch %d", in, hidden, hidden, out, batch)}
	w1 := m.weight(r, "w1", 0.5, hidden, in)
	b1 := m.weight(r, "b1", 0.1, hidden)
	w2 := m.weight(r, "w2", 0.5, out, hidden)
	b2 := m.weight(r, "b2", 0.1, out)
	m.Input = randTensor(r, 1, batch, in)
	b := serialization.NewBuilder()
	f := serialization.Float32
	x := b.Tensor(f, u32(batch, in), 0)
	h := b.Tensor(f, u32(batch, hidden), 1)
	rl := b.Tensor(f, u32(batch, hidden), 2)
	y := b.Tensor(f, u32(batch, out), 1)
	b.Op("aten.linear.default", x, m.named(b, w1), m.named(b, b1), h)
	b.Op("aten.relu.default", h, rl)
	b.Op("aten.linear.default", rl, m.named(b, w2), m.named(b, b2), y)
	b.Inputs(x)
	b.Outputs(y)
	m.Builder = b
	m.Layers = []Layer{{Op: "linear", Weight: "w1", Bias: "b1"}, {Op: "relu"}, {Op: "linear", Weight: "w2", Bias: "b2"}}
	return m
}

// EWChain is a chain of six elementwise ops on a [rows, cols] input:
// sigmoid(gelu(x + bias) * 0.5) * scale, then tanh; bias and scale are
// [cols] rows. With fusion the GPU runs it as one kernel.
func EWChain(name string, rows, cols int64) *Model {
	r := rand.New(rand.NewPCG(3, 4))
	m := &Model{Name: name, Weights: map[string]Tensor{},
		Doc: fmt.Sprintf("x[%d,%d] + bias, gelu, *0.5, sigmoid, *scale, tanh", rows, cols)}
	bias := m.weight(r, "bias", 1, cols)
	scale := m.weight(r, "scale", 1, cols)
	m.Input = randTensor(r, 1, rows, cols)
	b := serialization.NewBuilder()
	f := serialization.Float32
	d := u32(rows, cols)
	x := b.Tensor(f, d, -1)
	t := []int32{b.Tensor(f, d, 0), b.Tensor(f, d, 1), b.Tensor(f, d, 0), b.Tensor(f, d, 1), b.Tensor(f, d, 0), b.Tensor(f, d, -1)}
	b.Op("aten.add.Tensor", x, m.named(b, bias), b.Int(1), t[0])
	b.Op("aten.gelu.default", t[0], b.String("none"), t[1])
	b.Op("aten.mul.Scalar", t[1], b.Double(0.5), t[2])
	b.Op("aten.sigmoid.default", t[2], t[3])
	b.Op("aten.mul.Tensor", t[3], m.named(b, scale), t[4])
	b.Op("aten.tanh.default", t[4], t[5])
	b.Inputs(x)
	b.Outputs(t[5])
	m.Builder = b
	m.Layers = []Layer{{Op: "add", Weight: "bias"}, {Op: "gelu"}, {Op: "mul_scalar", Scalar: 0.5}, {Op: "sigmoid"},
		{Op: "mul", Weight: "scale"}, {Op: "tanh"}}
	return m
}

// weight draws a normal weight of the given shape and records it.
func (m *Model) weight(r *rand.Rand, name string, scale float64, shape ...int64) string {
	m.Weights[name] = randTensor(r, scale, shape...)
	return name
}

// named adds weight name as a named constant of b.
func (m *Model) named(b *serialization.Builder, name string) int32 {
	t := m.Weights[name]
	id, _ := b.NamedConst(serialization.Float32, u32(t.Shape...), wgdelegate.Float32Tensor(t.Shape, t.Data).Data)
	return id
}

// Files encodes the model as a .pte (the delegate in a segment) and a .ptd
// holding its weights.
func (m *Model) Files() (pte, ptd []byte, err error) {
	blob, err := m.Builder.Blob()
	if err != nil {
		return nil, nil, err
	}
	pte, err = serialization.EncodePTE(serialization.PTEOptions{Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: blob}}})
	if err != nil {
		return nil, nil, err
	}
	ptd, err = serialization.EncodePTD(m.Builder.NamedBlobs())
	return pte, ptd, err
}

func randTensor(r *rand.Rand, scale float64, shape ...int64) Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return Tensor{Shape: shape, Data: v}
}

func u32(s ...int64) []uint32 {
	d := make([]uint32, len(s))
	for i, x := range s {
		d[i] = uint32(x)
	}
	return d
}

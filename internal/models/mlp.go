package models

import (
	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// MLPConfig sizes the MLP: up to MaxBatch rows of In features, Hidden
// units, Out outputs.
type MLPConfig struct {
	MaxBatch, In, Hidden, Out int64
	Seed                      uint64
	// Prepack routes the weights and biases through et_vk.prepack, as the
	// Vulkan exporter writes them.
	Prepack bool
	// Linears is the number of linear layers (0 means 2): In -> Hidden,
	// Linears-2 times Hidden -> Hidden, then Hidden -> Out, with the
	// activation after every one but the last.
	Linears int
	// Act is the activation: "gelu" (the default) or "relu".
	Act string
}

// DefaultMLP takes batches of up to 8 rows of 16 features.
var DefaultMLP = MLPConfig{MaxBatch: 8, In: 16, Hidden: 32, Out: 8, Seed: 3}

// MLP is y = linear(gelu(linear(x))) (or more layers, see MLPConfig) with
// a dynamic batch: x is declared
// [MaxBatch, In], an upper bound, and Execute takes any batch up to it;
// every op derives its output shape from its input's live shape, so y has
// as many rows as x. Input: x. Output: y.
type MLP struct {
	Cfg MLPConfig
	B   *serialization.Builder
}

// NewMLP builds the graph with weights drawn from cfg.Seed.
func NewMLP(cfg MLPConfig) *MLP {
	r := newRNG(cfg.Seed)
	f := serialization.Float32
	b := serialization.NewBuilder()
	x := b.Tensor(f, dims(cfg.MaxBatch, cfg.In), -1)
	wt := func(v []float32, shape ...int64) int32 {
		id := weight(b, v, shape...)
		if !cfg.Prepack {
			return id
		}
		p := b.Tensor(f, dims(shape...), -1)
		b.Op("et_vk.prepack.default", id, p)
		return p
	}
	n := max(cfg.Linears, 2)
	cur, in := x, cfg.In
	var y int32
	for l := range n {
		out, scale := cfg.Hidden, 0.5
		if l == n-1 {
			out, scale = cfg.Out, 0.3
		}
		w := wt(r.normal(out*in, scale), out, in)
		bias := wt(r.normal(out, 0.1), out)
		if l == n-1 {
			y = b.Tensor(f, dims(cfg.MaxBatch, out), -1)
			b.Op("aten.linear.default", cur, w, bias, y)
			break
		}
		// Hidden activations alternate between two shared objects.
		h := b.Tensor(f, dims(cfg.MaxBatch, out), 0)
		g := b.Tensor(f, dims(cfg.MaxBatch, out), 1)
		b.Op("aten.linear.default", cur, w, bias, h)
		if cfg.Act == "relu" {
			b.Op("aten.relu.default", h, g)
		} else {
			b.Op("aten.gelu.default", h, b.String("none"), g)
		}
		cur, in = g, out
	}
	b.Inputs(x)
	b.Outputs(y)
	return &MLP{Cfg: cfg, B: b}
}

// Input returns a deterministic random batch of rows.
func (m *MLP) Input(rows int64, seed uint64) []float32 {
	return newRNG(seed).uniform(rows*m.Cfg.In, -2, 2)
}

// Reference runs the MLP on the reference interpreter for a batch of rows.
func (m *MLP) Reference(x []float32, rows int64) (*reference.Tensor, error) {
	in := reference.New(serialization.Float32, []int64{rows, m.Cfg.In})
	for i, v := range x {
		in.V[i] = float64(v)
	}
	outs, err := RunReference(m.B, []*reference.Tensor{in})
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

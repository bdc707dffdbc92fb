package models

import (
	"math"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// ConvStackConfig sizes a ConvStack: an N×C×H×W float32 input and Layers
// 3×3 convolutions from C to C channels (padding 1, so every layer keeps
// H×W), each with a bias and followed by relu except the last.
type ConvStackConfig struct {
	N, C, H, W, Layers int64
	Seed               uint64
}

// ConvStack is a chain of same-size 3×3 convolutions, the shape of the
// middle of a VGG-style network. Its weights are C·C·9·Layers floats, so it
// is the model for measuring loads of large convolution weights (see
// bench/bigmodel). Input: x. Output: y.
type ConvStack struct {
	Cfg ConvStackConfig
	B   *serialization.Builder
}

// ConvStackForMiB returns a config of layers 3×3 convolutions whose
// weights total at least mib MiB, on a 1×C×hw×hw input.
func ConvStackForMiB(mib float64, layers, hw int64) ConvStackConfig {
	c := int64(math.Sqrt(mib * (1 << 20) / (4 * 9 * float64(layers))))
	c += (8 - c%8) % 8 // round up: at least mib MiB
	return ConvStackConfig{N: 1, C: max(c, 8), H: hw, W: hw, Layers: layers, Seed: 5}
}

// NewConvStack builds the graph with weights drawn from cfg.Seed.
func NewConvStack(cfg ConvStackConfig) *ConvStack {
	r := newRNG(cfg.Seed)
	f := serialization.Float32
	b := serialization.NewBuilder()
	shape := dims(cfg.N, cfg.C, cfg.H, cfg.W)
	x := b.Tensor(f, shape, -1)
	ints := func(v ...int64) int32 { return b.IntList(v...) }
	in := x
	for l := range cfg.Layers {
		// He initialisation keeps the activations near unit scale.
		w := weight(b, r.normal(cfg.C*cfg.C*9, math.Sqrt(2/float64(cfg.C*9))), cfg.C, cfg.C, 3, 3)
		bias := weight(b, r.normal(cfg.C, 0.1), cfg.C)
		last := l == cfg.Layers-1
		// The activations alternate between two shared buffers: the
		// convolutions write mem_obj_id 0, the relus 1.
		mem := int32(0)
		if last {
			mem = -1
		}
		out := b.Tensor(f, shape, mem)
		// [input, weight, bias, stride, padding, dilation, transposed,
		//  output_padding, groups, out]
		b.Op("aten.convolution.default", in, w, bias, ints(1, 1), ints(1, 1), ints(1, 1),
			b.Bool(false), ints(0, 0), b.Int(1), out)
		in = out
		if !last {
			act := b.Tensor(f, shape, 1)
			b.Op("aten.relu.default", out, act)
			in = act
		}
	}
	b.Inputs(x)
	b.Outputs(in)
	return &ConvStack{Cfg: cfg, B: b}
}

// Input returns a deterministic random input.
func (m *ConvStack) Input(seed uint64) []float32 {
	c := m.Cfg
	return newRNG(seed).uniform(c.N*c.C*c.H*c.W, -1, 1)
}

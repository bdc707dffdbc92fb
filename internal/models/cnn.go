package models

import (
	"math"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// CNNConfig sizes the CNN: an N×C×H×W float32 image (H and W divisible by
// 8), C1 channels after the first convolution, C2 after the second stage,
// Classes outputs.
type CNNConfig struct {
	N, C, H, W       int64
	C1, C2, Classes  int64
	Seed             uint64
	BatchNormEpsilon float64
	// DynamicBatch makes N an upper bound: Execute takes any batch up to
	// it, and the flattening view reads the live batch with sym_size.int
	// (as an export with a dynamic batch dim does) instead of a fixed size.
	DynamicBatch bool
}

// DefaultCNN is a 3×32×32 image classifier with 10 classes.
var DefaultCNN = CNNConfig{N: 1, C: 3, H: 32, W: 32, C1: 16, C2: 32, Classes: 10, Seed: 1, BatchNormEpsilon: 1e-5}

// CNN is the graph of a small image classifier, the way the Vulkan
// exporter writes torch's
//
//	x = relu(bn(conv3x3(x)))            # [N, C1, H, W]
//	x = max_pool2d(x, 2)                # [N, C1, H/2, W/2]
//	x = conv3x3_depthwise(x, stride=2)  # [N, C1, H/4, W/4]
//	x = relu(conv1x1(x))                # [N, C2, H/4, W/4]
//	x = avg_pool2d(x, 2)                # [N, C2, H/8, W/8]
//	logits = linear(x.view(N, -1))      # [N, Classes]
//	probs = softmax(logits, -1)
//
// with the batch norm in inference mode (running statistics) and every
// weight a named constant. Input: x. Outputs: logits, probs.
type CNN struct {
	Cfg CNNConfig
	B   *serialization.Builder
}

// NewCNN builds the graph with weights drawn from cfg.Seed.
func NewCNN(cfg CNNConfig) *CNN {
	r := newRNG(cfg.Seed)
	f := serialization.Float32
	b := serialization.NewBuilder()
	n, h, w := cfg.N, cfg.H, cfg.W
	// He initialisation keeps the activations near unit scale layer after
	// layer, so the outputs are neither vanishing nor huge.
	he := func(fanIn int64) float64 { return math.Sqrt(2 / float64(fanIn)) }

	// The activations alternate between two shared buffers (mem_obj_id 0
	// and 1): each op reads one and writes the other, which is what the
	// exporter's memory planner does for a chain like this. The graph
	// outputs get buffers of their own (-1).
	x := b.Tensor(f, dims(n, cfg.C, h, w), 0)
	ints := func(v ...int64) int32 { return b.IntList(v...) }
	conv := func(in int32, wt, bias int32, stride, pad, groups int64, out int32) {
		// [input, weight, bias, stride, padding, dilation, transposed,
		//  output_padding, groups, out]
		b.Op("aten.convolution.default", in, wt, bias, ints(stride, stride), ints(pad, pad), ints(1, 1),
			b.Bool(false), ints(0, 0), b.Int(groups), out)
	}

	// Stage 1: 3×3 convolution, batch norm, relu.
	w1 := weight(b, r.normal(cfg.C1*cfg.C*9, he(cfg.C*9)), cfg.C1, cfg.C, 3, 3)
	b1 := weight(b, r.normal(cfg.C1, 0.1), cfg.C1)
	c1 := b.Tensor(f, dims(n, cfg.C1, h, w), 1)
	conv(x, w1, b1, 1, 1, 1, c1)
	gamma := weight(b, r.uniform(cfg.C1, 0.5, 1.5), cfg.C1)
	beta := weight(b, r.normal(cfg.C1, 0.1), cfg.C1)
	mean := weight(b, r.normal(cfg.C1, 0.2), cfg.C1)
	variance := weight(b, r.uniform(cfg.C1, 0.5, 2), cfg.C1)
	bn := b.Tensor(f, dims(n, cfg.C1, h, w), 0)
	// In inference torch returns empty save_mean / save_invstd.
	saveMean, saveInvstd := b.Tensor(f, dims(0), -1), b.Tensor(f, dims(0), -1)
	b.Op("aten._native_batch_norm_legit_no_training.default", c1, gamma, beta, mean, variance,
		b.Double(0.1), b.Double(cfg.BatchNormEpsilon), b.ValueList(bn, saveMean, saveInvstd))
	r1 := b.Tensor(f, dims(n, cfg.C1, h, w), 1)
	b.Op("aten.relu.default", bn, r1)

	// 2×2 max pool: [self, kernel_size, stride, padding, dilation, ceil_mode, out].
	p1 := b.Tensor(f, dims(n, cfg.C1, h/2, w/2), 0)
	b.Op("aten.max_pool2d.default", r1, ints(2, 2), ints(2, 2), ints(0, 0), ints(1, 1), b.Bool(false), p1)

	// Stage 2: a depthwise 3×3 convolution with stride 2 (groups = channels,
	// weight [C1, 1, 3, 3]), then a pointwise 1×1 convolution and relu.
	wd := weight(b, r.normal(cfg.C1*9, he(9)), cfg.C1, 1, 3, 3)
	bd := weight(b, r.normal(cfg.C1, 0.1), cfg.C1)
	d := b.Tensor(f, dims(n, cfg.C1, h/4, w/4), 1)
	conv(p1, wd, bd, 2, 1, cfg.C1, d)
	wp := weight(b, r.normal(cfg.C2*cfg.C1, he(cfg.C1)), cfg.C2, cfg.C1, 1, 1)
	bp := weight(b, r.normal(cfg.C2, 0.1), cfg.C2)
	pw := b.Tensor(f, dims(n, cfg.C2, h/4, w/4), 0)
	conv(d, wp, bp, 1, 0, 1, pw)
	r2 := b.Tensor(f, dims(n, cfg.C2, h/4, w/4), 1)
	b.Op("aten.relu.default", pw, r2)

	// 2×2 average pool: [self, kernel_size, stride, padding, ceil_mode,
	// count_include_pad, divisor_override, out].
	p2 := b.Tensor(f, dims(n, cfg.C2, h/8, w/8), 0)
	b.Op("aten.avg_pool2d.default", r2, ints(2, 2), ints(2, 2), ints(0, 0), b.Bool(false), b.Bool(true), b.Null(), p2)

	// Flatten and classify.
	feat := cfg.C2 * (h / 8) * (w / 8)
	flat := b.Tensor(f, dims(n, feat), 1)
	size := ints(n, feat)
	if cfg.DynamicBatch {
		live := b.SymInt(int32(n))
		b.Op("sym_size.int", x, b.Int(0), live)
		size = b.ValueList(live, b.Int(feat))
	}
	b.Op("aten.view_copy.default", p2, size, flat)
	wf := weight(b, r.normal(cfg.Classes*feat, he(feat)), cfg.Classes, feat)
	bf := weight(b, r.normal(cfg.Classes, 0.1), cfg.Classes)
	logits := b.Tensor(f, dims(n, cfg.Classes), -1)
	b.Op("aten.linear.default", flat, wf, bf, logits)
	probs := b.Tensor(f, dims(n, cfg.Classes), -1)
	b.Op("aten._softmax.default", logits, b.Int(-1), b.Bool(false), probs)

	b.Inputs(x)
	b.Outputs(logits, probs)
	return &CNN{Cfg: cfg, B: b}
}

// Input returns a deterministic random batch of cfg.N images for the CNN
// (values in [-1, 1), like normalised pictures).
func (m *CNN) Input(seed uint64) []float32 { return m.BatchInput(m.Cfg.N, seed) }

// BatchInput returns a deterministic random batch of n images.
func (m *CNN) BatchInput(n int64, seed uint64) []float32 {
	c := m.Cfg
	return newRNG(seed).uniform(n*c.C*c.H*c.W, -1, 1)
}

// InputShape is the shape of a batch of cfg.N images.
func (m *CNN) InputShape() []int64 { return m.BatchShape(m.Cfg.N) }

// BatchShape is the shape of a batch of n images.
func (m *CNN) BatchShape(n int64) []int64 { c := m.Cfg; return []int64{n, c.C, c.H, c.W} }

// Reference runs the CNN on the reference interpreter: logits and probs.
// x holds a whole number of images.
func (m *CNN) Reference(x []float32) ([]*reference.Tensor, error) {
	in := reference.New(serialization.Float32, m.BatchShape(int64(len(x))/(m.Cfg.C*m.Cfg.H*m.Cfg.W)))
	for i, v := range x {
		in.V[i] = float64(v)
	}
	return RunReference(m.B, []*reference.Tensor{in})
}

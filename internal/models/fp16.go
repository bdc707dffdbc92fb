package models

import (
	"github.com/wgdelegate/wgdelegate/internal/fp16"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// FP16Tol is the tolerance of a force_fp16 model against the reference:
// the reference rounds every FLOAT16 value to half (as fp16 storage
// does), the device computes them in float32, so through a few layers
// they drift apart by some half ulps: 1e-2 relative (issue 17's bar for
// fp16 graphs), with an absolute floor of 1e-2 for values that cancel
// towards zero.
var FP16Tol = Tolerance{Abs: 1e-2, Rel: 1e-2}

// ForceFP16 returns b's model as the Vulkan exporter writes it with
// force_fp16 (quantized-format.md §6.1): every float32 tensor FLOAT16,
// weights and other float constants converted to halves (clamped to
// ±65504), inputs, outputs and intermediates staged as staging: FLOAT32
// for a real force_fp16 export (the host keeps feeding and receiving
// float32), FLOAT16 for a model exported in half. Value ids are kept, so
// a model's own Reference and Input methods work on the result after
// m.B = ForceFP16(m.B, ...). b is not changed.
func ForceFP16(b *serialization.Builder, staging serialization.DataType) (*serialization.Builder, error) {
	dst := serialization.NewBuilder()
	if err := fp16.Rewrite(dst, b, staging); err != nil {
		return nil, err
	}
	return dst, nil
}

// NewDecoderFP16 is NewDecoder written as a force_fp16 export with float32
// staging: its weights (and rope tables) are rounded to halves first, so
// that the decoder's float32 reference (NewReference) runs on the same
// values the FLOAT16 graph holds, then every float tensor, the KV caches
// included, is made FLOAT16 (ForceFP16). The device computes the graph in
// float32 and rounds its outputs to halves; the reference does not, so
// they agree within FP16Tol.
func NewDecoderFP16(cfg DecoderConfig) (*Decoder, error) {
	d, err := NewDecoder(cfg)
	if err != nil {
		return nil, err
	}
	w := d.s.w
	round := func(vs ...[]float32) {
		for _, v := range vs {
			for i, x := range v {
				v[i] = tensor.HalfToFloat32(tensor.Float32ToHalf(x))
			}
		}
	}
	round(w.Embedding, w.Norm, w.Output, d.s.cos, d.s.sin)
	for i := range w.Layers {
		l := &w.Layers[i]
		round(l.AttnNorm, l.Wq, l.Wk, l.Wv, l.Wo, l.FFNNorm, l.W1, l.W3, l.W2)
	}
	if d.B, err = ForceFP16(d.s.build(nil, false), serialization.Float32); err != nil {
		return nil, err
	}
	return d, nil
}

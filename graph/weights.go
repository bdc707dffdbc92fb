package graph

import (
	"context"
	"fmt"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
)

// A weight becomes a buffer in one place: placeWeights. Every form of a
// weight the load holds is placed first: a tensor of its own (or the
// value's) with no buffer yet (tensorState.placed), its bytes known or
// made by a pack kernel:
//
//   - a constant as exported (allocate), an et_vk.prepack output
//     (MaterializeConstant), a half KV cache (makeHalfKV);
//   - a packing of a weight (ops.Builder.PackWeight: made at load for the
//     weights only read packed, packAtLoad, the rest when an op asks):
//     the weight's bytes (identity), a packed-weight cache hit, or a pack
//     kernel run on the device;
//   - a slice of a weight held in chunks (SliceWeight), an op's scratch
//     output (Scratch), a writable copy of a constant KV cache
//     (Persistent).
//
// placeWeights gives them their buffers and runs their pack kernels, all
// at once: before the first recording for what the analysis decides, after
// a recording for what its ops asked for. No buffer is made, and no pack
// kernel runs, while an op records.

// placement is one placed tensor waiting for its buffer.
type placement struct {
	id    int32
	size  uint64
	data  []byte   // its bytes; nil for a pack kernel's output or a zeroed scratch
	pack  *packJob // the kernel that fills it, or nil
	stat  *int64   // the MemoryStats counter its buffer's size adds to, or nil
	label string
}

// packJob is a pack kernel to run into a placed tensor (runPack).
type packJob struct {
	src        *tensorState
	id, weight int32
	spec       ops.PackSpec
	key        string
	seed       [32]byte
}

// place queues p: tensor p.id gets its buffer at the next placeWeights.
func (g *WebGPUGraph) place(p placement) {
	g.tensors[p.id].placed = true
	g.placing = append(g.placing, p)
}

// placeWeights gives every placed tensor its buffer, in the order they
// were placed (a prepack output before the packing of it), and runs the
// pack kernels.
func (g *WebGPUGraph) placeWeights(ctx context.Context) error {
	todo := g.placing
	g.placing = nil
	for _, p := range todo {
		ts := g.tensors[p.id]
		var buf *gpu.Buffer
		var err error
		if p.data != nil {
			buf, err = g.newBufferData(p.size, p.data, p.label)
		} else {
			buf, err = g.newBuffer(gpu.Storage, p.size, p.label)
		}
		if err != nil {
			return fmt.Errorf("graph: %s: %w", p.label, err)
		}
		ts.buf, ts.placed = buf, false
		if p.stat != nil {
			*p.stat += int64(buf.Size())
		}
		if j := p.pack; j != nil {
			if err := g.runPack(ctx, j.src, j.id, j.weight, ts, j.spec, j.key, j.seed); err != nil {
				return fmt.Errorf("graph: packing value %d (%s): %w", j.id, j.spec.Name, err)
			}
		}
	}
	return nil
}

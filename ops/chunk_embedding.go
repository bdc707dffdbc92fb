package ops

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// chunkEmbeddingShader is the template data of shaders/embedding_chunk.wgsl.
type chunkEmbeddingShader struct {
	Q4       bool // et_vk.embedding_q4gsw (else a 4-byte aten.embedding)
	HighEven bool
	WG       int
}

// chunkEmbeddingWG is the kernel's workgroup size.
const chunkEmbeddingWG = 64

// chunkEmbedding is an embedding to record chunk by chunk: table w
// ([V, rowBytes] as the device holds it), scales s (-1 for aten.embedding),
// the indices, the output, and D.
type chunkEmbedding struct {
	w, s     int32
	idx      Tensor
	out      int32
	v, d     int64
	rowBytes int64
	g, spr   int64
	sh       chunkEmbeddingShader
}

// recordEmbeddingChunked records e once per chunk of its table when the
// table is held in chunks, and reports whether it did.
func recordEmbeddingChunked(b Builder, e chunkEmbedding) (bool, error) {
	if !chunked(b, e.w, e.s) {
		return false, nil
	}
	perRow := e.rowBytes
	if e.sh.Q4 {
		perRow = max(perRow, e.spr*4)
	}
	rows, err := chunkRows(b.ChunkBytes(), perRow)
	if err != nil {
		return true, err
	}
	units := e.d // elements of 4 bytes
	if e.sh.Q4 {
		units = e.d / 8 // weight words
	}
	total := e.idx.Numel * units
	if total == 0 {
		return true, nil
	}
	if e.idx.Numel*e.d > matmulMaxElems {
		return true, Errorf(-1, "output of %d elements is too large", e.idx.Numel*e.d)
	}
	e.sh.WG = chunkEmbeddingWG
	nb := 3
	if e.sh.Q4 {
		nb = 4
	}
	k, err := shaders.Render("embedding_chunk.wgsl", e.sh, "main", shaders.Layout(nb-1, 1, true), uint32(e.sh.WG))
	if err != nil {
		return true, err
	}
	groups, err := Grid(uint64(total), uint32(e.sh.WG), b.MaxWorkgroupsPerDim())
	if err != nil {
		return true, err
	}
	for j, r := range chunkRanges(e.v, rows) {
		w, err := b.SliceWeight(e.w, 0, r[0], r[1])
		if err != nil {
			return true, fmt.Errorf("ops: chunk %d: %w", j, err)
		}
		inputs := []int32{w.ID}
		if e.sh.Q4 {
			s, err := b.SliceWeight(e.s, 0, r[0], r[1])
			if err != nil {
				return true, fmt.Errorf("ops: chunk %d: %w", j, err)
			}
			inputs = append(inputs, s.ID)
		}
		inputs = append(inputs, e.idx.ID)
		var p Params
		p.U32(uint32(total)).U32(uint32(units)).U32(uint32(e.rowBytes / 4)).U32(uint32(e.v))
		p.U32(uint32(e.g)).U32(uint32(e.spr)).U32(uint32(r[0])).U32(uint32(r[1]))
		if err := b.Dispatch(k, inputs, []int32{e.out}, p.Bytes(), groups); err != nil {
			return true, fmt.Errorf("ops: chunked embedding: %w", err)
		}
	}
	return true, nil
}

// embeddingChunked is aten.embedding's hook: weight w [V, D] read by
// chunks when held in chunks (4-byte dtypes only).
func embeddingChunked(b Builder, w, ix Tensor, out int32) (bool, error) {
	if !chunked(b, w.ID) {
		return false, nil
	}
	if w.DType.Size() != 4 {
		return true, Errorf(0, "a %v table held in chunks is not supported (4-byte dtypes only)", w.DType)
	}
	return recordEmbeddingChunked(b, chunkEmbedding{w: w.ID, s: -1, idx: ix, out: out, v: w.Dims[0], d: w.Dims[1], rowBytes: w.Dims[1] * 4})
}

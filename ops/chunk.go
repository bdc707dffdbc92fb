package ops

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// Chunked weights. A weight (a constant, or the et_vk.prepack output of
// one) larger than one storage binding or buffer may hold (a Llama 3.2 1B
// embedding or classifier, 128256 × 2048 float32 = 1 GiB, against 128 MiB
// on lavapipe) is kept in several buffers, each a range of its leading
// (row) dimension: for a linear weight [N, K] a range of output columns,
// for an embedding table [V, D] a range of table rows. The graph's
// analysis decides which weights are chunked (every op that reads one
// must read it at an argument ChunkArgs lists); the ops below read them
// chunk by chunk:
//
//   - a linear-family call (runLinear) records its own kernel once per
//     chunk, on the chunk's rows of the weight and the matching ranges of
//     the scales and bias, into a scratch output [M, rows], and copies
//     each into its columns of the output with the gather kernel (cat's
//     plan): two dispatches a chunk, no epilogue fused;
//   - an embedding (aten.embedding, embedding_q4gsw) records
//     shaders/embedding_chunk.wgsl once per chunk, writing the output rows
//     whose index falls in the chunk's table rows.
//
// A call that reads no chunked weight records exactly what it did before.

// chunkArgs lists, per op, the arguments that may be chunked weights:
// those whose leading dimension, or for the transposed scales of the
// grouped 4-bit linears their last, follows the output columns (or the
// embedding's table rows). The int8 × int8 (q8ta) linears are not here:
// a weight of theirs over the limit is rejected.
var chunkArgs = map[string][]int{
	"aten.linear.default":              {1, 2},
	"et_vk.linear_q4gsw.default":       {1, 2, 4},
	"et_vk.linear_dq8ca_q4gsw.default": {3, 4, 5, 7},
	"et_vk.linear_qcs4w.default":       {1, 2},
	"aten._weight_int8pack_mm.default": {1, 2},
	"et_vk.linear_weight_int4.default": {1, 3},
	"aten.embedding.default":           {0},
	"et_vk.embedding_q4gsw.default":    {0, 1},
}

// ChunkArgs returns the arguments of op name that may be weights held in
// chunks (see Chunker); nil when the op reads no chunked weight.
func ChunkArgs(name string) []int { return slices.Clone(chunkArgs[name]) }

// ChunkAlign is the row granularity of chunks: every chunk but the last
// holds a multiple of 64 rows, so that a chunk of scales or packed words
// is whole vec4s and a chunk's bytes start on a 256-byte boundary of the
// weight.
const ChunkAlign = 64

// chunkRows returns how many rows one chunk may hold when each row takes
// perRow bytes in the largest of the buffers a chunk needs, or an error
// when not even ChunkAlign rows fit.
func chunkRows(limit, perRow int64) (int64, error) {
	// 16 bytes of slack: buffers are allocated in 16-byte steps.
	rows := (limit - 16) / max(perRow, 1) / ChunkAlign * ChunkAlign
	if rows <= 0 {
		return 0, Errorf(-1, "a chunk of %d rows of %d bytes does not fit the %d-byte binding limit", ChunkAlign, perRow, limit)
	}
	return rows, nil
}

// chunkRanges splits n rows into ranges of at most rows (the last one
// ragged).
func chunkRanges(n, rows int64) [][2]int64 {
	var out [][2]int64
	for begin := int64(0); begin < n; begin += rows {
		out = append(out, [2]int64{begin, min(begin+rows, n)})
	}
	return out
}

// chunked reports whether b holds any of ids in chunks.
func chunked(b Builder, ids ...int32) bool {
	for _, id := range ids {
		if id >= 0 && b.ChunkedWeight(id) {
			return true
		}
	}
	return false
}

// chunkSlice is one tensor a chunked call slices: along dim, bytes per row
// of the chunk (for sizing), and where the slice goes in the sub-call.
type chunkSlice struct {
	id     int32
	dim    int
	perRow int64
	set    func(c *linearCall, t Tensor)
}

// linearSlices returns the tensors of c that follow its output columns
// and how each is sliced; ok is false for a call that cannot be chunked.
func linearSlices(b Builder, c *linearCall) (sl []chunkSlice, ok bool, err error) {
	size := func(id int32, dim int) (int64, error) {
		t, err := b.Tensor(id)
		if err != nil {
			return 0, err
		}
		if dim >= len(t.MaxDims) || t.MaxDims[dim] == 0 {
			return 0, Errorf(-1, "value %d: cannot slice dims %v along %d", id, t.MaxDims, dim)
		}
		return t.NBytes / t.MaxDims[dim], nil
	}
	add := func(id int32, dim int, set func(c *linearCall, t Tensor)) error {
		per, err := size(id, dim)
		if err != nil {
			return err
		}
		sl = append(sl, chunkSlice{id: id, dim: dim, perRow: per, set: set})
		return nil
	}
	switch c.format {
	case formatF32:
		if !c.f.transB || len(c.f.bdims) != 0 {
			return nil, false, nil
		}
		if err := add(c.f.b, 0, func(c *linearCall, t Tensor) { c.f.b = t.ID }); err != nil {
			return nil, false, err
		}
		if c.f.bias >= 0 && c.f.biasSN == 1 && c.f.biasSM == 0 {
			if err := add(c.f.bias, 0, func(c *linearCall, t Tensor) { c.f.bias = t.ID }); err != nil {
				return nil, false, err
			}
		} else if c.f.bias >= 0 {
			return nil, false, nil
		}
	case formatQuant:
		q := &c.q
		if err := add(q.w, 0, func(c *linearCall, t Tensor) { c.q.w = t.ID }); err != nil {
			return nil, false, err
		}
		switch {
		case q.sh.Zeros: // [K/g, N, 2]
			err = add(q.scales, 1, func(c *linearCall, t Tensor) { c.q.scales, c.q.ldS = t.ID, t.Dims[1] })
		case q.sh.Grouped: // [G, ldS]
			err = add(q.scales, 1, func(c *linearCall, t Tensor) { c.q.scales, c.q.ldS = t.ID, t.Dims[1] })
		default: // [N]
			err = add(q.scales, 0, func(c *linearCall, t Tensor) { c.q.scales = t.ID })
		}
		if err != nil {
			return nil, false, err
		}
		if q.bias >= 0 {
			if err := add(q.bias, 0, func(c *linearCall, t Tensor) { c.q.bias = t.ID }); err != nil {
				return nil, false, err
			}
		}
	default:
		return nil, false, nil
	}
	return sl, true, nil
}

// runLinearChunked records c chunk by chunk when it reads a weight held in
// chunks (see the comment at the top of this file) and reports whether it
// did; a call that reads none is left to runLinear.
func runLinearChunked(b Builder, c *linearCall) (bool, error) {
	if !chunked(b, c.weights()...) {
		return false, nil
	}
	sl, ok, err := linearSlices(b, c)
	if err != nil {
		return true, err
	}
	if !ok {
		return true, Errorf(-1, "the weight is held in chunks (too large for one binding), and this call cannot read chunks")
	}
	m, n, _, out := c.shape()
	outT, err := b.Tensor(out)
	if err != nil {
		return true, err
	}
	maxM := outT.MaxNumel / n
	perRow := maxM * 4 // the scratch output
	for _, s := range sl {
		perRow = max(perRow, s.perRow)
	}
	rows, err := chunkRows(b.ChunkBytes(), perRow)
	if err != nil {
		return true, err
	}
	for j, r := range chunkRanges(n, rows) {
		sub := *c
		for _, s := range sl {
			t, err := b.SliceWeight(s.id, s.dim, r[0], r[1])
			if err != nil {
				return true, fmt.Errorf("ops: chunk %d: %w", j, err)
			}
			s.set(&sub, t)
		}
		cols := r[1] - r[0]
		tmp, err := b.Scratch(j, serialization.Float32, []int64{maxM, cols})
		if err != nil {
			return true, err
		}
		if err := b.SetDims(tmp.ID, []int64{m, cols}); err != nil {
			return true, err
		}
		switch sub.format {
		case formatQuant:
			sub.q.n, sub.q.out = cols, tmp.ID
			if err := packQuantScales(b, &sub); err != nil { // the chunk's scales per row (linear_gpu_quant.go)
				return true, err
			}
		default:
			sub.f.n, sub.f.out = cols, tmp.ID
			w, err := b.Tensor(sub.f.b)
			if err != nil {
				return true, err
			}
			sub.canHalf, sub.canTranspose = canHalf(b, w), canTranspose(b, w)
			if err := packLinearWeight(b, &sub, w); err != nil {
				return true, err
			}
		}
		k := chooseLinear(familyOf(b), &sub, b.Config())
		if k == nil {
			return true, Errorf(-1, "no %v-family kernel fits chunk %d", familyOf(b), j)
		}
		if err := k.record(b, &sub, matmulEpilogue{}, tmp.ID); err != nil {
			return true, err
		}
		// The chunk's columns of the output: cat's plan over [M, N].
		p := gatherPlan{dims: []int64{m, n, 1}, stride: []int64{cols, 1, 1}, base: -r[0], region: 1, lo: r[0], hi: r[1]}
		tmpT, err := b.Tensor(tmp.ID)
		if err != nil {
			return true, err
		}
		if err := recordGather(b, p, tmpT, out); err != nil {
			return true, err
		}
	}
	return true, nil
}

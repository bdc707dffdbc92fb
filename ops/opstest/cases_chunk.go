package opstest

import (
	"fmt"
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// ChunkCase is a case whose weights are over a lowered binding limit
// (GPU.MaxBindingSize = Limit), so that the graph holds them in chunks of
// rows (graph/chunk.go): Chunks is how many chunks of weight rows the load
// must make (MemoryStats.NumWeightChunks, over every chunked weight).
type ChunkCase struct {
	Case
	Limit  uint64
	Chunks int
}

// chunkLimit is the binding limit that holds 64 rows of perRow bytes (the
// largest a chunk needs per row) in one chunk: ops.ChunkAlign rows, and
// the 16 bytes of slack buffers are allocated in.
func chunkLimit(perRow int64) uint64 { return uint64(64*perRow + 16) }

// chunked names c as a chunk case.
func chunked(c Case, perRow int64, chunks int) ChunkCase {
	c.Name = fmt.Sprintf("chunked%d/%s", chunks, c.Name)
	return ChunkCase{Case: c, Limit: chunkLimit(perRow), Chunks: chunks}
}

// embeddingCase is aten.embedding of a [v, d] float32 table (a constant
// as weight says) at indices of shape ix.
func embeddingCase(v, d int64, ix []int64, weight weightSrc) Case {
	return Case{
		Name: fmt.Sprintf("embedding/V%d_D%d/%s/%s", v, d, shapeName(ix), weight),
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			iv := RandTensor(r, serialization.Int32, ix, 0, float64(v))
			idx := b.Tensor(serialization.Int32, Dims(ix), -1)
			b.Inputs(idx)
			inputs := []*reference.Tensor{iv}
			w := addWeight(b, RandTensor(r, f, []int64{v, d}, -1, 1), weight, &inputs)
			out := b.Tensor(f, Dims(append(append([]int64(nil), ix...), d)), -1)
			b.Op("aten.embedding.default", w, idx, b.Int(-1), b.Bool(false), b.Bool(false), out)
			b.Outputs(out)
			return inputs
		},
	}
}

// ChunkCases are the chunked weights of every op that reads them: each
// weight format of the linear family (float32, FLOAT16 read as packed
// halves, 4-bit linear_q4gsw and linear_dq8ca_q4gsw, linear_qcs4w, 8-bit
// _weight_int8pack_mm, linear_weight_int4) at one row and several, and
// both embeddings; 150 rows make chunks of 64, 64 and 22, 100 rows 64 and
// 36. Each limit is the one that holds 64 rows of the case's largest per-row
// bytes (weight row, scale column or scratch row).
var ChunkCases = []ChunkCase{
	// float32 [N, K = 32]: 128 bytes a row.
	chunked(linearCase([]int64{1, 32}, 150, true, weightNamed), 128, 3),
	chunked(linearCase([]int64{5, 32}, 150, false, weightNamed), 128, 3),
	chunked(linearCase([]int64{1, 32}, 100, false, weightPrepack), 128, 2),
	chunked(linearCase([]int64{2, 3, 32}, 100, true, weightInline), 128, 2),
	chunked(linearCase([]int64{20, 32}, 100, true, weightNamed), 128, 2), // tiled kernels
	// FLOAT16, held as float32 and read as packed halves.
	chunked(ForceFP16(linearCase([]int64{1, 32}, 150, true, weightNamed), serialization.Float32), 128, 3),
	chunked(ForceFP16(linearCase([]int64{4, 32}, 100, false, weightPrepack), serialization.Float16), 128, 2),
	// 4-bit, K = 128: 64 bytes a row.
	chunked(q4gswCase([]int64{1, 128}, 150, 32, true, false), 64, 3),
	chunked(q4gswCase([]int64{5, 128}, 100, 64, false, false), 64, 2),
	chunked(dq8caCase([]int64{1, 128}, 150, 32, true, 11), 64, 3),
	chunked(dq8caCase([]int64{3, 128}, 100, 32, false, 11), 64, 2),
	chunked(weightInt4Case([]int64{1, 128}, 150, 32), 64, 3),
	chunked(weightInt4Case([]int64{3, 128}, 100, 64), 64, 2),
	// linear_qcs4w, K = 64: 32 bytes a row; int8 K = 64: 64.
	chunked(perChannelCase([]int64{1, 64}, 150, false, true), 32, 3),
	chunked(perChannelCase([]int64{3, 64}, 100, false, false), 32, 2),
	chunked(perChannelCase([]int64{1, 64}, 150, true, false), 64, 3),
	chunked(perChannelCase([]int64{4, 64}, 100, true, true), 64, 2),
	// Embeddings: float32 D = 32 (128 bytes a row); 4-bit D = 128.
	chunked(embeddingCase(150, 32, []int64{1}, weightNamed), 128, 3),
	chunked(embeddingCase(150, 32, []int64{2, 7}, weightPrepack), 128, 3),
	chunked(embeddingCase(100, 32, []int64{9}, weightInline), 128, 2),
	chunked(embeddingQ4gswCase(150, 128, 32, []int64{1}, true, false), 64, 3),
	chunked(embeddingQ4gswCase(150, 128, 32, []int64{3, 2}, false, false), 64, 3),
	chunked(embeddingQ4gswCase(100, 128, 128, []int64{6}, true, true), 64, 2),
	// A classifier whose rms_norm the linear-group fusion would compute in
	// its prologue (ops/fuse_linear.go): a chunked weight leaves it to
	// runLinear's chunks, the norm recorded alone; float32 and 4-bit, and
	// q/k/v of which only one weight is chunked.
	chunked(fuseLinearCase(fuseLinearSpec{name: "classifier", m: 1, k: 32, ns: []int64{150}}), 128, 3),
	chunked(fuseLinearCase(fuseLinearSpec{name: "q4_classifier", m: 1, k: 128, ns: []int64{150}, q4: 32}), 64, 3),
	chunked(fuseLinearCase(fuseLinearSpec{name: "qkv", m: 1, k: 32, ns: []int64{100, 8, 8}}), 128, 2),
}

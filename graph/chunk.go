package graph

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/memplan"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Chunked weights (see package ops, chunk.go): a constant larger than one
// binding or buffer may hold, read only by ops at arguments that can be
// chunked (ops.ChunkArgs), directly or through et_vk.prepack, gets no
// buffer of its own (it is deferred, as is the prepack output); the ops
// that read it ask for the row ranges they need (ops.Chunker.SliceWeight),
// each a buffer made from the constant's bytes at load.

// bindLimit is the most bytes one buffer may hold and bind: the smaller
// of the two device limits that are set (0: unchecked).
func bindLimit(lim Limits) int64 {
	var n uint64
	for _, l := range []uint64{lim.MaxBufferSize, lim.MaxStorageBufferBindingSize} {
		if l > 0 && (n == 0 || l < n) {
			n = l
		}
	}
	return int64(min(n, 1<<62))
}

// WeightChunks is a weight a load holds in chunks (ChunkedWeights).
type WeightChunks struct {
	ID int32 // the constant's value id
	// Prepacked are its et_vk.prepack outputs, which get no buffer
	// either.
	Prepacked []int32
	Bytes     int64 // its size on the device
	Rows      int64 // its leading dimension
	// Chunks is how many chunks of its rows fit its own row size
	// (ops.ChunkAlign rows at a time, at most the limit each; 0 when not
	// even that fits). An op whose other sliced tensors (scales, the
	// scratch output) take more bytes a row splits finer.
	Chunks int
}

// ChunkedWeights lists, in value order, the weights a load under lim
// holds in chunks (see graph/chunk.go): the constants over the smaller of
// lim's buffer and binding limits that every reader reads where ops can
// read chunks (ops.ChunkArgs), directly or through et_vk.prepack. Every
// other tensor over a limit is a *LimitError at load.
func ChunkedWeights(g *serialization.Graph, lim Limits) []WeightChunks {
	ws, _ := weightChunks(g, lim)
	return ws
}

// chunkedWeights finds the weights held in chunks, adds them (and the
// prepack outputs of them) to deferred and returns them; blocked names,
// for each constant over the limit that cannot be chunked, the first op
// that reads it where chunks cannot be read (for its *LimitError).
func chunkedWeights(g *serialization.Graph, deferred map[int32]bool, lim Limits) (chunked map[int32]bool, blocked map[int32]string) {
	ws, blocked := weightChunks(g, lim)
	chunked = map[int32]bool{}
	for _, w := range ws {
		for _, id := range append(w.Prepacked, w.ID) {
			chunked[id], deferred[id] = true, true
		}
	}
	return chunked, blocked
}

// weightChunks is ChunkedWeights, with chunkedWeights' blocked.
func weightChunks(g *serialization.Graph, lim Limits) (ws []WeightChunks, blocked map[int32]string) {
	limit := bindLimit(lim)
	blocked = map[int32]string{}
	if limit <= 0 {
		return nil, blocked
	}
	for i := range g.Values {
		t := g.Values[i].Tensor
		if g.Values[i].Kind != serialization.KindTensor || t == nil || t.ConstantID < 0 || len(t.Dims) == 0 || t.Dims[0] == 0 {
			continue
		}
		nbytes := int64(DeviceDType(t.DataType).Size())
		for _, d := range t.Dims {
			nbytes *= int64(d)
			if nbytes > maxTensorBytes || nbytes < 0 {
				break
			}
		}
		if nbytes <= 0 || nbytes > maxTensorBytes || memplan.AllocSize(nbytes) <= limit {
			continue
		}
		id := int32(i)
		var outs []int32
		// Whether a chunk of ops.ChunkAlign rows fits is the op's to say
		// (it knows which dim follows its rows): it fails to record if not.
		op, ok := chunkUses(g, id, &outs, 0)
		if !ok {
			blocked[id] = op
			for _, o := range outs {
				blocked[o] = op
			}
			continue
		}
		w := WeightChunks{ID: id, Prepacked: outs, Bytes: nbytes, Rows: int64(t.Dims[0])}
		if per := (limit - 16) / (nbytes / w.Rows) / ops.ChunkAlign * ops.ChunkAlign; per > 0 {
			w.Chunks = int((w.Rows + per - 1) / per)
		}
		ws = append(ws, w)
	}
	return ws, blocked
}

// chunkUses reports whether every use of id is an argument ops.ChunkArgs
// lists, following et_vk.prepack to its output's uses (added to outs);
// when not, op is the first op that reads id otherwise.
func chunkUses(g *serialization.Graph, id int32, outs *[]int32, depth int) (op string, ok bool) {
	for _, c := range g.Chain {
		if len(c.Args) == 0 {
			continue
		}
		for i, a := range c.Args[:len(c.Args)-1] {
			if a != id {
				continue
			}
			switch {
			case c.Name == prepack.Op && i == 0 && len(c.Args) == 2 && depth == 0:
				*outs = append(*outs, c.Args[1])
				if op, ok := chunkUses(g, c.Args[1], outs, depth+1); !ok {
					return op, false
				}
			case slices.Contains(ops.ChunkArgs(c.Name), i):
			default:
				return c.Name, false
			}
		}
	}
	return "", true
}

// limitOp names the op a *LimitError for tensor id reports: the first
// that cannot read it in chunks, else the op that writes it, else the
// first that reads it.
func (a *Analysis) limitOp(id int32) string {
	if op, ok := a.blocked[id]; ok && op != "" {
		return op
	}
	if i, ok := a.Producers[id]; ok {
		return a.Graph.Chain[i].Name
	}
	if cs := a.Consumers[id]; len(cs) > 0 {
		return a.Graph.Chain[cs[0]].Name
	}
	return ""
}

// sliceState is a range of a weight made by SliceWeight.
type sliceState struct {
	src        int32 // the constant sliced
	dim        int
	begin, end int64
	data       []byte // the slice's bytes (aliasing the constant's along dim 0)
}

// ChunkedWeight implements ops.Builder.
func (b *opBuilder) ChunkedWeight(id int32) bool {
	g := b.g
	if g.chunked[id] {
		return true
	}
	src, ok := g.prepackSrc[id]
	return ok && g.chunked[src]
}

// ChunkBytes implements ops.Builder.
func (b *opBuilder) ChunkBytes() int64 { return b.g.bindLimit }

// SliceWeight implements ops.Builder.
func (b *opBuilder) SliceWeight(id int32, dim int, begin, end int64) (ops.Tensor, error) {
	g := b.g
	if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
		return ops.Tensor{}, ops.Errorf(-1, "value %d is not a tensor", id)
	}
	src, ok := g.weightSource(id)
	if !ok {
		return ops.Tensor{}, ops.Errorf(-1, "value %d is not a weight (a constant or a prepacked constant); it cannot be sliced", id)
	}
	// A named constant is keyed by its content (its named key, dtype and
	// dims): a tied embedding and classifier, two values of one named
	// key, share their slices when their ops take the same rows.
	key := fmt.Sprintf("value:%d", src)
	if ts := g.tensors[src]; ts.constID >= 0 && g.graph.Constants[ts.constID].IsNamed() {
		var err error
		if key, err = g.weightKey(src); err != nil {
			return ops.Tensor{}, err
		}
	}
	key = fmt.Sprintf("%s|%d|%d|%d", key, dim, begin, end)
	if vid, ok := g.sliceKeys[key]; ok {
		return b.Tensor(vid)
	}
	if b.refresh != nil {
		return ops.Tensor{}, errRefresh
	}
	if g.replay {
		return ops.Tensor{}, fmt.Errorf("graph: slicing value %d while re-recording: %w", id, ops.ErrNotPacked)
	}
	ws := g.tensors[src]
	if dim < 0 || dim >= len(ws.dims) || begin < 0 || end > ws.dims[dim] || begin >= end {
		return ops.Tensor{}, ops.Errorf(-1, "value %d: cannot take [%d, %d) of dims %v along %d", id, begin, end, ws.dims, dim)
	}
	all, err := g.constantBytes(src, ws)
	if err != nil {
		return ops.Tensor{}, err
	}
	es := int64(ws.dtype.Size())
	outer := ops.NumelOf(ws.dims[:dim])
	inner := ops.NumelOf(ws.dims[dim+1:]) * es
	span := ws.dims[dim] * inner
	var data []byte
	if outer == 1 {
		data = all[begin*inner : end*inner]
	} else {
		data = make([]byte, 0, outer*(end-begin)*inner)
		for o := int64(0); o < outer; o++ {
			data = append(data, all[o*span+begin*inner:o*span+end*inner]...)
		}
	}
	dims := slices.Clone(ws.dims)
	dims[dim] = end - begin
	numel := ops.NumelOf(dims)
	nbytes := numel * es
	ts := &tensorState{dtype: ws.dtype, half: ws.half, dims: dims, numel: numel, nbytes: nbytes, constant: true, constID: -1, memObj: -1}
	ts.setLive(dims, numel)
	vid := int32(len(g.tensors))
	g.tensors = append(g.tensors, ts)
	g.sliceKeys[key] = vid
	g.slices[vid] = &sliceState{src: src, dim: dim, begin: begin, end: end, data: data}
	g.place(placement{id: vid, size: uint64(memplan.AllocSize(nbytes)), data: data, stat: &g.stats.ChunkBytes,
		label: fmt.Sprintf("value %d rows [%d, %d) along %d", src, begin, end, dim)})
	if g.chunked[src] && dim == 0 {
		g.stats.NumWeightChunks++
	}
	return b.Tensor(vid)
}

// chunkOf returns the index of the weight chunk a dispatch binding ids
// reads: a slice along dim 0 of a chunked weight (its rank among that
// weight's slices by first row), or a chunked op's scratch output (its
// key, the chunk index by ops' construction); -1 when it binds neither.
func (g *WebGPUGraph) chunkOf(ids []int32) int {
	for _, id := range ids {
		if s, ok := g.slices[id]; ok && s.dim == 0 && g.chunked[s.src] {
			n := 0
			for _, o := range g.slices {
				if o.src == s.src && o.dim == 0 && o.begin < s.begin {
					n++
				}
			}
			return n
		}
		if k, ok := g.scratchKeys[id]; ok {
			return k
		}
	}
	return -1
}

// Scratch implements ops.Builder.
func (b *opBuilder) Scratch(key int, dt serialization.DataType, dims []int64) (ops.Tensor, error) {
	g := b.g
	k := [2]int{b.index, key}
	if vid, ok := g.scratchTensors[k]; ok {
		ts := g.tensors[vid]
		if ts.dtype != dt || !slices.Equal(ts.dims, dims) {
			return ops.Tensor{}, ops.Errorf(-1, "scratch tensor %d of op %d: %v %v asked for, %v %v made", key, b.index, dt, dims, ts.dtype, ts.dims)
		}
		return b.Tensor(vid)
	}
	if b.refresh != nil {
		return ops.Tensor{}, errRefresh
	}
	numel := ops.NumelOf(dims)
	if numel < 0 || dt.Size() == 0 {
		return ops.Tensor{}, ops.Errorf(-1, "bad scratch shape %v %v", dt, dims)
	}
	nbytes := numel * int64(dt.Size())
	ts := &tensorState{dtype: dt, dims: slices.Clone(dims), numel: numel, nbytes: nbytes, constID: -1, memObj: -1}
	ts.setLive(ts.dims, numel)
	vid := int32(len(g.tensors))
	g.tensors = append(g.tensors, ts)
	g.scratchTensors[k] = vid
	g.scratchKeys[vid] = key
	g.place(placement{id: vid, size: uint64(memplan.AllocSize(nbytes)), stat: &g.stats.ScratchBytes, label: fmt.Sprintf("op %d scratch %d", b.index, key)})
	return b.Tensor(vid)
}

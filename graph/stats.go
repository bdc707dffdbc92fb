package graph

import (
	"fmt"
	"reflect"
	"slices"
)

// MemoryStats mirrors the reference runtime's memory statistics.
type MemoryStats struct {
	NumTensors                int
	UnsharedTensorBufferBytes int64
	SharedBufferBytes         int64
	NumSharedObjects          int
	TensorBufferBytes         int64
	StagingBufferBytes        int64
	UniformBufferBytes        int64
	NumDispatches             int
	NumCachedPipelines        int
	NumCachedShaders          int
	// NumDeferredConstants counts the weights that got no buffer of their
	// own (prepack.Deferred): constants that only feed prepack or are only
	// read packed, and prepack outputs only read packed;
	// DeferredConstantBytes is what they would have used.
	NumDeferredConstants  int
	DeferredConstantBytes int64
	// PackedWeightBytes is the size of the buffers holding weights in the
	// layouts kernels read (packed at load or from the packed-weight
	// cache); PersistentCopyBytes that of writable copies of constants an
	// op updates in place. Neither is part of the memory plan.
	PackedWeightBytes   int64
	PersistentCopyBytes int64
	// NumHalfKVCaches counts the KV caches held as packed halves
	// (ops.Config.HalfKVCache) and HalfKVCacheBytes their buffers' size,
	// two bytes an element; not part of the memory plan. Each such
	// cache's float32 tensor gets no buffer: its size is among
	// DeferredConstantBytes.
	NumHalfKVCaches  int
	HalfKVCacheBytes int64
	// MovedTensors counts the tensors the last recording bound to another
	// shared object than their mem_obj_id: a record-time rewrite (a fused
	// kernel) made a tensor live together with one the exporter let share
	// its buffer, and one of them moved to a free object (see package
	// memplan). AddedSharedObjects and AddedSharedBytes are the shared
	// objects created beyond the exporter's plan because none was free
	// (0 for every chain the project fuses); they are included in
	// NumSharedObjects and SharedBufferBytes.
	MovedTensors       int
	AddedSharedObjects int
	AddedSharedBytes   int64
	// NumQuantizedWeights counts the weights of weight-quantized ops
	// (QuantizedWeights), QuantizedParams the weights they hold, and
	// QuantizedWeightBytes what they take on the device as exported:
	// packed bytes, scales and sums (a 4-bit weight costs half a byte plus
	// its share of the scales). These are a breakdown: the bytes are
	// already counted in TensorBufferBytes or, for a weight that only
	// feeds et_vk.prepack, in DeferredConstantBytes.
	NumQuantizedWeights  int
	QuantizedParams      int64
	QuantizedWeightBytes int64
	// NumFloat16Tensors counts the tensors serialized as FLOAT16
	// (force_fp16 exports). The device holds them as float32
	// (DeviceDType), so they take twice their serialized size;
	// Float16TensorBytes is that float32 size summed over those that are
	// not deferred (each counted once, whether it has a buffer of its own
	// or shares one). Linear weights read as packed halves are deferred:
	// their halves are in PackedWeightBytes.
	NumFloat16Tensors  int
	Float16TensorBytes int64
	// NumChunkedWeights counts the weights too large for one binding held
	// in chunks of rows (graph/chunk.go), ChunkedWeightBytes their size
	// (also among DeferredConstantBytes: they have no buffer of their
	// own) and NumWeightChunks their chunks. ChunkBytes is the size of
	// the buffers holding every weight slice the chunked ops read (the
	// chunks, and the matching ranges of their scales and biases);
	// ScratchBytes that of the chunked ops' scratch outputs. Neither is
	// part of the memory plan.
	NumChunkedWeights  int
	ChunkedWeightBytes int64
	NumWeightChunks    int
	ChunkBytes         int64
	ScratchBytes       int64
}

// TotalBytes is tensor + staging + uniform + packed-weight + persistent
// copy + half KV cache + weight chunk + scratch bytes: all the device
// memory the graph holds.
func (s MemoryStats) TotalBytes() int64 {
	return s.TensorBufferBytes + s.StagingBufferBytes + s.UniformBufferBytes + s.PackedWeightBytes + s.PersistentCopyBytes + s.HalfKVCacheBytes +
		s.ChunkBytes + s.ScratchBytes
}

func (g *WebGPUGraph) computeStats() {
	s := g.plan.Stats
	g.stats.NumTensors = s.NumTensors
	g.stats.UnsharedTensorBufferBytes = s.UnsharedTensorBufferBytes
	g.stats.SharedBufferBytes = s.SharedBufferBytes
	g.stats.NumSharedObjects = s.NumSharedObjects + g.stats.AddedSharedObjects
	g.stats.SharedBufferBytes += g.stats.AddedSharedBytes
	g.stats.TensorBufferBytes = s.TensorBufferBytes() + g.stats.AddedSharedBytes
	g.stats.NumDeferredConstants = s.NumDeferred
	g.stats.DeferredConstantBytes = s.DeferredBytes
	for _, o := range g.outputs {
		if o.staging != nil {
			g.stats.StagingBufferBytes += int64(o.staging.Size())
		}
	}
	g.stats.NumDispatches = len(g.records)
	g.stats.NumQuantizedWeights, g.stats.QuantizedParams, g.stats.QuantizedWeightBytes = 0, 0, 0
	if g.an != nil {
		for _, q := range QuantizedWeights(g.an.Graph) {
			g.stats.NumQuantizedWeights++
			g.stats.QuantizedParams += q.Params
			g.stats.QuantizedWeightBytes += q.Bytes()
		}
	}
	g.stats.NumChunkedWeights, g.stats.ChunkedWeightBytes = 0, 0
	for id := range g.chunked {
		if ts := g.tensors[id]; ts != nil && ts.constant {
			g.stats.NumChunkedWeights++
			g.stats.ChunkedWeightBytes += ts.nbytes
		}
	}
	g.stats.NumFloat16Tensors, g.stats.Float16TensorBytes = 0, 0
	for _, ts := range g.tensors {
		if ts != nil && ts.half {
			g.stats.NumFloat16Tensors++
			if !ts.deferred {
				g.stats.Float16TensorBytes += ts.nbytes
			}
		}
	}
}

// MemoryStats reports what the graph allocated.
func (g *WebGPUGraph) MemoryStats() MemoryStats {
	s := g.stats
	s.NumCachedShaders, s.NumCachedPipelines = g.dev.CacheStats()
	return s
}

// Add adds o's counts to s, as a model sums its graphs'. The pipeline and
// shader counts are the device's, the same for every graph of it: s takes
// o's.
func (s *MemoryStats) Add(o MemoryStats) {
	addCounts(s, o, "NumCachedPipelines", "NumCachedShaders")
}

// Add adds o's counts to s, as a model sums its graphs'.
func (s *RecordStats) Add(o RecordStats) { addCounts(s, o) }

// Add adds o's counts to s, as a model sums its graphs'.
func (s *PackedCacheStats) Add(o PackedCacheStats) { addCounts(s, o) }

// addCounts adds every int and int64 field of o to *s (a pointer to a
// struct of o's type), but those named in take, which it sets to o's. A
// field of another kind is a programming error and panics (so a new stat
// cannot be left out of a sum by mistake).
func addCounts[T any](s *T, o T, take ...string) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o)
	for i := range sv.NumField() {
		f := sv.Field(i)
		switch {
		case slices.Contains(take, sv.Type().Field(i).Name):
			f.Set(ov.Field(i))
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(f.Int() + ov.Field(i).Int())
		default:
			panic(fmt.Sprintf("graph: %s.%s is no count", sv.Type().Name(), sv.Type().Field(i).Name))
		}
	}
}

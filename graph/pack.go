package graph

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/internal/tensor"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/prepack"
)

// PackedCacheStats counts a graph's packed weights: Hits came from the
// packed-weight cache, Misses were packed on the device at load; Bytes is
// the size of all packed weights. Corrupt counts the misses whose cache
// entry was there but failed its checksum (they were packed again, and the
// cache rewrites them).
type PackedCacheStats struct {
	Hits, Misses int
	Corrupt      int
	Bytes        int64
}

// PackedCacheStats reports how the graph's packed weights were obtained.
func (g *WebGPUGraph) PackedCacheStats() PackedCacheStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.packStats
}

// PackedCacheErrors returns the problems the packed-weight cache met
// during the load (prepack.Cache.ErrorsSince): the file could not be read
// or written, or it or some of its entries were corrupt. The first load of
// the process that uses a cache file also gets the problems of opening
// it; problems of other loads sharing the file at the same time may show
// up too. Nil when there were none, or without a cache.
func (g *WebGPUGraph) PackedCacheErrors() []*prepack.CacheError {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.packErrs)
}

// PackWeight implements ops.Builder. The packed tensor is a new read-only
// value (an id past the serialized values) placed for a buffer of its own
// (weights.go). On a cache hit its bytes go from the cache file's mapping
// straight into that buffer; on a miss the pack kernel runs on the device
// when the buffer is made (on lavapipe a GPU transpose is several times
// faster than Go) and, with a cache, the result is read back into a
// staging buffer whose mapping the cache writes to disk when the load
// ends — no Go heap copy either way.
func (b *opBuilder) PackWeight(id int32, spec ops.PackSpec) (ops.Tensor, error) {
	g := b.g
	if b.refresh != nil {
		return ops.Tensor{}, errRefresh
	}
	if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
		return ops.Tensor{}, ops.Errorf(-1, "value %d is not a tensor", id)
	}
	src := g.tensors[id]
	weight, ok := g.weightSource(id)
	if !ok {
		return ops.Tensor{}, ops.Errorf(-1, "value %d is not a weight (a constant or a prepacked constant)", id)
	}
	if g.chunked[weight] {
		// Too large for one buffer: the op packs its chunks instead.
		return ops.Tensor{}, fmt.Errorf("graph: value %d is held in chunks: %w", id, ops.ErrNotPacked)
	}
	var wkey string
	var err error
	if spec.Kernel == nil {
		wkey = fmt.Sprintf("value:%d", weight) // identity: never cached
	} else if wkey, err = g.weightKey(weight); err != nil {
		return ops.Tensor{}, err
	}
	var seed [32]byte
	if spec.Kernel != nil {
		seed = packSeed(spec)
	}
	// The key names the weight and the transform, not the kernel: a
	// changed kernel finds its old entry under another seed and replaces it.
	key := wkey + "|" + spec.Name
	if vid, ok := g.packed[key]; ok {
		return b.Tensor(vid)
	}
	numel := ops.NumelOf(spec.Dims)
	if numel < 0 || spec.DType.Size() == 0 {
		return ops.Tensor{}, ops.Errorf(-1, "bad packed shape %v %v", spec.DType, spec.Dims)
	}
	nbytes := numel * int64(spec.DType.Size())
	label := "packed " + spec.Name
	// The packed bytes when they are at hand: the weight as exported
	// (identity) or a cache hit. They go straight into the new buffer.
	var data []byte
	have, hit := spec.Kernel == nil, false
	if have {
		ws := g.tensors[weight]
		if ws.nbytes != nbytes {
			return ops.Tensor{}, ops.Errorf(-1, "identity packing of value %d changes its size", id)
		}
		if data, err = g.constantBytes(weight, ws); err != nil {
			return ops.Tensor{}, err
		}
	} else if g.packCache != nil {
		// The cache verified the bytes' checksum; a corrupt entry is a
		// miss, packed again below, and its Put replaces it.
		switch d, o := g.packCache.Lookup(key, seed); {
		case o == prepack.Hit && int64(len(d)) == nbytes:
			data, have, hit = d, true, true
		case o == prepack.Corrupt:
			g.packStats.Corrupt++
		}
	}
	if !have && g.replay {
		// Packing runs at load only; fail before allocating anything.
		return ops.Tensor{}, fmt.Errorf("graph: packing value %d (%s) while re-recording: %w", id, spec.Name, ops.ErrNotPacked)
	}
	ts := &tensorState{dtype: spec.DType, dims: append([]int64(nil), spec.Dims...), numel: numel, nbytes: nbytes,
		constant: true, constID: -1, memObj: -1}
	ts.setLive(ts.dims, numel)
	vid := int32(len(g.tensors))
	g.tensors = append(g.tensors, ts)
	g.packed[key] = vid
	p := placement{id: vid, size: uint64(nbytes), data: data, stat: &g.stats.PackedWeightBytes, label: label}
	switch {
	case hit:
		g.packStats.Hits++
		g.packStats.Bytes += nbytes
	case !have:
		g.packStats.Bytes += nbytes
		g.packStats.Misses++
		p.pack = &packJob{src: src, id: id, weight: weight, spec: spec, key: key, seed: seed}
	}
	g.place(p)
	return b.Tensor(vid)
}

// weightSource finds the constant behind id: id itself, or the constant an
// et_vk.prepack copied into id. A prepack whose source is no constant (a
// malformed graph) gives none.
func (g *WebGPUGraph) weightSource(id int32) (int32, bool) {
	if g.isWeight(id) {
		return id, true
	}
	if src, ok := g.prepackSrc[id]; ok && g.isWeight(src) {
		return src, true
	}
	return 0, false
}

// isWeight reports whether id is a constant tensor or a slice of a weight
// (chunk.go).
func (g *WebGPUGraph) isWeight(id int32) bool {
	if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
		return false
	}
	if ts := g.tensors[id]; ts.constant && ts.constID >= 0 {
		return true
	}
	_, ok := g.slices[id]
	return ok
}

// weightKey is a constant's content ID: its named-data key (the SHA-256 of
// its bytes, as the exporter writes it) or the SHA-256 of its inline bytes.
func (g *WebGPUGraph) weightKey(id int32) (string, error) {
	if k, ok := g.weightKeys[id]; ok {
		return k, nil
	}
	if s, ok := g.slices[id]; ok {
		pk, err := g.weightKey(s.src)
		if err != nil {
			return "", err
		}
		k := fmt.Sprintf("%s|slice %d [%d, %d)", pk, s.dim, s.begin, s.end)
		g.weightKeys[id] = k
		return k, nil
	}
	ts := g.tensors[id]
	c := g.graph.Constants[ts.constID]
	var k string
	if c.IsNamed() {
		k = "named:" + c.NamedKey
	} else {
		data, err := g.constantBytes(id, ts)
		if err != nil {
			return "", err
		}
		h := sha256.Sum256(data)
		k = "inline:" + hex.EncodeToString(h[:])
	}
	k += fmt.Sprintf("|%v%v", ts.dtype, ts.dims)
	g.weightKeys[id] = k
	return k, nil
}

// packSeed is the content ID of a packing: kernel source, entry point,
// binding layout, params, packed dtype and dims.
func packSeed(spec ops.PackSpec) [32]byte {
	h := sha256.New()
	h.Write([]byte(gpu.PipelineKey(spec.Kernel.Source, spec.Kernel.Entry, spec.Kernel.Layout)))
	h.Write(spec.Params)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(spec.DType))
	h.Write(b[:])
	for _, d := range spec.Dims {
		binary.LittleEndian.PutUint64(b[:], uint64(d))
		h.Write(b[:])
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// runPack runs spec's kernel from the weight's bytes into dst now. The
// source is the tensor's buffer when it has one (a constant or prepack
// output already written), else a temporary upload of the constant.
func (g *WebGPUGraph) runPack(ctx context.Context, src *tensorState, id, weight int32, dst *tensorState, spec ops.PackSpec, key string, seed [32]byte) error {
	if g.replay {
		return fmt.Errorf("%w: a weight was first packed while re-recording", ErrInvalidGraph)
	}
	var release []*gpu.Buffer
	defer func() {
		for _, b := range release {
			g.releaseOwned(b)
		}
	}()
	srcBuf := src.buf
	if srcBuf == nil || !(src.constant || src.materialized) {
		ws := g.tensors[weight]
		data, err := g.constantBytes(weight, ws)
		if err != nil {
			return err
		}
		if srcBuf, err = g.newBufferData(uint64(ws.nbytes), data, "pack source"); err != nil {
			return err
		}
		release = append(release, srcBuf)
	}
	// The kernel reads the source now: its bytes must be in place.
	if err := g.finishUploads(); err != nil {
		return err
	}
	params, err := g.newBuffer(gpu.UniformBuf, uint64(len(spec.Params)), "pack params")
	if err != nil {
		return err
	}
	release = append(release, params)
	if err := g.dev.Write(params, 0, spec.Params); err != nil {
		return err
	}
	k := spec.Kernel
	pipes, err := g.dev.Pipelines([]gpu.PipelineSpec{{Label: k.Name, Source: k.Source, Entry: k.Entry, Layout: k.Layout}})
	if err != nil {
		return err
	}
	bg, err := g.dev.NewBindGroup(pipes[0], []gpu.BindEntry{{Buf: srcBuf}, {Buf: dst.buf}, {Buf: params}}, "pack")
	if err != nil {
		return err
	}
	defer bg.Release()
	var reads []gpu.Readback
	var staging *gpu.Buffer
	if g.packCache != nil && dst.nbytes > 0 {
		if staging, err = g.newBuffer(gpu.Staging, uint64(dst.nbytes), "pack readback"); err != nil {
			return err
		}
		reads = append(reads, gpu.Readback{Src: dst.buf, Dst: staging, Size: gpu.AlignedSize(uint64(dst.nbytes))})
	}
	disp := []gpu.Dispatch{{Pipeline: pipes[0], Group: bg, X: spec.Groups[0], Y: spec.Groups[1], Z: spec.Groups[2]}}
	if err := g.dev.Run(ctx, disp, reads); err != nil {
		if staging != nil {
			g.releaseOwned(staging)
		}
		return err
	}
	if staging != nil {
		m, err := staging.Mapped()
		if err != nil {
			g.releaseOwned(staging)
			return err
		}
		// The cache keeps the mapped bytes until finishPacking saves them.
		g.packCache.Put(key, seed, m[:dst.nbytes])
		g.packStaging = append(g.packStaging, staging)
	}
	return nil
}

// finishPacking saves newly packed weights to the cache (from the staging
// mappings, which are then released). It runs at the end of every load.
func (g *WebGPUGraph) finishPacking() {
	if len(g.packStaging) == 0 {
		return
	}
	start, n := time.Now(), len(g.packStaging)
	defer func() { g.log.Debug("graph: packed weights saved", "entries", n, "elapsed", time.Since(start)) }()
	if err := g.packCache.Save(); err != nil {
		// The cache logged it. Its unsaved entries still point into our
		// mappings: drop them before unmapping.
		g.packCache.DiscardPending()
	}
	for _, st := range g.packStaging {
		g.releaseOwned(st)
	}
	g.packStaging = nil
}

// openPackedCache returns the process-wide cache for path, or nil, and
// marks where the load's problems with it begin.
func openPackedCache(path string, g *WebGPUGraph) *prepack.Cache {
	if path == "" {
		return nil
	}
	c := prepack.Shared(path, prepack.CacheOptions{Logger: g.log})
	g.packMark = c.Mark()
	return c
}

// Persistent implements ops.Builder.
func (b *opBuilder) Persistent(id int32) (ops.Tensor, error) {
	g := b.g
	if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
		return ops.Tensor{}, ops.Errorf(-1, "value %d is not a tensor", id)
	}
	ts := g.tensors[id]
	if !ts.constant {
		return b.Tensor(id)
	}
	if vid, ok := g.persistent[id]; ok {
		return b.Tensor(vid)
	}
	if g.replay || ts.constID < 0 {
		return ops.Tensor{}, ops.Errorf(-1, "value %d: cannot make a writable copy now", id)
	}
	data, err := g.constantBytes(id, ts)
	if err != nil {
		return ops.Tensor{}, err
	}
	cp := &tensorState{dtype: ts.dtype, dims: ts.dims, numel: ts.numel, nbytes: ts.nbytes, constID: -1, memObj: -1,
		materialized: true}
	cp.setLive(ts.dims, ts.numel)
	vid := int32(len(g.tensors))
	g.tensors = append(g.tensors, cp)
	g.persistent[id] = vid
	g.place(placement{id: vid, size: uint64(ts.nbytes), data: data, stat: &g.stats.PersistentCopyBytes, label: fmt.Sprintf("persistent copy of %d", id)})
	return b.Tensor(vid)
}

// HostElement implements ops.Builder for graph inputs (the data given to
// the current Execute) and constants.
func (b *opBuilder) HostElement(id int32, flat int64) (float64, error) {
	g := b.g
	if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
		return 0, ops.Errorf(-1, "value %d is not a tensor", id)
	}
	ts := g.tensors[id]
	var data []byte
	dt := ts.dtype
	switch {
	case g.hostRead[id]:
		if b.slot >= 0 && b.slot < len(g.opHost) {
			g.opHost[b.slot] = true // refresh re-runs the node when the data changes
		}
		if d := g.devPos; d != nil && b.refresh == nil && id == d.plan.Input && !d.producers[b.index] {
			d.clean = false // the position input read by another op than its producer
		}
		in, ok := g.hostIn[id]
		if !ok && !g.replay {
			// The load-time recording, before any Execute gave data: a
			// placeholder 0, as SymInt inputs have, so that the ops after
			// this one still do their load-time work (et_vk.prepack,
			// weight packing, persistent copies), which a later
			// recording cannot. The first Execute records again with
			// the real values.
			return 0, nil
		}
		if !ok {
			return 0, ops.Errorf(-1, "value %d: no input data yet", id)
		}
		data, dt = in.Data, in.DType
	case ts.constant && ts.constID >= 0 && !g.replay:
		var err error
		if data, err = g.constantBytes(id, ts); err != nil {
			return 0, err
		}
	case ts.constant:
		v, ok := g.hostConst[hostKey{id, flat}]
		if !ok {
			return 0, ops.Errorf(-1, "value %d: constant element %d was not read at load", id, flat)
		}
		return v, nil
	default:
		return 0, ops.Errorf(-1, "value %d is computed on the device; its values cannot be read while recording (only graph inputs and constants)", id)
	}
	es := int64(dt.Size())
	if flat < 0 || es == 0 || (flat+1)*es > int64(len(data)) {
		return 0, ops.Errorf(-1, "value %d: element %d out of range", id, flat)
	}
	v, ok := tensor.Element(dt, data[flat*es:(flat+1)*es])
	if !ok {
		return 0, ops.Errorf(-1, "value %d: cannot read a %v element", id, dt)
	}
	if ts.constant {
		g.hostConst[hostKey{id, flat}] = v
	}
	return v, nil
}

type hostKey struct {
	id   int32
	flat int64
}

// packAtLoad makes the packings Analysis.LoadPacked lists, before the
// first recording: those weights have no buffer as exported, so a
// recording that stops early (SymInt placeholders) must not leave one
// unpacked for a re-recording, which cannot pack. A prepack output's
// source constant is found from the chain (its et_vk.prepack records it
// again, deferred).
func (g *WebGPUGraph) packAtLoad(ctx context.Context) error {
	if len(g.an.LoadPacked) == 0 {
		return nil
	}
	for _, op := range g.graph.Chain {
		if op.Name == prepack.Op && len(op.Args) == 2 {
			g.prepackSrc[op.Args[1]] = op.Args[0]
		}
	}
	for _, lp := range g.an.LoadPacked {
		b := &opBuilder{g: g, op: lp.Op, index: -1, slot: -1, ctx: ctx}
		b.Values = ops.Values{G: g.graph, Sym: b.symRead}
		w, err := b.Tensor(lp.ID)
		if err != nil {
			return g.loadPackError(lp, err)
		}
		spec, err := lp.Pack.Spec(w, b.MaxWorkgroupsPerDim())
		if err != nil {
			return g.loadPackError(lp, fmt.Errorf("graph: value %d: %w", lp.ID, err))
		}
		if _, err := b.PackWeight(lp.ID, spec); err != nil {
			return g.loadPackError(lp, err)
		}
	}
	return nil
}

// loadPackError is err, from packing lp's weight at load, as the first op
// of lp's name that reads the weight (itself or through et_vk.prepack)
// would report it.
func (g *WebGPUGraph) loadPackError(lp LoadPacked, err error) error {
	for i, op := range g.graph.Chain {
		if op.Name != lp.Op {
			continue
		}
		for _, a := range op.Args {
			if src, ok := g.prepackSrc[a]; a == lp.ID || ok && src == lp.ID {
				return g.opError(i, err)
			}
		}
	}
	return fmt.Errorf("graph: value %d, packed at load for %s: %w", lp.ID, lp.Op, err)
}

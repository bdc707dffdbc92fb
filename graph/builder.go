package graph

import (
	"context"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// pendingDispatch is a dispatch recorded by an op before the uniform arena
// (and so the bind group) exists.
type pendingDispatch struct {
	kernel      *shaders.Kernel
	pipe        *gpu.Pipeline
	tensors     []int32 // inputs then outputs
	outputs     int     // how many of tensors are outputs (bound writable)
	paramOffset uint64
	paramSize   uint64
	groups      [3]uint32
	op          int // chain index of the op that recorded it
}

// opBuilder is the ops.Builder handed to one op function.
type opBuilder struct {
	ops.Values
	g     *WebGPUGraph
	op    string
	index int // position in the chain
	// slot is the chain index of the plan's top-level node being
	// recorded, under which refresh notes the node's reads (refresh.go).
	slot int
	ctx  context.Context
	// refresh, when set: the op is re-run by refresh and must record
	// what it recorded last time (refresh.go).
	refresh *refreshState
}

var _ ops.Builder = (*opBuilder)(nil)

func (b *opBuilder) Tensor(id int32) (ops.Tensor, error) {
	if id < 0 || int(id) >= len(b.g.tensors) || b.g.tensors[id] == nil {
		return ops.Tensor{}, ops.Errorf(-1, "value %d is %v, want a tensor", id, b.Kind(id))
	}
	ts := b.g.tensors[id]
	return ops.Tensor{ID: id, DType: ts.dtype, Dims: append([]int64(nil), ts.live...), Numel: ts.liveNumel, NBytes: ts.liveBytes(),
		Constant: ts.constant, MaxDims: append([]int64(nil), ts.dims...), MaxNumel: ts.numel, Half: ts.half}, nil
}

// SetDims sets the live shape of an op output.
func (b *opBuilder) SetDims(id int32, dims []int64) error {
	if id < 0 || int(id) >= len(b.g.tensors) || b.g.tensors[id] == nil {
		return ops.Errorf(-1, "value %d is %v, want a tensor", id, b.Kind(id))
	}
	ts := b.g.tensors[id]
	n := ops.NumelOf(dims)
	if n < 0 {
		return ops.Errorf(-1, "value %d: invalid shape %v", id, dims)
	}
	if n > ts.numel {
		return ops.Errorf(-1, "value %d: shape %v (%d elements) exceeds its serialized size %v (%d elements)", id, dims, n, ts.dims, ts.numel)
	}
	if ts.constant {
		if n != ts.numel {
			return ops.Errorf(-1, "value %d is a constant of shape %v; cannot resize it to %v", id, ts.dims, dims)
		}
		return nil
	}
	if b.refresh != nil && !slices.Equal(ts.live, dims) {
		return errRefresh
	}
	ts.setLive(dims, n)
	return nil
}

// SetInt sets the live value of a SymInt.
func (b *opBuilder) SetInt(id int32, v int64) error {
	if b.Kind(id) != serialization.KindSymInt {
		return ops.Errorf(-1, "value %d is %v, want a SymInt", id, b.Kind(id))
	}
	g := b.g
	if b.refresh == nil {
		// refresh replays the values ops set in chain order, from the
		// last recording's: exact only when each SymInt is set once,
		// before any read, and is no input.
		if g.symSet[id] || g.symEarly[id] || g.isInput(id) {
			g.refreshable = false
		}
		g.symSet[id] = true
	}
	g.sym[id] = v
	return nil
}

func (b *opBuilder) MaxWorkgroupsPerDim() uint32 {
	return b.g.dev.Limits().MaxComputeWorkgroupsPerDimension
}

// Dispatch checks the bindings, gets the pipeline from the device's shared
// cache and queues the record; bind groups are made once all ops are done.
func (b *opBuilder) Dispatch(k *shaders.Kernel, inputs, outputs []int32, params []byte, groups [3]uint32) error {
	g := b.g
	want := len(inputs) + len(outputs)
	if params != nil {
		want++
	}
	if want != len(k.Layout) {
		return fmt.Errorf("%w: kernel %s has %d bindings, dispatch gives %d", ErrInvalidGraph, k.Name, len(k.Layout), want)
	}
	maxg := g.dev.Limits().MaxComputeWorkgroupsPerDimension
	for _, n := range groups {
		if n > maxg {
			return fmt.Errorf("%w: dispatch grid %v exceeds %d workgroups per dimension", ErrUnsupported, groups, maxg)
		}
	}
	ids := make([]int32, 0, len(inputs)+len(outputs))
	ids = append(append(ids, inputs...), outputs...)
	for i, id := range ids {
		if id < 0 || int(id) >= len(g.tensors) || g.tensors[id] == nil {
			return ops.Errorf(-1, "value %d is not a tensor", id)
		}
		ts := g.tensors[id]
		if ts.buf == nil && !ts.shared && !ts.placed {
			if !ts.constant && !ts.deferred && ts.memObj < 0 {
				// A prepack output whose et_vk.prepack has not run yet.
				return fmt.Errorf("%w: %w: value %d is read before the et_vk.prepack that writes it", ErrInvalidGraph, ErrReadBeforeWrite, id)
			}
			return fmt.Errorf("%w: value %d has no buffer", ErrInvalidGraph, id)
		}
		if i >= len(inputs) && ts.constant {
			return fmt.Errorf("%w: op writes into constant value %d", ErrInvalidGraph, id)
		}
	}
	// A buffer bound writable must not be bound again in the same dispatch
	// (WebGPU rejects the usage conflict when the pass ends; an in-place
	// kernel would race). Transient tensors get their buffers after the
	// recording, from the lifetimes it gives them, so here only one value
	// bound twice, or two tensors with fixed buffers that are one buffer,
	// can clash; checkBindings verifies every binding once all are known.
	for i := len(inputs); i < len(ids); i++ {
		for j := range ids {
			if j != i && b.sameBuffer(ids[j], ids[i]) {
				return fmt.Errorf("%w: values %d and %d are one buffer but are bound together, one writable",
					ErrInvalidGraph, ids[j], ids[i])
			}
		}
	}
	if err := g.checkAliasWrite(b.index, outputs); err != nil {
		return err
	}
	pd := pendingDispatch{kernel: k, tensors: ids, outputs: len(outputs), groups: groups, op: b.index}
	if b.refresh != nil {
		return b.refreshDispatch(ids, len(outputs), params, pd)
	}
	for _, id := range outputs {
		if g.tensors[id].materialized {
			g.mutatesState = true // it writes into a prepacked (persistent) buffer
		}
	}
	// The pipeline is looked up (or compiled, in parallel with the
	// others) once every op has been recorded.
	if params != nil {
		align := uint64(g.dev.Limits().MinUniformBufferOffsetAlignment)
		if align == 0 {
			align = 256
		}
		off := (uint64(len(g.arena)) + align - 1) / align * align
		for uint64(len(g.arena)) < off {
			g.arena = append(g.arena, 0)
		}
		g.arena = append(g.arena, params...)
		pd.paramOffset, pd.paramSize = off, uint64(len(params))
	}
	g.pend = append(g.pend, pd)
	g.prefetchPipeline(k, len(g.pend)-1)
	return nil
}

// MaterializeConstant implements et_vk.prepack: the constant's bytes go
// straight from the (mapped) file into dst's dedicated buffer.
func (b *opBuilder) MaterializeConstant(src, dst int32) error {
	g := b.g
	if b.refresh != nil {
		return errRefresh
	}
	s, d := g.tensors[src], g.tensors[dst]
	if s == nil || !s.constant {
		return ops.Errorf(0, "value %d is not a constant tensor", src)
	}
	if d == nil {
		return ops.Errorf(1, "value %d is not a tensor", dst)
	}
	if d.constant {
		return ops.Errorf(1, "prepack output %d is itself a constant", dst)
	}
	if d.shared || d.memObj >= 0 {
		return fmt.Errorf("%w: prepack output %d is aliased (mem_obj_id %d); prepacked tensors need a dedicated buffer (mem_obj_id -1)", ErrInvalidGraph, dst, d.memObj)
	}
	if d.deferred {
		// Only read packed (prepack.Deferred): the packing reads the
		// constant itself, and the copy would never be read.
		g.prepackSrc[dst] = src
		return nil
	}
	if g.replay || d.placed {
		if d.buf == nil && !d.placed {
			return ops.Errorf(1, "prepack output %d was not written when the graph was loaded", dst)
		}
		g.prepackSrc[dst] = src
		return nil // written when the graph was loaded
	}
	data, err := g.constantBytes(src, s)
	if err != nil {
		return err
	}
	if d.buf == nil {
		// Placed with the bytes (allocate left it to us): on lavapipe a
		// direct, possibly deferred, upload.
		g.place(placement{id: dst, size: uint64(g.plan.Placements[dst].Size), data: data, label: fmt.Sprintf("value %d", dst)})
	} else if err := g.dev.Write(d.buf, 0, data); err != nil {
		return fmt.Errorf("prepack %d -> %d: %w", src, dst, err)
	}
	g.prepackSrc[dst] = src
	d.materialized = true
	return nil
}

// finishDispatches uploads the uniform arena and creates one bind group per
// dispatch.
func (g *WebGPUGraph) finishDispatches() error {
	g.stopPrefetch()
	// A kernel seen by an earlier recording of this graph has its pipeline
	// already: a re-recording hashes no shader source again.
	if g.kernelPipes == nil {
		g.kernelPipes = map[*shaders.Kernel]*gpu.Pipeline{}
	}
	var specs []gpu.PipelineSpec
	var need []int
	for i, pd := range g.pend {
		if _, ok := g.kernelPipes[pd.kernel]; ok {
			continue
		}
		specs = append(specs, gpu.PipelineSpec{Label: pd.kernel.Name, Source: pd.kernel.Source, Entry: pd.kernel.Entry, Layout: pd.kernel.Layout})
		need = append(need, i)
	}
	if len(specs) > 0 {
		pipes, err := g.dev.Pipelines(specs)
		if err != nil {
			return err
		}
		for j, i := range need {
			g.kernelPipes[g.pend[i].kernel] = pipes[j]
		}
	}
	for i := range g.pend {
		g.pend[i].pipe = g.kernelPipes[g.pend[i].kernel]
	}
	// What refresh matches a re-run op against and patches.
	g.lastPend, g.lastArena = g.pend, g.arena
	arena := g.arenaBuf
	if len(g.arena) > 0 {
		if arena == nil || arena.Size() < uint64(len(g.arena)) {
			if arena != nil {
				g.releaseOwned(arena)
			}
			var err error
			arena, err = g.newBuffer(gpu.UniformBuf, uint64(len(g.arena)), "params")
			if err != nil {
				return err
			}
			g.arenaBuf = arena
		}
		if err := g.dev.Write(arena, 0, g.arena); err != nil {
			return fmt.Errorf("graph: params: %w", err)
		}
		g.stats.UniformBufferBytes = int64(arena.Size())
	}
	// The previous recording's bind groups (none at load): one that binds
	// exactly what dispatch i binds is used again, the rest released.
	old, oldKeys := g.groups, g.groupKeys
	g.groups, g.groupKeys = nil, nil
	defer func() {
		for i, bg := range old {
			if bg != nil && (i >= len(oldKeys) || !oldKeys[i].reused) {
				bg.Release()
			}
		}
	}()
	for i, pd := range g.pend {
		entries := make([]gpu.BindEntry, 0, len(pd.tensors)+1)
		for _, id := range pd.tensors {
			entries = append(entries, gpu.BindEntry{Buf: g.tensors[id].buf})
		}
		if pd.paramSize > 0 {
			entries = append(entries, gpu.BindEntry{Buf: arena, Offset: pd.paramOffset, Size: pd.paramSize})
		}
		key := newBindKey(pd.pipe, entries)
		var bg *gpu.BindGroup
		if key.ok && i < len(oldKeys) && oldKeys[i].ok && oldKeys[i].same(key) && !oldKeys[i].reused {
			bg = old[i]
			oldKeys[i].reused = true
		} else {
			var err error
			if bg, err = g.dev.NewBindGroup(pd.pipe, entries, pd.kernel.Name); err != nil {
				return fmt.Errorf("graph: dispatch %d: %w", i, err)
			}
		}
		g.groups = append(g.groups, bg)
		g.groupKeys = append(g.groupKeys, key)
		g.dispatchOps = append(g.dispatchOps, pd.op)
		g.dispatchKernels = append(g.dispatchKernels, pd.kernel.Name)
		g.dispatchChunks = append(g.dispatchChunks, g.chunkOf(pd.tensors))
		g.records = append(g.records, gpu.Dispatch{Pipeline: pd.pipe, Group: bg, X: pd.groups[0], Y: pd.groups[1], Z: pd.groups[2]})
	}
	return nil
}

// maxBindKey is the most bindings a bindKey records; a dispatch with more
// always gets a new bind group.
const maxBindKey = 12

// bindKey is what one bind group binds, so that a re-recording (new input
// shapes or SymInt values, usually the same buffers and uniform offsets)
// reuses the group instead of creating it again.
type bindKey struct {
	pipe   *gpu.Pipeline
	n      int
	bufs   [maxBindKey]*gpu.Buffer
	offs   [maxBindKey]uint64
	sizes  [maxBindKey]uint64
	ok     bool // at most maxBindKey bindings
	reused bool // taken by the current recording
}

func newBindKey(pipe *gpu.Pipeline, entries []gpu.BindEntry) bindKey {
	k := bindKey{pipe: pipe, n: len(entries), ok: len(entries) <= maxBindKey}
	if !k.ok {
		return k
	}
	for i, e := range entries {
		k.bufs[i], k.offs[i], k.sizes[i] = e.Buf, e.Offset, e.Size
	}
	return k
}

// same reports whether k and o bind the same things.
func (k bindKey) same(o bindKey) bool {
	return k.pipe == o.pipe && k.n == o.n && k.bufs == o.bufs && k.offs == o.offs && k.sizes == o.sizes
}

// releaseOwned releases b and drops it from the graph's owned buffers.
func (g *WebGPUGraph) releaseOwned(b *gpu.Buffer) {
	for i, o := range g.owned {
		if o == b {
			g.owned = append(g.owned[:i], g.owned[i+1:]...)
			break
		}
	}
	b.Release()
}

// Config implements ops.Builder: the load's kernel choices.
func (b *opBuilder) Config() ops.Config { return b.g.kernels }

// OnRefresh implements ops.Builder: update becomes the recording unit's
// update function (refresh.go).
func (b *opBuilder) OnRefresh(update func(ops.Builder) error) {
	g := b.g
	if b.refresh == nil && b.slot >= 0 && b.slot < len(g.opUpdates) {
		g.opUpdates[b.slot] = append(g.opUpdates[b.slot], nodeUpdate{index: b.index, fn: update})
	}
}

// DeviceProfile implements ops.Builder: the device the load records for.
func (b *opBuilder) DeviceProfile() ops.DeviceProfile { return b.g.profile }

// sameBuffer reports whether tensors x and y are bound to one GPU buffer
// whatever the recording decides: the same value, or two tensors with
// fixed buffers (constants, dedicated tensors, prepacked weights) that are
// one buffer. Transient tensors, which the exporter let share objects, are
// never the same buffer as another value here: bindTransients binds them
// after the recording so that tensors live in one dispatch never share,
// which lets a fused kernel read a tensor and write one the exporter gave
// the same mem_obj_id.
func (b *opBuilder) sameBuffer(x, y int32) bool {
	t := b.g.tensors
	if x < 0 || y < 0 || int(x) >= len(t) || int(y) >= len(t) || t[x] == nil || t[y] == nil {
		return false
	}
	if x == y {
		return true
	}
	return !t[x].shared && !t[y].shared && t[x].buf != nil && t[x].buf == t[y].buf
}

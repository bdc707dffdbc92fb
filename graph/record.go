package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/lower"
	"github.com/wgdelegate/wgdelegate/ops"
)

// recordOps records every node of the plan (package lower) in order.
func (g *WebGPUGraph) recordOps(ctx context.Context) error {
	g.resetAliases()
	n := len(g.graph.Chain)
	g.opSyms, g.opHost, g.opPend = make([][]symRead, n), make([]bool, n), make([][2]int, n)
	g.opUnits, g.opUpdates = make([]int, n), make([][]nodeUpdate, n)
	g.symSet, g.symEarly, g.refreshable = map[int32]bool{}, map[int32]bool{}, true
	for _, node := range g.lowered.Nodes {
		i := node.Index
		if err := ctx.Err(); err != nil {
			return err
		}
		lo := len(g.pend)
		err := g.recordNode(ctx, node, i, nil)
		g.opPend[i] = [2]int{lo, len(g.pend)}
		if err != nil {
			return err
		}
	}
	return nil
}

// recordNode records one node of the plan; slot is the chain index of
// the plan's top-level node it belongs to, under which refresh notes what
// it reads (refresh.go); rs, when set, is the refresh that re-runs it.
func (g *WebGPUGraph) recordNode(ctx context.Context, node lower.Node, slot int, rs *refreshState) error {
	switch node.Kind {
	case lower.KindOp:
		return g.recordOp(ctx, node.Index, slot, rs)
	case lower.KindView:
		return g.recordView(ctx, node.Index, slot, rs)
	}
	fn, _ := ops.LookupFused(node.Group.Kind)
	calls := node.Group.Calls
	for len(calls) > 0 {
		if len(calls) == 1 && node.Fallback == nil && len(node.Ops) > 1 {
			return g.recordOp(ctx, calls[0].Index, slot, rs) // the rest of a chain
		}
		b := g.builder(ctx, calls[0].Index, slot, rs)
		grp := *node.Group
		grp.Calls = calls
		n, err := safeFused(fn, b, &grp)
		if err != nil {
			return g.opError(calls[0].Index, err)
		}
		if n > 0 {
			g.unit(slot, rs)
			calls = calls[n:]
			continue
		}
		if node.Fallback != nil {
			// Recorded where the group would have been: the passes made
			// the group only where nothing between its members touches
			// what it reads or writes.
			for _, f := range node.Fallback {
				if err := g.recordNode(ctx, f, slot, rs); err != nil {
					return err
				}
			}
			return nil
		}
		if err := g.recordOp(ctx, calls[0].Index, slot, rs); err != nil {
			return err
		}
		calls = calls[1:]
	}
	return nil
}

// recordView records view op i: its output shares its input's buffer when
// the op's View says the bytes are the input's, else the op records its
// copy.
func (g *WebGPUGraph) recordView(ctx context.Context, i, slot int, rs *refreshState) error {
	op := g.graph.Chain[i]
	view := ops.ViewOf(op.Name)
	in, ok, err := safeView(view, g.builder(ctx, i, slot, rs), op.Args)
	if err != nil {
		return g.opError(i, err)
	}
	if !ok {
		return g.recordOp(ctx, i, slot, rs)
	}
	if err := g.alias(op.Args[len(op.Args)-1], in, i, rs != nil); err != nil {
		return g.opError(i, err)
	}
	g.unit(slot, rs)
	return nil
}

// recordOp records chain op i through its registered function.
func (g *WebGPUGraph) recordOp(ctx context.Context, i, slot int, rs *refreshState) error {
	op := g.graph.Chain[i]
	fn, _ := ops.Lookup(op.Name)
	if err := safeCall(fn, g.builder(ctx, i, slot, rs), op.Args); err != nil {
		return g.opError(i, err)
	}
	g.unit(slot, rs)
	return nil
}

// unit counts one op, fused op or view recorded in top-level node slot
// (refresh.go: a node whose every unit gave an update function is
// refreshed through them).
func (g *WebGPUGraph) unit(slot int, rs *refreshState) {
	if rs == nil && slot >= 0 && slot < len(g.opUnits) {
		g.opUnits[slot]++
	}
}

// builder is the ops.Builder of chain op i's recording in top-level node
// slot.
func (g *WebGPUGraph) builder(ctx context.Context, i, slot int, rs *refreshState) *opBuilder {
	b := &opBuilder{g: g, op: g.graph.Chain[i].Name, index: i, slot: slot, ctx: ctx, refresh: rs}
	b.Values = ops.Values{G: g.graph, Sym: b.symRead}
	return b
}

// opError is chain op i's error err as Build and Execute report it.
func (g *WebGPUGraph) opError(i int, err error) error {
	name := g.graph.Chain[i].Name
	var ae *ops.ArgError
	if errors.As(err, &ae) && ae.Op == "" {
		ae.Op = name
	}
	return &OpError{Index: i, Name: name, Err: err}
}

// symValue is the ops.Values hook for live SymInt values.
func (g *WebGPUGraph) symValue(id int32) (int64, bool) {
	v, ok := g.sym[id]
	return v, ok
}

// safeCall turns a panic in an op implementation into an error, so one buggy
// op cannot take the caller's process down on a hostile graph.
func safeCall(fn ops.Func, b ops.Builder, args []int32) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: op implementation panicked: %v", ErrInvalidGraph, r)
		}
	}()
	return fn(b, args)
}

// safeView is safeCall for a view op's View.
func safeView(fn func(ops.Builder, []int32) (int32, bool, error), b ops.Builder, args []int32) (in int32, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			in, ok, err = 0, false, fmt.Errorf("%w: op implementation panicked: %v", ErrInvalidGraph, r)
		}
	}()
	return fn(b, args)
}

// safeFused is safeCall for a fused op's kernel.
func safeFused(fn ops.FusedFunc, b ops.Builder, grp *ops.Group) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("%w: fused op %v panicked: %v", ErrInvalidGraph, grp, r)
		}
	}()
	n, err = fn(b, grp)
	if err == nil && (n < 0 || n > len(grp.Calls)) {
		return 0, fmt.Errorf("%w: fused op %v recorded %d of its %d ops", ErrInvalidGraph, grp, n, len(grp.Calls))
	}
	return n, err
}

// inputKey is what the shape of a recording depends on for input id: a
// tensor's live dims (nothing for a SymInt). It appends to dst[:0].
func (g *WebGPUGraph) inputKey(id int32, dst []int64) []int64 {
	if ts := g.tensors[id]; ts != nil {
		return append(dst[:0], ts.live...)
	}
	return dst[:0]
}

// symKey is what the values a recording's ops read depend on for input
// id: a SymInt's value, or the data of a tensor whose values an op reads
// on the host (select_as_symint). A change is taken care of by refresh
// (refresh.go) unless it changes the recording's structure. It appends to
// dst[:0].
func (g *WebGPUGraph) symKey(id int32, dst []int64) []int64 {
	dst = dst[:0]
	if g.tensors[id] == nil {
		v, _ := g.symInt(id)
		return append(dst, v)
	}
	in, ok := g.hostIn[id]
	if !ok || !g.hostRead[id] {
		return dst
	}
	dst = append(dst, int64(len(in.Data)))
	for k := 0; k+8 <= len(in.Data); k += 8 {
		dst = append(dst, int64(le64(in.Data[k:])))
	}
	if r := len(in.Data) % 8; r != 0 {
		var w [8]byte
		copy(w[:], in.Data[len(in.Data)-r:])
		dst = append(dst, int64(le64(w[:])))
	}
	return dst
}

// symInt returns the live value of an Int or SymInt value.
func (g *WebGPUGraph) symInt(id int32) (int64, error) {
	return ops.Values{G: g.graph, Sym: g.symValue}.Int(id)
}

// hasSymIntInputs reports whether any graph input is a SymInt or has its
// values read on the host: the load-time recording then only has
// placeholders.
func (g *WebGPUGraph) hasSymIntInputs() bool {
	for _, id := range g.inputs {
		if g.tensors[id] == nil || g.hostRead[id] {
			return true
		}
	}
	return false
}

// rerecord re-runs every op on the current live input shapes and SymInt
// values and rebuilds the dispatch records. Buffers stay; constants are not
// written again.
func (g *WebGPUGraph) rerecord(ctx context.Context) error {
	isInput := map[int32]bool{}
	for _, id := range g.inputs {
		isInput[id] = true
	}
	for id, ts := range g.tensors {
		if ts != nil && !isInput[int32(id)] {
			ts.setLive(ts.dims, ts.numel)
		}
	}
	for id := range g.sym {
		if !isInput[id] {
			delete(g.sym, id)
		}
	}
	g.replay = true
	defer func() { g.pend, g.arena = nil, nil }()
	if err := g.recordOps(ctx); err != nil {
		return err
	}
	if err := g.placeWeights(ctx); err != nil {
		return err
	}
	// finishDispatches reuses or releases the previous bind groups.
	g.records = g.records[:0]
	g.dispatchOps, g.dispatchKernels, g.dispatchChunks = g.dispatchOps[:0], g.dispatchKernels[:0], g.dispatchChunks[:0]
	if err := g.bindTransients(); err != nil {
		return err
	}
	if err := g.checkBindings(); err != nil {
		return err
	}
	if err := g.finishDispatches(); err != nil {
		return err
	}
	for _, o := range g.outputs {
		if o.read >= 0 {
			g.reads[o.read].Size = gpu.AlignedSize(uint64(g.tensors[o.id].liveBytes()))
		}
	}
	g.stats.NumDispatches = len(g.records)
	g.prog.Set(g.records, g.reads)
	g.rerecords++
	return nil
}

// DispatchInfo describes one recorded dispatch.
type DispatchInfo struct {
	Op     int    // chain index of the op that recorded it
	OpName string // that op's name
	Kernel string // the kernel variant
	Groups [3]uint32
	// Chunked is set for a dispatch that reads one chunk of a weight held
	// in chunks (graph/chunk.go), or copies the scratch output of one;
	// Chunk is that chunk's index (0 for every other dispatch).
	Chunked bool
	Chunk   int
}

// dispatchInfo returns record i's DispatchInfo.
func (g *WebGPUGraph) dispatchInfo(i int) DispatchInfo {
	r := g.records[i]
	c := g.dispatchChunks[i]
	return DispatchInfo{Op: g.dispatchOps[i], OpName: g.graph.Chain[g.dispatchOps[i]].Name, Kernel: g.dispatchKernels[i], Groups: [3]uint32{r.X, r.Y, r.Z},
		Chunked: c >= 0, Chunk: max(c, 0)}
}

// Dispatches lists the recorded dispatches in execution order.
func (g *WebGPUGraph) Dispatches() []DispatchInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]DispatchInfo, len(g.records))
	for i := range g.records {
		out[i] = g.dispatchInfo(i)
	}
	return out
}

// Rerecords counts how many times Execute re-recorded the graph because its
// live input shapes or SymInt inputs changed.
func (g *WebGPUGraph) Rerecords() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rerecords
}

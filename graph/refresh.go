package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/lower"
	"github.com/wgdelegate/wgdelegate/ops"
)

// A decoder's input_pos changes at every step, and with it every SymInt
// derived from it (input_pos + S), but usually nothing structural: the
// ops that read it (the rope table slice, the KV-cache update, the
// attention) keep their output shapes, kernels, bindings and workgroup
// grids, and only values inside their uniform params move (a slice
// start, a cache row offset, a key count). Re-recording the whole chain
// for that (every op, transient binding, bind group check) costs more
// than the step itself on small layers.
//
// So a recording remembers, per plan node, which SymInt values it read
// (through any Builder accessor) and whether it read input values on the
// host (select_as_symint). When only SymInt inputs or host-read input
// values change, refresh re-runs, in plan order, just the nodes whose
// reads changed: through the update functions their ops gave while they
// were recorded (ops.Builder.OnRefresh: the cache ops, the ropes and
// their tables, the SymInt ops), which re-read the values and record the
// same dispatches with new params, parsing nothing; a node one of whose
// ops gave none is recorded again. Either way with a Builder that checks
// the node decides everything exactly as it did — the same output shapes, the same dispatches (kernel,
// tensors, grid, params size), no constant written or weight packed
// anew; only the SymInts it sets may take new values — and
// collects the new params. If every re-run op matches, the params that
// differ are written into the uniform arena in place — the equivalent of the
// reference runtime's SymInt uniform buffers, rewritten when their value
// changes — and nothing else is touched. The first op that decides
// otherwise (a SymInt that sizes a tensor, picks a kernel variant or a
// grid; an op error such as input_pos past the cache) abandons the
// refresh, and Execute re-records everything, which also reports the
// error the usual way. The ops need no annotation: whether a SymInt only
// reaches values is found out, never declared, so it cannot be declared
// wrong. Replaying the SymInt ops this way gives what a full recording
// would only when every SymInt an op sets is set once, before any op
// reads it, and is no graph input; a recording where that fails
// (refreshable false) is always re-recorded in full.

// errRefresh stops a refresh: the op would record something else than
// the current recording holds.
var errRefresh = errors.New("graph: the recording changes structure")

// symRead is one SymInt value an op read while it was recorded.
type symRead struct {
	id int32
	v  int64
}

// refreshState is an opBuilder's state while its op is re-run by refresh.
type refreshState struct {
	next, end int          // the op's dispatches left to match, indices into lastPend
	patches   []paramPatch // params that differ from the arena's
}

// paramPatch is one dispatch's new uniform params.
type paramPatch struct {
	off  uint64
	data []byte
}

// symNow returns the value SymInt id has for the ops: the live one, or
// the serialized one when none was set.
func (g *WebGPUGraph) symNow(id int32) int64 {
	if v, ok := g.sym[id]; ok {
		return v
	}
	return int64(g.graph.Values[id].SymInt)
}

// symRead is the opBuilder's ops.Values hook for SymInt values: it notes
// that the op read id.
func (b *opBuilder) symRead(id int32) (int64, bool) {
	g := b.g
	v := g.symNow(id)
	if b.refresh == nil && !g.symSet[id] && !g.isInput(id) {
		g.symEarly[id] = true // read before any op set it (see SetInt)
	}
	if b.slot >= 0 && b.slot < len(g.opSyms) {
		reads := g.opSyms[b.slot]
		for _, r := range reads {
			if r.id == id {
				return v, true
			}
		}
		g.opSyms[b.slot] = append(reads, symRead{id, v})
	}
	return v, true
}

// isInput reports whether value id is a graph input.
func (g *WebGPUGraph) isInput(id int32) bool {
	return slices.Contains(g.inputs, id)
}

// symsMoved reports whether any SymInt read has another value now.
func (g *WebGPUGraph) symsMoved(reads []symRead) bool {
	for _, r := range reads {
		if g.symNow(r.id) != r.v {
			return true
		}
	}
	return false
}

// refresh brings the recording up to date with new SymInt values or
// host-read input values, the live input shapes being those it was
// recorded for (see above). It reports false when the graph must be
// re-recorded instead; an error only for a cancelled ctx.
func (g *WebGPUGraph) refresh(ctx context.Context) (bool, error) {
	chain := g.graph.Chain
	if !g.refreshable || len(g.opSyms) != len(chain) || len(g.opPend) != len(chain) || len(g.lastPend) != len(g.records) {
		return false, nil
	}
	g.replay = true // constants were written at load
	var patches []paramPatch
	for _, node := range g.lowered.Nodes {
		i := node.Index
		if !g.opHost[i] && !g.symsMoved(g.opSyms[i]) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		rs := &refreshState{next: g.opPend[i][0], end: g.opPend[i][1]}
		g.opSyms[i] = g.opSyms[i][:0]
		if err := g.refreshNode(ctx, node, rs); err != nil || rs.next != rs.end {
			return false, nil
		}
		patches = append(patches, rs.patches...)
		g.rerun++
	}
	// One write from the first patched block to the end of the last:
	// the arena is a few KiB, and each write is a call into the driver.
	if len(patches) > 0 {
		lo, hi := patches[0].off, patches[0].off
		for _, p := range patches {
			copy(g.lastArena[p.off:], p.data)
			lo, hi = min(lo, p.off), max(hi, p.off+uint64(len(p.data)))
		}
		if err := g.dev.Write(g.arenaBuf, lo, g.lastArena[lo:hi]); err != nil {
			return false, err
		}
	}
	g.refreshes++
	g.patched += len(patches)
	return true, nil
}

// nodeUpdate is an update function a unit of a node gave while it was
// recorded (ops.Builder.OnRefresh), with the chain index it records at.
type nodeUpdate struct {
	index int
	fn    func(ops.Builder) error
}

// refreshNode re-runs node for a refresh: through the update functions
// its units gave when every unit gave one (they re-read the SymInt values
// and record the same dispatches with new params, parsing nothing), else
// by recording it again.
func (g *WebGPUGraph) refreshNode(ctx context.Context, node lower.Node, rs *refreshState) error {
	i := node.Index
	ups := g.opUpdates[i]
	if len(ups) == 0 || len(ups) != g.opUnits[i] {
		return g.recordNode(ctx, node, i, rs)
	}
	for _, u := range ups {
		if err := safeUpdate(u.fn, g.builder(ctx, u.index, i, rs)); err != nil {
			return g.opError(u.index, err)
		}
	}
	g.updated++
	return nil
}

// safeUpdate is safeCall for an update function.
func safeUpdate(fn func(ops.Builder) error, b ops.Builder) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: update function panicked: %v", ErrInvalidGraph, r)
		}
	}()
	return fn(b)
}

// refreshDispatch is Dispatch during a refresh: the op's next dispatch of
// the recording must be this one; params that differ become a patch.
func (b *opBuilder) refreshDispatch(ids []int32, nOut int, params []byte, pd pendingDispatch) error {
	rs := b.refresh
	if rs.next >= rs.end {
		return errRefresh
	}
	old := b.g.lastPend[rs.next]
	rs.next++
	if old.kernel != pd.kernel || old.outputs != nOut || old.groups != pd.groups || old.paramSize != uint64(len(params)) ||
		!slices.Equal(old.tensors, ids) {
		return errRefresh
	}
	if len(params) == 0 {
		return nil
	}
	if uint64(len(b.g.lastArena)) < old.paramOffset+old.paramSize {
		return errRefresh
	}
	if cur := b.g.lastArena[old.paramOffset : old.paramOffset+old.paramSize]; !slices.Equal(cur, params) {
		rs.patches = append(rs.patches, paramPatch{off: old.paramOffset, data: append([]byte(nil), params...)})
	}
	return nil
}

// RecordStats counts how a graph's Executes kept its recording in step
// with their inputs.
type RecordStats struct {
	// Rerecords counts full re-recordings: new live input shapes, or new
	// SymInt values that change a shape, kernel or workgroup grid.
	Rerecords int
	// Refreshes counts Executes whose new SymInt (or host-read input)
	// values only changed uniform params, rewritten in place; Patched
	// sums the dispatches whose params they rewrote, Rerun the plan
	// nodes they re-ran (those whose SymInt reads moved), Updated those
	// of them re-run through their update functions (parsing nothing)
	// rather than recorded again.
	Refreshes, Patched, Rerun, Updated int
}

// RecordStats reports the graph's re-recordings and refreshes so far.
func (g *WebGPUGraph) RecordStats() RecordStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return RecordStats{Rerecords: g.rerecords, Refreshes: g.refreshes, Patched: g.patched, Rerun: g.rerun, Updated: g.updated}
}

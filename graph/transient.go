package graph

import (
	"fmt"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/memplan"
)

// bindTransients binds every transient tensor (one the exporter placed in a
// shared object) to a buffer, from the lifetimes the recording just made
// gives them: the first and last dispatch that binds each (from before the
// first dispatch for a graph input, to after the last for a graph output).
// The exporter's shared objects are the pool (memplan.Place): when no
// record-time rewrite changed who writes what, every tensor stays in its
// own object; when fusion made a kernel read one tensor and write another
// that the exporter let share a buffer, one of them moves to an object that
// is free for its whole lifetime. Objects beyond the pool are created only
// when the pool cannot hold the new lifetimes (never for the chains the
// project fuses), and are kept for later recordings. It runs after every
// recording, before the bind groups are made.
func (g *WebGPUGraph) bindTransients() error {
	n := len(g.pend)
	idx := map[int32]int{}
	var uses []memplan.Use
	for id, ts := range g.tensors {
		if _, aliased := g.aliases[int32(id)]; ts == nil || !ts.shared || aliased {
			continue
		}
		idx[int32(id)] = len(uses)
		uses = append(uses, memplan.Use{ID: int32(id), Bytes: memplan.AllocSize(ts.nbytes), Object: ts.memObj})
	}
	// A view that shares a transient root's buffer lives in the root's
	// object: its uses extend the root's lifetime.
	members := g.aliasMembers()
	for root, ms := range members {
		k, ok := idx[root]
		if !ok {
			continue
		}
		for _, m := range ms {
			idx[m] = k
			uses[k].Bytes = max(uses[k].Bytes, memplan.AllocSize(g.tensors[m].nbytes))
		}
	}
	touch := func(id int32, step int) {
		k, ok := idx[id]
		if !ok {
			return
		}
		u := &uses[k]
		if !u.Used {
			u.Used, u.First, u.Last = true, step, step
			return
		}
		u.First, u.Last = min(u.First, step), max(u.Last, step)
	}
	for _, id := range g.inputs {
		touch(id, -1)
	}
	for i, pd := range g.pend {
		for _, id := range pd.tensors {
			touch(id, i)
		}
	}
	for _, id := range g.graph.OutputIDs {
		touch(int32(id), n)
	}
	pool := make(map[int32]int64, len(g.shared))
	for obj, b := range g.shared {
		pool[obj] = int64(b.Size())
	}
	bind, err := memplan.Place(uses, pool)
	if err != nil {
		return fmt.Errorf("graph: %w: %w", ErrInvalidGraph, err)
	}
	extra := bind.ExtraBytes()
	if extra > 0 {
		if need := g.planBytes + g.stats.AddedSharedBytes + extra; need > g.memLimit {
			return fmt.Errorf("graph: %w: the tensors' lifetimes need %d more bytes of shared buffers, over the %d-byte memory limit", ErrUnsupported, extra, g.memLimit)
		}
		g.log.Debug("graph: shared objects added to hold the recorded lifetimes", "objects", len(bind.Extra), "bytes", extra)
	}
	for obj, size := range bind.Extra {
		b, err := g.newBuffer(gpu.Storage, uint64(size), fmt.Sprintf("shared %d (added)", obj))
		if err != nil {
			return err
		}
		g.shared[obj] = b
	}
	for _, u := range uses {
		g.tensors[u.ID].buf = g.shared[bind.Object[u.ID]]
	}
	for root, ms := range members {
		for _, m := range ms {
			g.tensors[m].buf = g.tensors[root].buf
		}
	}
	for _, o := range g.outputs {
		if o.read >= 0 {
			g.reads[o.read].Src = g.tensors[o.id].buf
		}
	}
	// Stats of a load are computed later, from the plan and these.
	g.stats.MovedTensors = bind.Moved
	g.stats.AddedSharedObjects += len(bind.Extra)
	g.stats.AddedSharedBytes += extra
	g.stats.NumSharedObjects += len(bind.Extra)
	g.stats.SharedBufferBytes += extra
	g.stats.TensorBufferBytes += extra
	return nil
}

// checkBindings verifies, for every recorded dispatch, that no buffer bound
// writable is bound twice: whatever the memory plan and the record-time
// rewrites, a kernel never reads a buffer it writes through another
// binding. bindTransients guarantees it; this is the last line of defence
// against a silent wrong answer.
func (g *WebGPUGraph) checkBindings() error {
	for i, pd := range g.pend {
		nin := len(pd.tensors) - pd.outputs
		for w := nin; w < len(pd.tensors); w++ {
			for j, id := range pd.tensors {
				if j != w && g.tensors[id].buf == g.tensors[pd.tensors[w]].buf {
					return fmt.Errorf("graph: %w: dispatch %d (op %d, %s) binds values %d and %d to one buffer, one writable",
						ErrInvalidGraph, i, pd.op, pd.kernel.Name, id, pd.tensors[w])
				}
			}
		}
	}
	return nil
}

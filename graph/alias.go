package graph

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
	"github.com/wgdelegate/wgdelegate/ops"
)

// viewAlias records that a view-like op's output shares another value's
// buffer for the current recording (ops.Aliaser).
type viewAlias struct {
	root int32 // the value whose buffer it shares (never itself an alias)
	at   int   // the chain index of the view op
	// What the output has on its own, put back before the next recording.
	ownShared bool
	ownBuf    *gpu.Buffer
}

var _ ops.Aliaser = (*opBuilder)(nil)

// Alias implements ops.Aliaser. Tensors are flat and contiguous, so a
// view_copy (squeeze, unsqueeze, clone, alias_copy) output holds exactly its
// input's bytes; sharing the buffer saves the copy dispatch. It is safe when
// neither value can change once out is defined:
//   - the root (the input, or what the input itself aliases) is not a
//     persistent buffer (a prepacked tensor, which ops update in place
//     across Execute calls) nor a constant deferred to its prepack;
//   - no op later in the chain writes the root, out, or another alias of
//     the root in place (ops.WritesArgs: the KV-cache updates);
//   - out is an ordinary op output (not a constant or prepacked buffer)
//     whose serialized size the root's buffer holds.
//
// The root is otherwise written only by the op that produces it, before
// out is defined, since values are single-assignment; Dispatch checks that
// no later dispatch writes an aliased value. A transient (exporter-planned)
// root and its aliases are bound to one buffer for their joint lifetime by
// bindTransients; a dedicated root's buffer is shared at once.
func (b *opBuilder) Alias(out, in int32) bool {
	g := b.g
	root := in
	if a, ok := g.aliases[in]; ok {
		root = a.root
	}
	if out == root || out < 0 || int(out) >= len(g.tensors) || root < 0 || int(root) >= len(g.tensors) {
		return false
	}
	if a, ok := g.aliases[out]; ok {
		// The op runs again on the same recording (a refresh for new
		// SymInt values): the alias stands.
		return a.root == root
	}
	rt, ot := g.tensors[root], g.tensors[out]
	switch {
	case rt == nil || ot == nil:
		return false
	case rt.materialized || rt.deferred || (!rt.shared && rt.buf == nil):
		return false
	case ot.constant || ot.materialized || ot.deferred || (!ot.shared && ot.buf == nil):
		return false
	case ot.nbytes > rt.nbytes:
		return false
	}
	if g.writtenLater(root, b.index) || g.writtenLater(out, b.index) {
		return false
	}
	for m, a := range g.aliases {
		if a.root == root && g.writtenLater(m, b.index) {
			return false
		}
	}
	g.aliases[out] = viewAlias{root: root, at: b.index, ownShared: ot.shared, ownBuf: ot.buf}
	ot.shared = rt.shared
	ot.buf = nil
	if !rt.shared {
		ot.buf = rt.buf
	}
	return true
}

// writtenLater reports whether an op after chain index after writes value
// id in place.
func (g *WebGPUGraph) writtenLater(id int32, after int) bool {
	for _, i := range g.consumers[id] {
		if i <= after {
			continue
		}
		op := g.graph.Chain[i]
		for _, a := range ops.WritesArgs(op.Name) {
			if a < len(op.Args) && op.Args[a] == id {
				return true
			}
		}
	}
	return false
}

// resetAliases gives every aliased output back its own buffer state before
// a recording, which decides the aliases anew.
func (g *WebGPUGraph) resetAliases() {
	for m, a := range g.aliases {
		ts := g.tensors[m]
		ts.shared, ts.buf = a.ownShared, a.ownBuf
	}
	g.aliases = map[int32]viewAlias{}
}

// checkAliasWrite is Dispatch's guard: a dispatch of op index must not
// write a value an earlier view aliases (its root, after the view op, or
// one of its aliases). Alias refuses the cases it can foresee; an op that
// writes an argument in place without declaring it (ops.Op.Writes) would
// end here instead of in a wrong answer. (A refresh re-runs ops against a
// finished recording, so the root's own producer runs with the alias in
// place.)
func (g *WebGPUGraph) checkAliasWrite(index int, outputs []int32) error {
	for _, id := range outputs {
		if _, ok := g.aliases[id]; ok {
			return fmt.Errorf("%w: a dispatch writes value %d, which shares the buffer of a view's input", ErrInvalidGraph, id)
		}
		for m, a := range g.aliases {
			if a.root == id && index > a.at {
				return fmt.Errorf("%w: a dispatch writes value %d after view value %d was made to share its buffer", ErrInvalidGraph, id, m)
			}
		}
	}
	return nil
}

// aliasMembers lists the aliases of each root, sorted, for bindTransients.
func (g *WebGPUGraph) aliasMembers() map[int32][]int32 {
	groups := map[int32][]int32{}
	for m, a := range g.aliases {
		groups[a.root] = append(groups[a.root], m)
	}
	for _, ms := range groups {
		slices.Sort(ms)
	}
	return groups
}

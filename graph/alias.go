package graph

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

// viewAlias records that a view op's output shares another value's buffer
// for the current recording (alias).
type viewAlias struct {
	root int32 // the value whose buffer it shares (never itself an alias)
	at   int   // the chain index of the view op
	// What the output has on its own, put back before the next recording.
	ownShared bool
	ownBuf    *gpu.Buffer
}

// alias makes view op at's output out share the buffer of its input in
// (or of in's root, when in is itself a view's output) for the current
// recording, instead of a copy: package lower's views pass planned the
// node where that is safe whatever the recording, and the op's View said
// the bytes are the input's at the live shapes. In a refresh the alias
// made when the op was recorded stands, and one it did not make is a
// change of structure.
func (g *WebGPUGraph) alias(out, in int32, at int, refresh bool) error {
	root := in
	if a, ok := g.aliases[in]; ok {
		root = a.root
	}
	if a, ok := g.aliases[out]; ok && a.root == root {
		return nil
	}
	if refresh {
		return errRefresh
	}
	if out == root || out < 0 || int(out) >= len(g.tensors) || root < 0 || int(root) >= len(g.tensors) ||
		g.tensors[out] == nil || g.tensors[root] == nil {
		return fmt.Errorf("%w: view of value %d as value %d", ErrInvalidGraph, in, out)
	}
	rt, ot := g.tensors[root], g.tensors[out]
	g.aliases[out] = viewAlias{root: root, at: at, ownShared: ot.shared, ownBuf: ot.buf}
	ot.shared = rt.shared
	ot.buf = nil
	if !rt.shared {
		ot.buf = rt.buf
	}
	return nil
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
// one of its aliases). The views pass refuses the cases it can foresee;
// an op that writes an argument in place without declaring it
// (ops.Op.Writes) would end here instead of in a wrong answer. (A refresh re-runs ops against a
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

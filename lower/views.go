package lower

import "github.com/wgdelegate/wgdelegate/ops"

// The views pass: a view op (ops.Op.View: view_copy, squeeze, unsqueeze,
// clone, alias_copy, _clone_dim_order, select_copy) becomes a KindView
// node, whose output the graph gives its input's buffer instead of
// recording the copy (when the op's View says the bytes are the input's
// at the live shapes), where that is safe whatever the recording: tensors
// are flat and contiguous, so the output holds exactly the input's bytes
// as long as neither can change once the output is defined:
//
//   - the root (the input, or the root of the view that made it) and the
//     input are no persistent buffer (an et_vk.prepack output, which ops
//     update in place across Execute calls) nor a value without a buffer
//     of its own (deferred);
//   - no op after the view writes the root, the input or the output in
//     place (ops.WritesArgs: the KV-cache updates);
//   - the output is an ordinary op output (no constant, prepacked or
//     deferred value) whose serialized size the root's and the input's
//     hold.
//
// The root is otherwise written only by the op that produces it, before
// the output is defined, since values are single-assignment. A transient
// root and its views are bound to one buffer for their joint lifetime by
// the graph (bindTransients); a dedicated root's buffer is shared at
// once. Off with NoViewAliasing.

// views is the views pass.
func views(p *planner) {
	if p.in.Options.NoViewAliasing {
		return
	}
	roots := map[int32]int32{} // a planned view's output -> its root
	for _, i := range p.region {
		op := p.g.Chain[i]
		if !p.free[i] || ops.ViewOf(op.Name) == nil || len(op.Args) < 2 {
			continue
		}
		in, out := op.Args[0], op.Args[len(op.Args)-1]
		root := in
		if r, ok := roots[in]; ok {
			root = r
		}
		ot := p.tensor(out)
		if out == root || out == in || ot == nil || ot.Constant || ot.Prepacked || ot.Deferred || p.writtenAfter(out, i) {
			continue
		}
		ok := true
		for _, id := range []int32{in, root} {
			t := p.tensor(id)
			if t == nil || t.Prepacked || t.Deferred || ot.Bytes > t.Bytes || p.writtenAfter(id, i) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		roots[out] = root
		p.free[i] = false
		p.groups[i] = &Node{Kind: KindView, Index: i, Ops: []int{i}}
	}
}

// writtenAfter reports whether an op after op at writes id in place.
func (p *planner) writtenAfter(id int32, at int) bool {
	for _, j := range p.uses(id, at) {
		op := p.g.Chain[j]
		for _, w := range ops.WritesArgs(op.Name) {
			if w < len(op.Args) && op.Args[w] == id {
				return true
			}
		}
	}
	return false
}

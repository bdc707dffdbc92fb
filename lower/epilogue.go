package lower

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The linear_epilogue pass (ops/fuse_epilogue.go records what it makes):
// a linear-family op whose kernel applies an epilogue (ops.TakesEpilogue),
// reading no weight held in chunks, becomes one FusedLinearEpilogue group
// with what follows its output:
//
//   - SiLU as exported, sigmoid(x) and mul(x, sigmoid) the output's only
//     two readers, or else an activation the kernel applies
//     (ops.EpilogueActivations) that is the output's sole reader; a
//     single activation is fused even with NoElementwiseFusion;
//   - then, unless NoElementwiseFusion, an aten.add.Tensor (alpha 1) or
//     aten.mul.Tensor that is the sole reader of what came before, whose
//     other operand is a float32 tensor of the output's serialized shape
//     computed before the linear: a residual add, SwiGLU's gate·up.
//
// Guarded (the activation's arguments, the operand's live shape, a kernel
// that takes epilogues); the fallback is what the later passes make of
// the members.

// linearEpilogue is the linear_epilogue pass.
func linearEpilogue(p *planner) {
	fusion := !p.in.Options.NoElementwiseFusion
	for _, i := range p.region {
		op := p.g.Chain[i]
		if !p.free[i] || !ops.TakesEpilogue(op.Name) || p.readsChunks(i) {
			continue
		}
		out := p.out(i)
		if !p.isF32(out) {
			continue
		}
		members := []int{i}
		var act, gate, res int
		cur := out
		if s, m, silu, ok := p.silu(out, i); ok && fusion {
			members, act, gate, cur = append(members, s, m), 1, 2, silu
		} else if j, ok := p.soleUse(out, i); ok && p.free[j] && p.activation(j, out) {
			members, act, cur = append(members, j), 1, p.out(j)
		}
		if fusion {
			last := members[len(members)-1]
			if r, other, ok := p.residual(cur, last, out); ok {
				with := append(slices.Clone(members), r)
				if slices.IsSorted(with) && p.legal(with, []int32{other}, map[int32]int{p.out(r): r}) {
					members, res, cur = with, len(members), p.out(r)
				}
			}
		}
		if len(members) == 1 || !slices.IsSorted(members) || !p.legal(members, nil, map[int32]int{cur: members[len(members)-1]}) {
			continue
		}
		p.fuse(ops.FusedLinearEpilogue, members, true, func(g *ops.Group) {
			g.Act, g.Gate, g.Res = act, gate, res
		})
	}
}

// readsChunks reports whether op i reads a weight held in chunks (a linear
// then runs once per chunk, without an epilogue).
func (p *planner) readsChunks(i int) bool {
	for _, a := range p.g.Chain[i].Args {
		if t := p.tensor(a); t != nil && t.Chunked {
			return true
		}
	}
	return false
}

// silu finds SiLU as exported on out (written by op at): sigmoid(out) and
// mul(out, sigmoid) (either order) its only two readers, neither out nor
// the sigmoid a graph output, the sigmoid read by the mul alone. It
// returns the two ops and the mul's output.
func (p *planner) silu(out int32, at int) (sig, mul int, silu int32, ok bool) {
	cs := p.uses(out, at)
	if p.in.Uses.Outputs[out] || len(cs) != 2 || !p.free[cs[0]] || !p.free[cs[1]] {
		return 0, 0, 0, false
	}
	a1, a2 := p.g.Chain[cs[0]].Args, p.g.Chain[cs[1]].Args
	if p.g.Chain[cs[0]].Name != sigmoidOp || len(a1) != 2 || a1[0] != out || p.g.Chain[cs[1]].Name != mulOp || len(a2) != 3 {
		return 0, 0, 0, false
	}
	s, g := a1[1], a2[2]
	if !(a2[0] == out && a2[1] == s) && !(a2[0] == s && a2[1] == out) {
		return 0, 0, 0, false
	}
	if s == out || g == out || g == s || p.in.Uses.Outputs[s] || len(p.uses(s, cs[0])) != 1 || !p.isF32(s) || !p.isF32(g) {
		return 0, 0, 0, false
	}
	return cs[0], cs[1], g, true
}

// activation reports whether op j applies an activation the kernel can
// take to out, writing another float32 tensor.
func (p *planner) activation(j int, out int32) bool {
	op := p.g.Chain[j]
	n, ok := ops.EpilogueActivations[op.Name]
	return ok && len(op.Args) == n && op.Args[0] == out && p.out(j) != out && p.isF32(p.out(j))
}

// residual finds the add (alpha 1) or mul that is the sole reader of cur
// (written by op at) with another float32 operand of out's serialized
// shape (legal then requires it computed before the linear); it returns
// the op and that operand.
func (p *planner) residual(cur int32, at int, out int32) (int, int32, bool) {
	r, ok := p.soleUse(cur, at)
	if !ok || !p.free[r] {
		return 0, 0, false
	}
	a := p.g.Chain[r].Args
	switch {
	case p.g.Chain[r].Name == "aten.add.Tensor" && len(a) == 4:
		if !p.isOne(a[2]) {
			return 0, 0, false
		}
	case p.g.Chain[r].Name == mulOp && len(a) == 3:
	default:
		return 0, 0, false
	}
	other, ok := otherOperand(a, cur)
	res := a[len(a)-1]
	if !ok || !p.isF32(other) || !p.sameDims(other, out) || res == cur || res == other || !p.isF32(res) {
		return 0, 0, false
	}
	return r, other, true
}

// isOne reports whether value id is the Int 1 or the Double 1.
func (p *planner) isOne(id int32) bool {
	v := p.value(id)
	return v != nil && ((v.Kind == serialization.KindInt && v.Int == 1) || (v.Kind == serialization.KindDouble && v.Double == 1))
}

// sameDims reports whether tensors x and y have one serialized shape.
func (p *planner) sameDims(x, y int32) bool {
	vx, vy := p.value(x), p.value(y)
	return vx != nil && vy != nil && vx.Tensor != nil && vy.Tensor != nil && slices.Equal(vx.Tensor.Dims, vy.Tensor.Dims)
}

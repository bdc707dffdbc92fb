package lower

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
)

// The norm_linears pass (ops/fuse_linear.go records what it makes): an
// et_vk.rms_norm.default whose output is no graph output and is read only
// by linears without bias (aten.linear.default, et_vk.linear_q4gsw.default)
// whose weights are not held in chunks becomes one FusedNormLinears group
// with them; where two of the linears are SwiGLU's gate and up as a llama
// export writes it (sigmoid(g), mul(g, sigmoid), then mul(that, up), each
// intermediate read only there), the sigmoid and the muls join the group.
// Guarded (one row, every linear on its family's one-row kernel, one
// weight format); its fallback is what the later passes make of the
// norm and the linears.

// normLinears is the norm_linears pass.
func normLinears(p *planner) {
	if p.in.Options.NoElementwiseFusion {
		return
	}
	for _, i := range p.region {
		args := p.g.Chain[i].Args
		if !p.free[i] || p.g.Chain[i].Name != rmsNormOp || len(args) != 4 {
			continue
		}
		y := args[3]
		cs := p.uses(y, i)
		if p.in.Uses.Outputs[y] || len(cs) == 0 {
			continue
		}
		reads := []int32{args[0]}
		if !p.isNull(args[1]) {
			reads = append(reads, args[1])
		}
		writes := map[int32]int{}
		var lins []int
		for _, c := range cs {
			w, ok := p.normLinear(c, y)
			if !ok || slices.Contains(lins, c) {
				lins = nil
				break
			}
			lins = append(lins, c)
			reads = append(reads, w...)
			writes[p.out(c)] = c
		}
		if len(lins) == 0 {
			continue
		}
		members := append([]int{i}, lins...)
		pair := p.swiGLU(lins)
		if pair != nil {
			delete(writes, p.out(pair[0]))
			delete(writes, p.out(pair[1]))
			writes[p.out(pair[4])] = pair[4]
			members = append(members, pair[2:]...)
		}
		slices.Sort(members)
		if !p.legal(members, reads, writes) {
			continue
		}
		p.fuse(ops.FusedNormLinears, members, true, func(g *ops.Group) {
			at := func(c int) int { return slices.Index(members, c) }
			for _, c := range lins {
				if pair == nil || (c != pair[0] && c != pair[1]) {
					g.Linears = append(g.Linears, at(c))
				}
			}
			for _, c := range pair {
				g.SwiGLU = append(g.SwiGLU, at(c))
			}
		})
	}
}

// normLinear reports whether op c reads the norm's output y as the input
// of a linear without bias whose weights have buffers of their own, and
// returns the weights (and scales) it reads.
func (p *planner) normLinear(c int, y int32) ([]int32, bool) {
	a := p.g.Chain[c].Args
	if !p.free[c] {
		return nil, false
	}
	var w []int32
	switch p.g.Chain[c].Name {
	case linearOp:
		if len(a) != 4 || a[0] != y || a[1] == y || !p.isNull(a[2]) || a[3] == y {
			return nil, false
		}
		w = a[1:2]
	case q4Op:
		if len(a) != 6 || a[0] != y || a[1] == y || a[2] == y || !p.isNull(a[4]) || a[5] == y {
			return nil, false
		}
		w = a[1:3]
	default:
		return nil, false
	}
	for _, id := range w {
		if t := p.tensor(id); t == nil || t.Chunked {
			return nil, false
		}
	}
	return w, true
}

// swiGLU finds among lins (chain indices of linears) a gate g and an up u
// with g·sigmoid(g)·u after them as the export writes SwiGLU: sigmoid(g)
// and mul(g, sigmoid) (SiLU as silu matches it), then mul(that, u)
// (either order), each intermediate read only there and no graph output. It returns [g, u,
// sigmoid, mul, final mul], or nil.
func (p *planner) swiGLU(lins []int) []int {
	for _, gi := range lins {
		g := p.out(gi)
		sig, mul, silu, ok := p.silu(g, gi)
		if !ok {
			continue
		}
		s := p.g.Chain[sig].Args[1]
		mi, ok := p.soleUse(silu, mul)
		if !ok || !p.free[mi] || p.g.Chain[mi].Name != mulOp || len(p.g.Chain[mi].Args) != 3 {
			continue
		}
		ma := p.g.Chain[mi].Args
		up, ok := otherOperand(ma, silu)
		if !ok {
			continue
		}
		for _, ui := range lins {
			if ui == gi || p.out(ui) != up {
				continue
			}
			if ci, ok := p.soleUse(up, ui); !ok || ci != mi {
				continue
			}
			if out := ma[2]; out == up || out == g || out == s || out == silu {
				continue
			}
			return []int{gi, ui, sig, mul, mi}
		}
	}
	return nil
}

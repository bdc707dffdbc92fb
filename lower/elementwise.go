package lower

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
)

// The elementwise pass (ops/fuse.go records what it makes): a run of
// consecutive ops the fused elementwise kernel computes
// (ops.FusableElementwise: float32 unary ops, and binary ops with a
// tensor or Scalar other), each reading the one before's output as that
// output's sole reader (no graph output), every tensor float32, becomes
// one FusedElementwise group. The kernel fuses the longest prefix that fits
// the live shapes (each operand broadcasting to the chain's shape without
// growing it, the kernel's bounds on steps and operands) and the graph
// offers it the rest again, so a group has no fallback.

// elementwise is the elementwise pass.
func elementwise(p *planner) {
	if p.in.Options.NoElementwiseFusion {
		return
	}
	for _, h := range p.region {
		if !p.free[h] {
			continue
		}
		reads, ok := p.ewStep(h, -1)
		if !ok {
			continue
		}
		members := []int{h}
		operands := [][]int32{reads} // the tensors read up to each member
		cur := p.out(h)
		for {
			last := members[len(members)-1]
			j, ok := p.soleUse(cur, last)
			if !ok || j != last+1 || !p.free[j] {
				break
			}
			r, ok := p.ewStep(j, cur)
			if !ok {
				break
			}
			members = append(members, j)
			operands = append(operands, append(slices.Clone(operands[len(operands)-1]), r...))
			cur = p.out(j)
		}
		if len(members) < 2 {
			continue
		}
		last := members[len(members)-1]
		if !p.legal(members, operands[len(members)-1], map[int32]int{p.out(last): last}) {
			continue
		}
		p.fuse(ops.FusedElementwise, members, false, nil)
	}
}

// ewStep reports whether the fused elementwise kernel computes op j as a
// step on the chain value cur (-1 for the chain's first op, which reads
// every tensor argument as an operand), and returns the tensors it reads
// besides cur.
func (p *planner) ewStep(j int, cur int32) ([]int32, bool) {
	op := p.g.Chain[j]
	e, ok := ops.FusableElementwise(op.Name)
	if !ok || len(op.Args) != e.Args {
		return nil, false
	}
	out := p.out(j)
	if t := p.tensor(out); t == nil || !p.isF32(out) || t.Constant {
		return nil, false
	}
	var reads []int32
	chained := 0
	for _, k := range e.Tensors {
		a := op.Args[k]
		if !p.isF32(a) {
			return nil, false
		}
		if a == cur {
			chained++
			continue
		}
		reads = append(reads, a)
	}
	if cur >= 0 && (chained != 1 || op.Args[0] != cur && len(e.Tensors) == 1) {
		return nil, false
	}
	return reads, true
}

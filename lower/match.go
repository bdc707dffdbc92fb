package lower

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// The one matcher and the one legality check every pass shares.
//
// soleUse is the matcher's step: a value read by exactly one argument of
// one op and not a graph output, so that a fused kernel may keep it in
// registers (or workgroup memory) instead of writing it.
//
// legal is the check: a group records all its members at its first
// member's place, so nothing that runs between its members may write a
// tensor the group reads, or touch a tensor the group writes before the
// member that writes it; and a tensor it reads must hold its value
// before the group runs. Under the exporter's greedy memory plans two
// transient tensors may share an object; the graph binds transients after
// recording from the lifetimes the recorded dispatches give them
// (memplan.Place), so a fused kernel never reads a buffer it writes
// through another name, and only tensors with their own buffers, by id,
// need checking here.

// The ops the passes match by name.
const (
	rmsNormOp = "et_vk.rms_norm.default"
	linearOp  = "aten.linear.default"
	q4Op      = "et_vk.linear_q4gsw.default"
	sigmoidOp = "aten.sigmoid.default"
	mulOp     = "aten.mul.Tensor"
	ropeOp    = "et_vk.apply_rotary_emb.default"
	sdpaOp    = "sdpa_with_kv_cache.default"
	sliceOp   = "aten.slice_copy.Tensor"
)

// otherOperand returns the operand of binary args (self, other, ...) that
// is not cur, when exactly one of the two is cur.
func otherOperand(args []int32, cur int32) (int32, bool) {
	switch {
	case args[0] == cur && args[1] != cur:
		return args[1], true
	case args[1] == cur && args[0] != cur:
		return args[0], true
	}
	return 0, false
}

// out returns chain op i's output (its last argument), or -1.
func (p *planner) out(i int) int32 {
	args := p.g.Chain[i].Args
	if len(args) == 0 {
		return -1
	}
	return args[len(args)-1]
}

// tensor returns the facts of tensor id, or nil when id is no tensor.
func (p *planner) tensor(id int32) *Tensor {
	if id < 0 || int(id) >= len(p.in.Tensors) {
		return nil
	}
	return p.in.Tensors[id]
}

// isF32 reports whether id is a float32 tensor on the device.
func (p *planner) isF32(id int32) bool {
	t := p.tensor(id)
	return t != nil && t.DType == serialization.Float32
}

// value returns value id, or nil when out of range.
func (p *planner) value(id int32) *serialization.Value {
	if id < 0 || int(id) >= len(p.g.Values) {
		return nil
	}
	return &p.g.Values[id]
}

// intValue returns the Int value id holds (not a SymInt: a pass decides
// on what cannot change).
func (p *planner) intValue(id int32) (int64, bool) {
	v := p.value(id)
	if v == nil || v.Kind != serialization.KindInt {
		return 0, false
	}
	return v.Int, true
}

// isNull reports whether value id is Null.
func (p *planner) isNull(id int32) bool {
	v := p.value(id)
	return v != nil && v.Kind == serialization.KindNull
}

// members returns the ids of ValueList id, or nil.
func (p *planner) members(id int32) []int32 {
	if v := p.value(id); v != nil && v.Kind == serialization.KindValueList {
		return v.IDs
	}
	return nil
}

// uses returns the chain indices of the ops that read id after op after,
// once per argument that reads it.
func (p *planner) uses(id int32, after int) []int {
	var out []int
	for _, i := range p.in.Uses.Consumers[id] {
		if i > after {
			out = append(out, i)
		}
	}
	return out
}

// soleUse returns the one op that reads id (produced by op at), when one
// argument of one op after at reads it and it is no graph output.
func (p *planner) soleUse(id int32, at int) (int, bool) {
	if p.in.Uses.Outputs[id] {
		return 0, false
	}
	us := p.uses(id, at)
	if len(us) != 1 {
		return 0, false
	}
	return us[0], true
}

// definedBefore reports whether id holds its value before op at runs: no
// op writes it (an input or a constant) or an earlier one does.
func (p *planner) definedBefore(id int32, at int) bool {
	i, written := p.in.Uses.Producers[id]
	return !written || i < at
}

// touches lists the tensors op j reads or writes: its arguments,
// ValueList members included.
func (p *planner) touches(j int) []int32 {
	var ids []int32
	for _, a := range p.g.Chain[j].Args {
		ids = append(ids, a)
		ids = append(ids, p.members(a)...)
	}
	return ids
}

// writes lists the tensors op j writes: its output (or the members of its
// output ValueList) and the arguments it updates in place (ops.WritesArgs).
func (p *planner) writes(j int) []int32 {
	op := p.g.Chain[j]
	if len(op.Args) == 0 {
		return nil
	}
	o := op.Args[len(op.Args)-1]
	ids := append([]int32{o}, p.members(o)...)
	for _, w := range ops.WritesArgs(op.Name) {
		if w < len(op.Args)-1 {
			ids = append(ids, op.Args[w])
		}
	}
	return ids
}

// legal reports whether the group of members (ascending chain indices)
// may record at its first member (see above). reads are the tensors its
// kernels read that no member writes; writes maps each tensor its kernels
// write to the member (chain index) that writes it unfused.
func (p *planner) legal(members []int, reads []int32, writes map[int32]int) bool {
	first, last := members[0], members[len(members)-1]
	for _, r := range reads {
		if _, w := writes[r]; w || !p.definedBefore(r, first) {
			return false
		}
	}
	for j := first + 1; j < last; j++ {
		if slices.Contains(members, j) {
			continue
		}
		for _, w := range p.writes(j) {
			if slices.Contains(reads, w) {
				return false
			}
		}
		for _, t := range p.touches(j) {
			if at, ok := writes[t]; ok && j < at {
				return false
			}
		}
	}
	return true
}

package lower

import (
	"slices"

	"github.com/wgdelegate/wgdelegate/ops"
)

// The rope passes (ops/fuse_rope.go records what they make).
//
// rope_cache: an et_vk.apply_rotary_emb.default whose rotated k is read
// only by the sdpa_with_kv_cache.default that takes its rotated q, with a
// v computed before the rope, becomes one FusedRopeCache group of the
// two, guarded (half caches, more than one batch, an attention the op
// would reject); its fallback is the rope as rope_tables makes it, then
// the attention.
//
// rope_tables: where every reader of a slice of the cos or sin table
// (aten.slice_copy.Tensor, rows [start, end) along dim 0 of a 2-D float32
// table, step 1, no graph output) is a llama rope whose two tables are
// such slices over the same start and end, the slices become
// FusedTableSlice nodes (no copy) and the ropes FusedRopeTables nodes
// reading the whole tables from row start.

// ropeCache is the rope_cache pass.
func ropeCache(p *planner) {
	if p.in.Options.NoElementwiseFusion {
		return
	}
	for _, i := range p.region {
		op := p.g.Chain[i]
		if !p.free[i] || op.Name != ropeOp || len(op.Args) != 5 {
			continue
		}
		outs := p.members(op.Args[4])
		if len(outs) != 2 {
			continue
		}
		q, k := outs[0], outs[1]
		j, ok := p.soleUse(k, i)
		if !ok || !p.free[j] {
			continue
		}
		s := p.g.Chain[j].Args
		if p.g.Chain[j].Name != sdpaOp || len(s) != 12 || s[0] != q || s[1] != k {
			continue
		}
		v := s[2]
		if v == q || v == k || s[3] == s[4] {
			continue
		}
		t, direct := p.ropeTables(i)
		reads := []int32{op.Args[0], op.Args[1], op.Args[2], op.Args[3], v}
		if direct {
			reads[2], reads[3] = t.Cos, t.Sin
		}
		writes := map[int32]int{q: i, s[3]: j, s[4]: j, s[11]: j}
		if len(writes) != 4 || !p.legal([]int{i, j}, reads, writes) {
			continue
		}
		p.fuse(ops.FusedRopeCache, []int{i, j}, true, func(g *ops.Group) {
			if direct {
				g.Tables = &t
			}
		})
	}
}

// ropeTablesPass is the rope_tables pass.
func ropeTablesPass(p *planner) {
	if p.in.Options.NoElementwiseFusion {
		return
	}
	for _, i := range p.region {
		if !p.free[i] {
			continue
		}
		switch p.g.Chain[i].Name {
		case ropeOp:
			if t, ok := p.ropeTables(i); ok {
				p.fuse(ops.FusedRopeTables, []int{i}, false, func(g *ops.Group) { g.Tables = &t })
			}
		case sliceOp:
			if t, ok := p.skippedSlice(i); ok {
				p.fuse(ops.FusedTableSlice, []int{i}, false, func(g *ops.Group) { g.Tables = &t })
			}
		}
	}
}

// tableSlice returns the args of the slice_copy that writes id, when it
// takes rows [start, end) along dim 0 of a 2-D float32 table (step 1),
// its output is no graph output, and every reader of it reads it as a
// llama rope's table only.
func (p *planner) tableSlice(id int32) ([]int32, bool) {
	i, ok := p.in.Uses.Producers[id]
	if !ok || p.in.Uses.Outputs[id] {
		return nil, false
	}
	s := p.g.Chain[i].Args
	if p.g.Chain[i].Name != sliceOp || len(s) != 6 || s[5] != id {
		return nil, false
	}
	if dim, ok := p.intValue(s[1]); !ok || dim != 0 {
		return nil, false
	}
	if step, ok := p.intValue(s[4]); !p.isNull(s[4]) && (!ok || step != 1) {
		return nil, false
	}
	src := p.value(s[0])
	if !p.isF32(s[0]) || src == nil || len(src.Tensor.Dims) != 2 || p.isNull(s[2]) || p.isNull(s[3]) {
		return nil, false
	}
	rs := p.in.Uses.Consumers[id]
	if len(rs) == 0 {
		return nil, false
	}
	for _, r := range rs {
		a := p.g.Chain[r].Args
		if p.g.Chain[r].Name != ropeOp || len(a) != 5 || a[0] == id || a[1] == id || a[4] == id {
			return nil, false
		}
	}
	return s, true
}

// ropeTables returns the whole tables rope i reads when both its tables
// are table slices over the same start and end of tables of one shape.
func (p *planner) ropeTables(i int) (ops.RopeTables, bool) {
	a := p.g.Chain[i].Args
	if p.in.Options.NoElementwiseFusion || p.g.Chain[i].Name != ropeOp || len(a) != 5 {
		return ops.RopeTables{}, false
	}
	cs, ok1 := p.tableSlice(a[2])
	ss, ok2 := p.tableSlice(a[3])
	if !ok1 || !ok2 || cs[2] != ss[2] || cs[3] != ss[3] {
		return ops.RopeTables{}, false
	}
	if !slices.Equal(p.value(cs[0]).Tensor.Dims, p.value(ss[0]).Tensor.Dims) {
		return ops.RopeTables{}, false
	}
	return ops.RopeTables{Cos: cs[0], Sin: ss[0], Start: cs[2]}, true
}

// skippedSlice returns the table slice i cuts when every reader of it is
// a rope reading the whole tables.
func (p *planner) skippedSlice(i int) (ops.RopeTables, bool) {
	s, ok := p.tableSlice(p.out(i))
	if !ok {
		return ops.RopeTables{}, false
	}
	for _, r := range p.in.Uses.Consumers[s[5]] {
		if _, ok := p.ropeTables(r); !ok {
			return ops.RopeTables{}, false
		}
	}
	return ops.RopeTables{Cos: s[0], Start: s[2]}, true
}

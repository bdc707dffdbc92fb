package ops

import (
	"errors"
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// Rope and KV-cache fusion (fewer dispatches per decode step). An
// et_vk.apply_rotary_emb.default whose rotated k is read only by the
// sdpa_with_kv_cache.default that takes its rotated q (as a llama export
// writes them: rope(q, k), then sdpa_with_kv_cache(q', k', v, caches);
// package lower's rope_cache pass) records that attention's cache update
// in its own dispatch (rope.wgsl with Cache): the rotated k goes straight
// into the k cache rows, v into the v cache, and the rotated q to its
// output. The attention itself is recorded right after it, at the rope's
// place: two dispatches for the three. Each element is computed by the
// same formula as unfused, so the results are equal bit for bit.
//
// The group's guard (fusedRopeCache): float32 caches (not halves), one
// batch, and an attention the sdpa op itself would accept; otherwise the
// rope and the attention record on their own.

// ropeShader is the template data of shaders/rope.wgsl.
type ropeShader struct {
	HF, Pair, Cache bool
	WG              int
}

func init() {
	RegisterFused(FusedRopeCache, fusedRopeCache)
	RegisterFused(FusedRopeTables, fusedRopeTables)
	RegisterFused(FusedTableSlice, fusedTableSlice)
}

// fusedRopeCache is FusedRopeCache's kernel: g.Calls are the rope and the
// sdpa_with_kv_cache, g.Tables the rope's whole tables or nil.
func fusedRopeCache(b Builder, g *Group) (int, error) {
	if len(g.Calls) != 2 || len(g.Calls[1].Args) != 12 {
		return 0, nil
	}
	c, err := ropeParse(b, g.Calls[0].Args, g.Tables)
	if err != nil {
		return 0, err
	}
	sargs := g.Calls[1].Args
	v := sargs[2]
	pos, err := b.Int(sargs[5])
	if err != nil {
		return 0, nil
	}
	call, err := cacheAttention(b, sargs, 0, 3, 4, 5, 7, 8, 9, 10, 11, pos)
	if err != nil {
		return 0, nil
	}
	kt, err := attnTensor(b, sargs, 1, "k")
	if err != nil {
		return 0, nil
	}
	vt, err := attnTensor(b, sargs, 2, "v")
	if err != nil || len(vt.Dims) != 4 || vt.Dims[1] != call.sq || len(kt.Dims) != 4 || kt.Dims[0] != 1 || vt.Dims[0] != 1 {
		return 0, nil
	}
	kc, halfK, err := kvCache(b, sargs, 3, "k_cache")
	if err != nil || halfK {
		return 0, nil
	}
	vc, halfV, err := kvCache(b, sargs, 4, "v_cache")
	if err != nil || halfV {
		return 0, nil
	}
	kw, err := checkCacheUpdate(kt, kc, false, 1, 3, 5, pos)
	if err != nil {
		return 0, nil
	}
	vw, err := checkCacheUpdate(vt, vc, false, 2, 4, 5, pos)
	if err != nil {
		return 0, nil
	}
	if kw.n != c.numel2 || c.numel+c.numel2+vw.n >= 1<<32 {
		return 0, nil
	}
	_, direct := ropeTablesAt(b, g.Tables)
	b.OnRefresh(func(b Builder) error {
		c, err := ropeAt(b, c, g.Tables, direct)
		if err != nil {
			return err
		}
		ws, err := cacheWritesAt(b, sargs[5], kw, vw)
		if err != nil {
			return err
		}
		call, err := attentionAt(b, sargs[5], call)
		if err != nil {
			return err
		}
		if err := recordRopeCache(b, c, v, vw.n, ws[0], ws[1], kc.ID, vc.ID); err != nil {
			return err
		}
		return recordAttention(b, call)
	})
	if err := recordRopeCache(b, c, v, vw.n, kw, vw, kc.ID, vc.ID); err != nil {
		return 0, err
	}
	return 2, recordAttention(b, call)
}

// ropeAt returns rope call c, recorded reading tables t whole (direct) or
// their slices, with the tables' start row for the SymInt values now: an
// update function's call. A guard that decides otherwise now fails it.
func ropeAt(b Builder, c ropeCall, t *RopeTables, direct bool) (ropeCall, error) {
	start, ok := ropeTablesAt(b, t)
	if ok != direct {
		return c, errGuardMoved
	}
	if ok {
		c.start = start
	}
	return c, nil
}

// errGuardMoved fails an update function whose node's guard decides
// otherwise for the new values: the graph records the node again.
var errGuardMoved = errors.New("ops: the guard decides otherwise for the new values")

// recordRopeCache records rope.wgsl with Cache: q rotated into c.out, k
// rotated into kcache (kw), v's nv elements into vcache (vw).
func recordRopeCache(b Builder, c ropeCall, v int32, nv int64, kw, vw cacheWrite, kcache, vcache int32) error {
	total := c.numel + c.numel2 + nv
	if total == 0 {
		return nil
	}
	k, err := shaders.Render("rope.wgsl", ropeShader{Pair: true, Cache: true, WG: ropeWG}, "main", shaders.Layout(5, 3, true), ropeWG)
	if err != nil {
		return err
	}
	groups, err := Grid(uint64(total), ropeWG, b.MaxWorkgroupsPerDim())
	if err != nil {
		return err
	}
	var p Params
	p.U32(uint32(c.numel)).U32(uint32(c.d)).U32(uint32(c.rowDiv)).U32(uint32(c.seq))
	p.U32(uint32(c.start)).U32(uint32(c.cosT)).U32(uint32(c.cosJ)).U32(uint32(c.sinO))
	p.U32(uint32(c.rd)).U32(uint32(c.numel2)).U32(uint32(c.rowDiv2)).U32(0)
	p.U32(uint32(nv)).U32(uint32(kw.block)).U32(uint32(kw.dst0)).U32(uint32(kw.bstride))
	p.U32(uint32(vw.block)).U32(uint32(vw.dst0)).U32(uint32(vw.bstride)).U32(0)
	ins := []int32{c.x, c.xk, c.cos, c.sin, v}
	outs := []int32{c.out, kcache, vcache}
	if err := b.Dispatch(k, ins, outs, p.Bytes(), groups); err != nil {
		return fmt.Errorf("ops: rope: %w", err)
	}
	return nil
}

// The rope tables' slices. A llama export slices rows input_pos ..
// input_pos+S of the cos and sin tables once per step
// (aten.slice_copy.Tensor along dim 0) and every layer's rope reads the
// slices. Where every reader of both slices is such a rope (package
// lower's rope_tables pass), the slices record nothing and each rope
// reads the whole tables from row start (rope.wgsl's start, the table row
// of position 0): two dispatches less a step, the same values. The guard,
// which the slices and their ropes evaluate alike on the same start value,
// is that start is a row of the table (ropeTablesAt); where it fails, the
// slices record their copies and the ropes read them.

// ropeTablesAt returns the row of position 0 that the ropes reading t read
// the whole tables from: t's start value, when it is a row of the cos
// table. ok is false when t is nil or the guard fails.
func ropeTablesAt(b Builder, t *RopeTables) (start int64, ok bool) {
	if t == nil {
		return 0, false
	}
	ct, err := b.Tensor(t.Cos)
	if err != nil || len(ct.Dims) != 2 {
		return 0, false
	}
	start, err = b.Int(t.Start)
	if err != nil || start < 0 || start >= ct.Dims[0] {
		return 0, false
	}
	return start, true
}

// fusedRopeTables is FusedRopeTables' kernel: the rope reading the whole
// tables where the guard holds, its table slices where not.
func fusedRopeTables(b Builder, g *Group) (int, error) {
	if len(g.Calls) != 1 {
		return 0, nil
	}
	c, err := ropeParse(b, g.Calls[0].Args, g.Tables)
	if err != nil {
		return 0, err
	}
	_, direct := ropeTablesAt(b, g.Tables)
	b.OnRefresh(func(b Builder) error {
		c, err := ropeAt(b, c, g.Tables, direct)
		if err != nil {
			return err
		}
		return recordRope(b, c)
	})
	return 1, recordRope(b, c)
}

// fusedTableSlice is FusedTableSlice's kernel: the slice's output shape
// only, where the guard holds (its readers read the table itself), its
// copy where not.
func fusedTableSlice(b Builder, g *Group) (int, error) {
	if len(g.Calls) != 1 {
		return 0, nil
	}
	args := g.Calls[0].Args
	sl, err := sliceParse(b, args)
	if err != nil {
		return 0, err
	}
	_, skip := ropeTablesAt(b, g.Tables)
	record := func(b Builder, sl sliceCall) error {
		if !skip {
			return recordSlice(b, sl.in, sl.dim, sl.start, max(sl.end, sl.start), sl.step, 5, args[5])
		}
		dims := slices.Clone(sl.in.Dims)
		dims[sl.dim] = max(sl.end-sl.start, 0)
		_, err := Output(b, 5, args[5], sl.in.DType, dims)
		return err
	}
	b.OnRefresh(func(b Builder) error {
		if _, ok := ropeTablesAt(b, g.Tables); ok != skip {
			return errGuardMoved
		}
		sl, err := sl.bounds(b, args)
		if err != nil {
			return err
		}
		return record(b, sl)
	})
	return 1, record(b, sl)
}

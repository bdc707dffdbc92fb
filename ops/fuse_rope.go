package ops

import (
	"fmt"
	"slices"

	"github.com/wgdelegate/wgdelegate/serialization"
	"github.com/wgdelegate/wgdelegate/shaders"
)

// Rope and KV-cache fusion (fewer dispatches per decode step). An
// et_vk.apply_rotary_emb.default whose rotated k is read only by the
// sdpa_with_kv_cache.default that takes its rotated q (as a llama export
// writes them: rope(q, k), then sdpa_with_kv_cache(q', k', v, caches))
// records that attention's cache update in its own dispatch (rope.wgsl
// with Cache): the rotated k goes straight into the k cache rows, v into
// the v cache, and the rotated q to its output. The attention itself is
// recorded right after it, at the rope's place, and the sdpa op is
// absorbed: two dispatches for the three. Each element is computed by the
// same formula as unfused, so the results are equal bit for bit.
//
// Left unfused: half KV caches, more than one batch, a rotated k read by
// anything else or written as a graph output, a v not yet computed at
// the rope, an op between the two that touches the caches, v or the
// outputs, an attention the sdpa op itself would reject, and
// Config.NoElementwiseFusion.

// ropeShader is the template data of shaders/rope.wgsl.
type ropeShader struct {
	HF, Pair, Cache bool
	WG              int
}

// fuseRopeCache records rope c (pairs mode, q and k) with the following
// sdpa_with_kv_cache's cache update and then that attention, when it can;
// done reports that it did. ropeArgs are the rope op's arguments.
func fuseRopeCache(b Builder, ropeArgs []int32, c ropeCall) (done bool, err error) {
	f, ok := b.(Fuser)
	sh, ok2 := b.(bufferSharer)
	if !ok || !ok2 || configOf(b).NoElementwiseFusion || !c.pair || c.hf {
		return false, nil
	}
	j, name, sargs, ok := SoleConsumer(b, c.outk)
	if !ok || name != "sdpa_with_kv_cache.default" || len(sargs) != 12 || sargs[0] != c.out || sargs[1] != c.outk {
		return false, nil
	}
	v := sargs[2]
	if v == c.out || v == c.outk || !f.Defined(v) || f.IsOutput(c.outk) {
		return false, nil
	}
	pos, err := b.Int(sargs[5])
	if err != nil || sargs[3] == sargs[4] {
		return false, nil
	}
	call, err := cacheAttention(b, sargs, 0, 3, 4, 5, 7, 8, 9, 10, 11, pos)
	if err != nil {
		return false, nil
	}
	kt, err := attnTensor(b, sargs, 1, "k")
	if err != nil {
		return false, nil
	}
	vt, err := attnTensor(b, sargs, 2, "v")
	if err != nil || len(vt.Dims) != 4 || vt.Dims[1] != call.sq || len(kt.Dims) != 4 || kt.Dims[0] != 1 || vt.Dims[0] != 1 {
		return false, nil
	}
	kc, halfK, err := kvCache(b, sargs, 3, "k_cache")
	if err != nil || halfK {
		return false, nil
	}
	vc, halfV, err := kvCache(b, sargs, 4, "v_cache")
	if err != nil || halfV {
		return false, nil
	}
	kw, err := checkCacheUpdate(kt, kc, false, 1, 3, 5, pos)
	if err != nil {
		return false, nil
	}
	vw, err := checkCacheUpdate(vt, vc, false, 2, 4, 5, pos)
	if err != nil {
		return false, nil
	}
	if kw.n != c.numel2 || c.numel+c.numel2+vw.n >= 1<<32 {
		return false, nil
	}
	att := sargs[11]
	reads := []int32{c.x, c.xk, c.cos, c.sin, v}
	writes := []int32{c.out, kc.ID, vc.ID, att}
	for _, w := range writes {
		for _, r := range reads {
			if sh.SameBuffer(w, r) {
				return false, nil
			}
		}
	}
	if sh.SameBuffer(kc.ID, vc.ID) {
		return false, nil
	}
	// Nothing between the rope and the attention may touch what the two
	// dispatches read or write.
	touched := append(slices.Clone(writes), sargs[3], sargs[4], c.outk)
	i0 := j - 1 // the rope op
	for ; i0 >= 0; i0-- {
		if n, a := f.OpAt(i0); n == "et_vk.apply_rotary_emb.default" && slices.Equal(a, ropeArgs) {
			break
		}
	}
	if i0 < 0 {
		return false, nil
	}
	for i := i0 + 1; i < j; i++ {
		oname, oargs := f.OpAt(i)
		for _, a := range oargs {
			if slices.Contains(touched, a) {
				return false, nil
			}
		}
		for _, w := range WritesArgs(oname) {
			if w < len(oargs) && slices.Contains(reads, oargs[w]) {
				return false, nil
			}
		}
	}
	if err := f.Absorb(j); err != nil {
		return false, err
	}
	if err := recordRopeCache(b, c, v, vw.n, kw, vw, kc.ID, vc.ID); err != nil {
		return false, err
	}
	return true, recordAttention(b, call)
}

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
// slices. When every reader of both slices is such a rope, the slices
// record nothing and each rope reads the whole tables from row start
// (rope.wgsl's start, the table row of position 0): two dispatches less a
// step, the same values. Off with Config.NoElementwiseFusion.

// ropeTableSlice returns the args of the aten.slice_copy.Tensor whose
// output is id when that slice takes rows [start, end) (step 1) of a 2-D
// float32 table along dim 0, its output is no graph output, and every
// reader of it is an et_vk.apply_rotary_emb.default reading it as a
// table only.
func ropeTableSlice(b Builder, id int32) ([]int32, bool) {
	f, ok := b.(Fuser)
	if !ok || configOf(b).NoElementwiseFusion || f.IsOutput(id) {
		return nil, false
	}
	var sargs []int32
	for i := 0; ; i++ {
		name, args := f.OpAt(i)
		if name == "" {
			return nil, false
		}
		if name == "aten.slice_copy.Tensor" && len(args) == 6 && args[5] == id {
			sargs = args
			break
		}
	}
	if dim, err := b.Int(sargs[1]); err != nil || dim != 0 {
		return nil, false
	}
	if !b.IsNull(sargs[4]) {
		if step, err := b.Int(sargs[4]); err != nil || step != 1 {
			return nil, false
		}
	}
	t, err := b.Tensor(sargs[0])
	if err != nil || t.DType != serialization.Float32 || len(t.Dims) != 2 || b.IsNull(sargs[2]) || b.IsNull(sargs[3]) {
		return nil, false
	}
	cs := readers(b, f, id)
	if len(cs) == 0 {
		return nil, false
	}
	for _, i := range cs {
		name, args := f.OpAt(i)
		if name != "et_vk.apply_rotary_emb.default" || len(args) != 5 || args[0] == id || args[1] == id || args[4] == id {
			return nil, false
		}
	}
	return sargs, true
}

// ropeDirectTables returns the whole tables and the row of position 0
// for the llama rope of args (xq, xk, cos, sin, outs) when both its
// tables are ropeTableSlice slices of equal shape over the same start and
// end values.
func ropeDirectTables(b Builder, args []int32) (cos, sin int32, start int64, ok bool) {
	if len(args) != 5 {
		return 0, 0, 0, false
	}
	cs, ok1 := ropeTableSlice(b, args[2])
	ss, ok2 := ropeTableSlice(b, args[3])
	if !ok1 || !ok2 || cs[2] != ss[2] || cs[3] != ss[3] {
		return 0, 0, 0, false
	}
	ct, err1 := b.Tensor(cs[0])
	st, err2 := b.Tensor(ss[0])
	if err1 != nil || err2 != nil || !slices.Equal(ct.Dims, st.Dims) {
		return 0, 0, 0, false
	}
	start, err := b.Int(cs[2])
	if err != nil || start < 0 || start >= ct.Dims[0] {
		return 0, 0, 0, false
	}
	return cs[0], ss[0], start, true
}

// ropeSliceSkipped reports whether slice_copy(args) records nothing: every
// reader of its output is a rope that reads the whole tables
// (ropeDirectTables).
func ropeSliceSkipped(b Builder, args []int32) bool {
	f, ok := b.(Fuser)
	if !ok || len(args) != 6 {
		return false
	}
	if _, ok := ropeTableSlice(b, args[5]); !ok {
		return false
	}
	for _, i := range readers(b, f, args[5]) {
		_, rargs := f.OpAt(i)
		if _, _, _, ok := ropeDirectTables(b, rargs); !ok {
			return false
		}
	}
	return true
}

// readers returns the chain indices of every op that reads id, before the
// calling op as well as after it (Fuser.Consumers lists the later ones
// only; a slice and each of its ropes must decide alike wherever they
// stand), ValueList members included.
func readers(b Builder, f Fuser, id int32) []int {
	var out []int
	for i := 0; ; i++ {
		name, args := f.OpAt(i)
		if name == "" {
			return out
		}
		for _, a := range args[:max(len(args)-1, 0)] { // the last: the output
			hit := a == id
			if !hit && b.Kind(a) == serialization.KindValueList {
				ids, err := b.ValueList(a)
				hit = err == nil && slices.Contains(ids, id)
			}
			if hit {
				out = append(out, i)
				break
			}
		}
	}
}

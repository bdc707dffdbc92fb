package lower

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// ropeGraph writes llama's attention step as the export does: optional
// table slices (0, 1), q/k/v made by ops (neg), the rope, then
// sdpa_with_kv_cache; hooks add ops at the marked places. mem gives the
// activations' mem_obj_id (-1: dedicated; >= 0: one shared object each
// in turn, as the exporter's greedy plan reuses them).
type ropeGraph struct {
	sliced      bool // the tables are slices of [16, 4] tables at pos
	sliceReader bool // the cos slice has another reader
	kReader     bool // the rotated k has another reader
	kLater      bool // the rotated k has another reader after the attention
	vAfter      bool // v is computed after the rope
	sameCache   bool // k_cache and v_cache are one value
	greedy      bool // activations in shared objects (the exporter's plan)
	// between, when set, adds ops between the rope and the attention.
	between func(b *serialization.Builder, r *ropeIDs)
}

// ropeIDs are the values a hook may use.
type ropeIDs struct {
	q, k, v, kc, vc, qo, ko, pos int32
}

func (s ropeGraph) build(b *serialization.Builder) {
	act := activations(b, s.greedy, 2)
	x := b.Tensor(f32, []uint32{1, 1, 4, 8}, -1)
	pos := b.SymInt(0)
	b.Inputs(x, pos)
	kc := b.Tensor(f32, []uint32{1, 16, 4, 8}, -1)
	vc := kc
	if !s.sameCache {
		vc = b.Tensor(f32, []uint32{1, 16, 4, 8}, -1)
	}
	var ci, si int32
	if s.sliced {
		ct := b.InlineConst(f32, []uint32{16, 4}, make([]byte, 256))
		st := b.InlineConst(f32, []uint32{16, 4}, make([]byte, 256))
		end := b.SymInt(1)
		ci, si = act(1, 4), act(1, 4)
		b.Op("aten.slice_copy.Tensor", ct, b.Int(0), pos, end, b.Int(1), ci) // 0
		b.Op("aten.slice_copy.Tensor", st, b.Int(0), pos, end, b.Int(1), si) // 1
		if s.sliceReader {
			n := act(1, 4)
			b.Op("aten.neg.default", ci, n)
			b.Outputs(n)
		}
	} else {
		ci = b.InlineConst(f32, []uint32{1, 4}, make([]byte, 16))
		si = b.InlineConst(f32, []uint32{1, 4}, make([]byte, 16))
	}
	r := &ropeIDs{kc: kc, vc: vc, pos: pos}
	r.q, r.k = act(1, 1, 4, 8), act(1, 1, 4, 8)
	b.Op("aten.neg.default", x, r.q)
	b.Op("aten.neg.default", x, r.k)
	r.v = act(1, 1, 4, 8)
	if !s.vAfter {
		b.Op("aten.neg.default", x, r.v)
	}
	r.qo, r.ko = act(1, 1, 4, 8), act(1, 1, 4, 8)
	b.Op("et_vk.apply_rotary_emb.default", r.q, r.k, ci, si, b.ValueList(r.qo, r.ko))
	if s.vAfter {
		b.Op("aten.neg.default", x, r.v)
	}
	if s.kReader {
		n := act(1, 1, 4, 8)
		b.Op("aten.neg.default", r.ko, n)
		b.Outputs(n)
	}
	if s.between != nil {
		s.between(b, r)
	}
	out := act(1, 1, 4, 8)
	b.Op("sdpa_with_kv_cache.default", r.qo, r.ko, r.v, kc, vc, pos, b.Int(1), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	b.Outputs(out)
	if s.kLater {
		n := act(1, 1, 4, 8)
		b.Op("aten.neg.default", r.ko, n)
		b.Outputs(n)
	}
}

// TestRopePasses: the rope_cache and rope_tables passes, and what stops
// them (the cases of ops/opstest's fuse_rope/ family, and more).
func TestRopePasses(t *testing.T) {
	runPlanCases(t, []planCase{
		{name: "rope_cache", build: ropeGraph{}.build,
			want: "0 1 2 rope_cache[3 4]{3 4}"},
		{name: "rope_cache/greedy_plan", build: ropeGraph{greedy: true}.build,
			want: "0 1 2 rope_cache[3 4]{3 4}"},
		{name: "rope_cache/fusion_off", opts: Options{NoElementwiseFusion: true}, build: ropeGraph{sliced: true}.build,
			want: "0 1 2 3 4 5 6"},
		{name: "k_reader", build: ropeGraph{kReader: true}.build,
			want: "0 1 2 3 4 5"},
		{name: "k_reader_after_attention", build: ropeGraph{kLater: true}.build,
			want: "0 1 2 3 4 5"},
		{name: "v_after_rope", build: ropeGraph{vAfter: true}.build,
			want: "0 1 2 3 4"},
		{name: "one_cache_for_k_and_v", build: ropeGraph{sameCache: true}.build,
			want: "0 1 2 3 4"},
		{name: "between_reads_the_cache", build: ropeGraph{between: func(b *serialization.Builder, r *ropeIDs) {
			n := b.Tensor(f32, []uint32{1, 16, 4, 8}, -1)
			b.Op("aten.neg.default", r.kc, n) // would see the cache updated early
			b.Outputs(n)
		}}.build, want: "0 1 2 3 4 5"},
		{name: "between_writes_v", build: ropeGraph{between: func(b *serialization.Builder, r *ropeIDs) {
			n := b.Tensor(f32, []uint32{1, 1}, -1)
			b.Op("update_cache.default", r.k, r.v, r.pos, n) // v updated in place after the rope
		}}.build, want: "0 1 2 3 4 5"},
		{name: "between_unrelated", build: ropeGraph{between: func(b *serialization.Builder, r *ropeIDs) {
			n := b.Tensor(f32, []uint32{1, 1, 4, 8}, -1)
			b.Op("aten.neg.default", r.q, n)
			b.Outputs(n)
		}}.build, want: "0 1 2 rope_cache[3 5]{3 5} 4"},
		{name: "sliced_tables", build: ropeGraph{sliced: true}.build,
			want: "table_slice[0] table_slice[1] 2 3 4 rope_cache[5 6]{rope_tables[5] 6}"},
		{name: "sliced_tables/greedy_plan", build: ropeGraph{sliced: true, greedy: true}.build,
			want: "table_slice[0] table_slice[1] 2 3 4 rope_cache[5 6]{rope_tables[5] 6}"},
		{name: "sliced_tables/k_reader", build: ropeGraph{sliced: true, kReader: true}.build,
			want: "table_slice[0] table_slice[1] 2 3 4 rope_tables[5] 6 7"},
		{name: "sliced_tables/slice_reader", build: ropeGraph{sliced: true, sliceReader: true}.build,
			want: "0 1 2 3 4 5 rope_cache[6 7]{6 7}"},
	})
}

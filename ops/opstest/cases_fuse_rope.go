package opstest

import (
	"math/rand/v2"

	"github.com/wgdelegate/wgdelegate/ops/reference"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// Cases for the rope and KV-cache fusion (ops/fuse_rope.go): llama's
// apply_rotary_emb followed by the sdpa_with_kv_cache that reads its q and
// k. fuseRopeSaved says how many dispatches fusion saves in each
// (TestRopeCacheFusion): 1 when the cache update joins the rope, 0 when it
// must not.
var fuseRopeSaved = map[string]int{}

// fuseRopeSpec is one case: the attention's shape, and the variations.
type fuseRopeSpec struct {
	kv     kvCaseSpec
	alias  bool // q, k and v are transients computed in the graph (they die at the rope and the attention)
	reader bool // the rotated k has another reader: no fusion
	// sliced: the tables are rows pos.. of [maxS, D/2] tables
	// (slice_copy, as the llama export writes them), read by this rope
	// and a second one (another layer's); sliceReader: the cos slice has
	// a reader besides the ropes, so both slices stay.
	sliced, sliceReader bool
	saved               int
}

func init() {
	for _, s := range []fuseRopeSpec{
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 5}, saved: 1},
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 4, d: 16, maxS: 8, pos: 0, symPos: true}, saved: 1},
		{kv: kvCaseSpec{b: 1, s: 3, hq: 6, hkv: 2, d: 8, maxS: 12, pos: 9, causal: 1}, saved: 1},
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 15}, alias: true, saved: 1},
		{kv: kvCaseSpec{b: 1, s: 2, hq: 2, hkv: 2, d: 4, maxS: 6, pos: 3}, alias: true, saved: 1},
		// The step's table rows sliced once, read whole by both ropes:
		// two dispatches more saved.
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 5}, sliced: true, saved: 3},
		{kv: kvCaseSpec{b: 1, s: 2, hq: 4, hkv: 4, d: 8, maxS: 8, pos: 6, symPos: true}, sliced: true, saved: 3},
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 0}, sliced: true, alias: true, saved: 3},
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 7}, sliced: true, sliceReader: true, saved: 1},
		// Left unfused.
		{kv: kvCaseSpec{b: 1, s: 1, hq: 4, hkv: 2, d: 8, maxS: 16, pos: 5}, reader: true},
		{kv: kvCaseSpec{b: 2, s: 1, hq: 2, hkv: 2, d: 8, maxS: 4, pos: 1}},
	} {
		c := fuseRopeCase(s)
		fuseRopeSaved[c.Name] = s.saved
		Cases = append(Cases, c)
	}
}

// fuseRopeCase builds spec s's case: rope(q, k) with position pos's rows
// of the tables (named constants of S rows), then sdpa_with_kv_cache,
// returning the attention and both caches.
func fuseRopeCase(s fuseRopeSpec) Case {
	name := "fuse_rope/" + s.kv.String()
	if s.alias {
		name += "/alias_greedy"
	}
	if s.reader {
		name += "/unfused_k_reader"
	}
	if s.sliced {
		name += "/sliced_tables"
	}
	if s.sliceReader {
		name += "/slice_reader"
	}
	return Case{
		Name: name,
		Tol:  attnTol,
		Build: func(b *serialization.Builder, r *rand.Rand) []*reference.Tensor {
			f := serialization.Float32
			c := s.kv
			g := c.graph(b, r)
			q, k, v := g.q, g.k, g.v
			if s.alias {
				// Transients that die at the rope (q, k) and at the
				// attention (v).
				q, k, v = b.Tensor(f, Dims(g.inputs[0].Shape), -1), b.Tensor(f, Dims(g.inputs[1].Shape), -1), b.Tensor(f, Dims(g.inputs[2].Shape), -1)
				b.Op("aten.neg.default", g.q, q)
				b.Op("aten.neg.default", g.k, k)
				b.Op("aten.neg.default", g.v, v)
			}
			fc, fs := ropeTables(c.s, c.d/2)
			for i := range fc.V {
				// Rows of other positions than the table's first.
				fc.V[i], fs.V[i] = float64(float32(fc.V[i]*0.9+0.05)), float64(float32(fs.V[i]*0.9-0.05))
			}
			var ci, si int32
			var extra []int32
			if s.sliced {
				// Tables of maxS rows, sliced at rows pos .. pos+S.
				fc, fs = ropeTables(c.maxS, c.d/2)
				ct := addWeight(b, fc, weightPrepack, &g.inputs)
				st := addWeight(b, fs, weightPrepack, &g.inputs)
				end := b.Int(c.pos + c.s)
				if c.symPos {
					end = b.SymInt(int32(c.pos + c.s))
				}
				td := []uint32{uint32(c.s), uint32(c.d / 2)}
				ci, si = b.Tensor(f, td, -1), b.Tensor(f, td, -1)
				b.Op("aten.slice_copy.Tensor", ct, b.Int(0), g.pos, end, b.Int(1), ci)
				b.Op("aten.slice_copy.Tensor", st, b.Int(0), g.pos, end, b.Int(1), si)
				if s.sliceReader {
					n := b.Tensor(f, td, -1)
					b.Op("aten.neg.default", ci, n)
					extra = append(extra, n)
				}
				// Another layer's rope of the same rows.
				q2, k2 := b.Tensor(f, Dims(g.inputs[0].Shape), -1), b.Tensor(f, Dims(g.inputs[1].Shape), -1)
				b.Op("et_vk.apply_rotary_emb.default", g.q, g.k, ci, si, b.ValueList(q2, k2))
				extra = append(extra, q2, k2)
			} else {
				ci = addWeight(b, fc, weightNamed, &g.inputs)
				si = addWeight(b, fs, weightNamed, &g.inputs)
			}
			qo, ko := b.Tensor(f, Dims(g.inputs[0].Shape), -1), b.Tensor(f, Dims(g.inputs[1].Shape), -1)
			b.Op("et_vk.apply_rotary_emb.default", q, k, ci, si, b.ValueList(qo, ko))
			outs := extra
			if s.reader {
				kn := b.Tensor(f, Dims(g.inputs[1].Shape), -1)
				b.Op("aten.neg.default", ko, kn)
				outs = append(outs, kn)
			}
			out := b.Tensor(f, Dims(g.inputs[0].Shape), -1)
			b.Op("sdpa_with_kv_cache.default", qo, ko, v, g.kc, g.vc, g.pos, b.Int(c.s), b.Null(), b.Double(0), g.causal, g.scale, out)
			b.Outputs(append(outs, out, g.kc, g.vc)...)
			return g.inputs
		},
	}
}

package ops

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// posRecorder is a recorder whose graph holds the SymInts dev on the
// device (as the graph holds a decoder's position), in tensor pos, each
// at offset off from it; ranges collects what the ops declared.
type posRecorder struct {
	*recorder
	dev    map[int32]int64 // SymInt -> its offset
	pos    int32
	ranges map[int32][2]int64
}

func (r *posRecorder) DevicePos(id int32, lo, hi int64) (Tensor, int64, bool) {
	off, ok := r.dev[id]
	if !ok {
		return Tensor{}, 0, false
	}
	if old, ok := r.ranges[id]; ok {
		lo, hi = max(lo, old[0]), min(hi, old[1])
	}
	r.ranges[id] = [2]int64{lo, hi}
	t, _ := r.Tensor(r.pos)
	return t, off, true
}

// TestDevicePosDeclared pins what the position readers declare and
// record when the position is on the device: each binds the position
// tensor, and declares the positions its recording holds for (a cache of
// 16 rows, 2 tokens: input_pos 0..14; tables of 16 rows: the ropes'
// start 0..14, the skipped table slices' start 0..15 and end 0..16). Its
// params then hold offsets from the position: equal for any position.
// Without the position on the device they bind no position tensor and
// declare nothing.
func TestDevicePosDeclared(t *testing.T) {
	f := serialization.Float32
	type graphOf struct {
		b                            *serialization.Builder
		pos, end, posT               int32
		q, k, v, kc, vc, o, kout     int32
		cosT, sinT, cos, sin, qr, kr int32
	}
	build := func(p int64) graphOf {
		b := serialization.NewBuilder()
		var g graphOf
		g.b = b
		g.pos, g.end = b.SymInt(int32(p)), b.SymInt(int32(p+2))
		g.posT = b.Tensor(serialization.Int32, []uint32{1}, -1)
		g.q = b.Tensor(f, []uint32{1, 2, 4, 8}, -1)
		g.k, g.v = b.Tensor(f, []uint32{1, 2, 2, 8}, -1), b.Tensor(f, []uint32{1, 2, 2, 8}, -1)
		g.kc, g.vc = b.Tensor(f, []uint32{1, 16, 2, 8}, -1), b.Tensor(f, []uint32{1, 16, 2, 8}, -1)
		g.o, g.kout = b.Tensor(f, []uint32{1, 2, 4, 8}, -1), b.Tensor(f, []uint32{1}, -1)
		g.cosT, g.sinT = b.Tensor(f, []uint32{16, 4}, -1), b.Tensor(f, []uint32{16, 4}, -1)
		g.cos, g.sin = b.Tensor(f, []uint32{2, 4}, -1), b.Tensor(f, []uint32{2, 4}, -1)
		g.qr, g.kr = b.Tensor(f, []uint32{1, 2, 4, 8}, -1), b.Tensor(f, []uint32{1, 2, 2, 8}, -1)
		return g
	}
	type call struct {
		name   string
		record func(r Builder, g graphOf) error
		want   map[string][2]int64 // "pos" / "end" -> declared range
	}
	attnArgs := func(b *serialization.Builder) []int32 {
		return []int32{b.Null(), b.Double(0), b.Bool(true), b.Null()}
	}
	calls := []call{
		{"update_cache", func(r Builder, g graphOf) error {
			return runOp(r, "update_cache.default", g.k, g.kc, g.pos, g.kout)
		}, map[string][2]int64{"pos": {0, 14}}},
		{"custom_sdpa", func(r Builder, g graphOf) error {
			a := attnArgs(g.b)
			return runOp(r, "llama.custom_sdpa.default", g.q, g.kc, g.vc, g.pos, a[0], a[1], a[2], a[3], g.o)
		}, map[string][2]int64{"pos": {0, 14}}},
		{"sdpa_with_kv_cache", func(r Builder, g graphOf) error {
			a := attnArgs(g.b)
			return runOp(r, "sdpa_with_kv_cache.default", g.q, g.k, g.v, g.kc, g.vc, g.pos, g.b.Int(2), a[0], a[1], a[2], a[3], g.o)
		}, map[string][2]int64{"pos": {0, 14}}},
		{"rope reading the tables", func(r Builder, g graphOf) error {
			grp := &Group{Kind: FusedRopeTables, Tables: &RopeTables{Cos: g.cosT, Sin: g.sinT, Start: g.pos},
				Calls: []Call{{Name: "et_vk.apply_rotary_emb.default", Args: []int32{g.q, g.k, g.cos, g.sin, g.b.ValueList(g.qr, g.kr)}}}}
			_, err := fusedRopeTables(r, grp)
			return err
		}, map[string][2]int64{"pos": {0, 14}}},
		{"table slice", func(r Builder, g graphOf) error {
			grp := &Group{Kind: FusedTableSlice, Tables: &RopeTables{Cos: g.cosT, Start: g.pos},
				Calls: []Call{{Name: "aten.slice_copy.Tensor", Args: []int32{g.cosT, g.b.Int(0), g.pos, g.end, g.b.Int(1), g.cos}}}}
			_, err := fusedTableSlice(r, grp)
			return err
		}, map[string][2]int64{"pos": {0, 15}, "end": {0, 16}}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			var params [][]byte
			for _, p := range []int64{3, 9} {
				g := build(p)
				r := &posRecorder{recorder: &recorder{Values: Values{G: g.b.Graph()}, maxPerDim: 65535},
					dev: map[int32]int64{g.pos: 0, g.end: 2}, pos: g.posT, ranges: map[int32][2]int64{}}
				if err := c.record(r, g); err != nil {
					t.Fatal(err)
				}
				names := map[int32]string{g.pos: "pos", g.end: "end"}
				got := map[string][2]int64{}
				for id, rg := range r.ranges {
					got[names[id]] = rg
				}
				if len(got) != len(c.want) {
					t.Errorf("input_pos %d: declared %v, want %v", p, got, c.want)
				}
				for k, w := range c.want {
					if got[k] != w {
						t.Errorf("input_pos %d: declared %s in %v, want %v", p, k, got[k], w)
					}
				}
				var ps []byte
				for _, d := range r.dispatches {
					bound := false
					for _, id := range d.in {
						bound = bound || id == g.posT
					}
					if !bound {
						t.Errorf("input_pos %d: kernel %s does not bind the position tensor", p, d.k.Name)
					}
					ps = append(ps, d.params...)
				}
				params = append(params, ps)
				// Without the position on the device: no binding, no
				// declaration.
				plain := &recorder{Values: Values{G: g.b.Graph()}, maxPerDim: 65535}
				if err := c.record(plain, g); err != nil {
					t.Fatal(err)
				}
				for _, d := range plain.dispatches {
					for _, id := range d.in {
						if id == g.posT {
							t.Errorf("input_pos %d: kernel %s binds the position tensor though it is not on the device", p, d.k.Name)
						}
					}
				}
			}
			if string(params[0]) != string(params[1]) {
				t.Errorf("params differ between input_pos 3 and 9")
			}
		})
	}
}

package graph

import (
	"fmt"
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestAnalyzeHalfKV pins which KV caches Limits.HalfKVCache holds as
// halves (Analysis.HalfKV, deferred): constants or prepack outputs only
// the cache ops use, with an even head_dim; a cache that is a graph input
// or output, that another op reads, or with an odd head_dim stays float32,
// as does every cache without the option.
func TestAnalyzeHalfKV(t *testing.T) {
	f := serialization.Float32
	type ids struct{ k, v int32 }
	for _, c := range []struct {
		name   string
		d      uint32
		direct bool // the constants themselves, not prepacked
		input  bool // the caches are graph inputs
		extra  func(b *serialization.Builder, kc, vc int32) []int32
		off    bool
		want   func(kv ids) []int32
	}{
		{name: "prepacked", d: 8, want: func(kv ids) []int32 { return []int32{kv.k, kv.v} }},
		{name: "constant", d: 6, direct: true, want: func(kv ids) []int32 { return []int32{kv.k, kv.v} }},
		{name: "v output", d: 8, extra: func(b *serialization.Builder, kc, vc int32) []int32 { return []int32{vc} },
			want: func(kv ids) []int32 { return []int32{kv.k} }},
		{name: "k read by clone", d: 8, extra: func(b *serialization.Builder, kc, vc int32) []int32 {
			out := b.Tensor(f, []uint32{1, 4, 2, 8}, -1)
			b.Op("aten.clone.default", kc, b.Null(), out)
			return []int32{out}
		}, want: func(kv ids) []int32 { return []int32{kv.v} }},
		{name: "odd head_dim", d: 5, want: func(ids) []int32 { return nil }},
		{name: "inputs", d: 8, input: true, want: func(ids) []int32 { return nil }},
		{name: "option off", d: 8, off: true, want: func(ids) []int32 { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := serialization.NewBuilder()
			qd, cd := []uint32{1, 1, 4, c.d}, []uint32{1, 4, 2, c.d}
			q, k, v := b.Tensor(f, qd, -1), b.Tensor(f, []uint32{1, 1, 2, c.d}, -1), b.Tensor(f, []uint32{1, 1, 2, c.d}, -1)
			in := []int32{q, k, v}
			var kc, vc int32
			switch {
			case c.input:
				kc, vc = b.Tensor(f, cd, -1), b.Tensor(f, cd, -1)
				in = append(in, kc, vc)
			case c.direct:
				kc, _ = b.NamedConst(f, cd, make([]byte, 4*8*int(c.d)))
				vc, _ = b.NamedConst(f, cd, make([]byte, 4*8*int(c.d)))
			default:
				kcc, _ := b.NamedConst(f, cd, make([]byte, 4*8*int(c.d)))
				vcc, _ := b.NamedConst(f, cd, make([]byte, 4*8*int(c.d)))
				kc, vc = b.Tensor(f, cd, -1), b.Tensor(f, cd, -1)
				b.Op("et_vk.prepack.default", kcc, kc)
				b.Op("et_vk.prepack.default", vcc, vc)
			}
			b.Inputs(in...)
			out := b.Tensor(f, qd, -1)
			b.Op("sdpa_with_kv_cache.default", q, k, v, kc, vc, b.Int(0), b.Int(1), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
			outs := []int32{out}
			if c.extra != nil {
				outs = append(outs, c.extra(b, kc, vc)...)
			}
			b.Outputs(outs...)
			blob, named, err := b.Decode()
			if err != nil {
				t.Fatal(err)
			}
			a, err := Analyze(blob, named, Limits{HalfKVCache: !c.off})
			if err != nil {
				t.Fatal(err)
			}
			want := c.want(ids{kc, vc})
			if !slices.Equal(a.HalfKV, want) {
				t.Fatalf("HalfKV %v, want %v", a.HalfKV, want)
			}
			for _, id := range want {
				if !a.Deferred[id] || !a.Tensors[id].Deferred {
					t.Errorf("half cache %d is not deferred", id)
				}
			}
			for _, id := range []int32{kc, vc} {
				if !slices.Contains(want, id) && a.Deferred[id] {
					t.Errorf("float32 cache %d is deferred: %s", id, fmt.Sprint(a.HalfKV))
				}
			}
		})
	}
}

package lower_test

import (
	"slices"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// analyze analyses b's graph with the load's kernel choices cfg.
func analyze(t *testing.T, b *serialization.Builder, cfg ops.Config) *graph.Analysis {
	t.Helper()
	blob, named, err := b.Decode()
	if err != nil {
		t.Fatal(err)
	}
	a, err := graph.Analyze(blob, named, graph.Limits{Kernels: cfg, HalfKVCache: cfg.HalfKVCache})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// opNames returns the names of chain ops ids.
func opNames(g *serialization.Graph, ids []int) []string {
	var out []string
	for _, i := range ids {
		out = append(out, g.Chain[i].Name)
	}
	return out
}

// TestDevicePosLlama: the position of a llama export (input_pos read by
// select_as_symint, its end input_pos + S) is held on the device with
// both cache op styles, with half KV caches and with 4-bit linears, and
// of the one-layer decoder (a SymInt input_pos); not where the table
// slices are not fused, nor where the load asks for the refresh path.
func TestDevicePosLlama(t *testing.T) {
	llama := func(cfg models.LlamaConfig) *serialization.Builder {
		l, err := models.NewLlama(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l.B
	}
	split := models.Stories260K
	split.SplitCache = true
	q4 := models.Stories260K
	q4.Q4Group = 32
	q4.Hidden = 192
	dec, err := models.NewDecoder(models.DefaultDecoder)
	if err != nil {
		t.Fatal(err)
	}
	exported := []string{"et_vk.select_as_symint.default", "add"}
	for _, c := range []struct {
		name      string
		b         *serialization.Builder
		cfg       ops.Config
		producers []string // nil: no position on the device
		symInput  bool     // the root is the SymInt input itself
	}{
		{"sdpa_with_kv_cache", llama(models.Stories260K), ops.Config{}, exported, false},
		{"update_cache+custom_sdpa", llama(split), ops.Config{}, exported, false},
		{"half KV caches", llama(models.Stories260K), ops.Config{HalfKVCache: true}, exported, false},
		{"split, half KV caches", llama(split), ops.Config{HalfKVCache: true}, exported, false},
		{"4-bit", llama(q4), ops.Config{}, exported, false},
		{"gpu family", llama(models.Stories260K), ops.Config{Family: ops.FamilyGPU}, exported, false},
		{"decoder", dec.B, ops.Config{}, []string{"add"}, true},
		{"unfused table slices", llama(models.Stories260K), ops.Config{NoElementwiseFusion: true}, nil, false},
		{"host position", llama(models.Stories260K), ops.Config{HostPosition: true}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := analyze(t, c.b, c.cfg)
			d := a.Lowered.DevicePos
			if c.producers == nil {
				if d != nil {
					t.Fatalf("position on the device: %+v, want none", d)
				}
				return
			}
			if d == nil {
				t.Fatal("no position on the device")
			}
			g := a.Graph
			if got := opNames(g, d.Producers); !slices.Equal(got, c.producers) {
				t.Errorf("producers %v, want %v", got, c.producers)
			}
			if len(d.Members) != 2 || d.Members[0] != d.Root {
				t.Errorf("members %v, want the root %d and its end", d.Members, d.Root)
			}
			if in := int32(g.InputIDs[1]); d.Input != in || (d.Root == in) != c.symInput {
				t.Errorf("root %d from input %d, want from input_pos (value %d)", d.Root, d.Input, in)
			}
		})
	}
}

// TestDevicePosRule: the graphs whose position stays in uniform params:
// a member read by an op that takes it as a value (a slice that is no
// rope table's), a member that is a graph output, a member derived with
// another input's value, a one-element position input something else
// reads too, a position input of more elements.
func TestDevicePosRule(t *testing.T) {
	f := serialization.Float32
	// build writes a decoder-like graph: p = select_as_symint(x) of an
	// int32 input x of xn elements (or a SymInt input), end = p + 2, the
	// cos/sin rows [p, end) read by one rope over q, k into an
	// update_cache; then what extra adds.
	build := func(tensorPos bool, xn uint32, extra func(b *serialization.Builder, x, p, end int32)) *serialization.Builder {
		b := serialization.NewBuilder()
		p := b.SymInt(0)
		x := p
		if tensorPos {
			x = b.Tensor(serialization.Int32, []uint32{xn}, -1)
		}
		b.Inputs(x)
		if tensorPos {
			b.Op("et_vk.select_as_symint.default", x, b.Int(0), b.Int(0), p)
		}
		end := b.SymInt(0)
		b.Op("add", p, b.Int(2), end)
		cosT := b.InlineConst(f, []uint32{16, 4}, make([]byte, 16*4*4))
		sinT := b.InlineConst(f, []uint32{16, 4}, make([]byte, 16*4*4))
		cos, sin := b.Tensor(f, []uint32{2, 4}, -1), b.Tensor(f, []uint32{2, 4}, -1)
		b.Op("aten.slice_copy.Tensor", cosT, b.Int(0), p, end, b.Int(1), cos)
		b.Op("aten.slice_copy.Tensor", sinT, b.Int(0), p, end, b.Int(1), sin)
		q, k := b.Tensor(f, []uint32{1, 2, 2, 8}, -1), b.Tensor(f, []uint32{1, 2, 1, 8}, -1)
		b.Inputs(q, k)
		qr, kr := b.Tensor(f, []uint32{1, 2, 2, 8}, -1), b.Tensor(f, []uint32{1, 2, 1, 8}, -1)
		b.Op("et_vk.apply_rotary_emb.default", q, k, cos, sin, b.ValueList(qr, kr))
		cacheC := b.InlineConst(f, []uint32{1, 16, 1, 8}, make([]byte, 16*8*4))
		cache := b.Tensor(f, []uint32{1, 16, 1, 8}, -1)
		b.Op("et_vk.prepack.default", cacheC, cache)
		b.Op("update_cache.default", kr, cache, p, b.Tensor(f, []uint32{1}, -1))
		b.Outputs(qr)
		if extra != nil {
			extra(b, x, p, end)
		}
		return b
	}
	for _, c := range []struct {
		name     string
		b        *serialization.Builder
		onDevice bool
	}{
		{"tensor position", build(true, 1, nil), true},
		{"SymInt position", build(false, 1, nil), true},
		{"slice read by a neg", build(true, 1, func(b *serialization.Builder, x, p, end int32) {
			t := b.InlineConst(f, []uint32{16, 4}, make([]byte, 16*4*4))
			r, o := b.Tensor(f, []uint32{2, 4}, -1), b.Tensor(f, []uint32{2, 4}, -1)
			b.Op("aten.slice_copy.Tensor", t, b.Int(0), p, end, b.Int(1), r)
			b.Op("aten.neg.default", r, o)
			b.Outputs(o)
		}), false},
		{"end is an output", build(true, 1, func(b *serialization.Builder, x, p, end int32) { b.Outputs(end) }), false},
		{"end plus another input", build(true, 1, func(b *serialization.Builder, x, p, end int32) {
			s, e2 := b.SymInt(0), b.SymInt(0)
			b.Inputs(s)
			b.Op("add", end, s, e2)
		}), false},
		{"position input read on the device too", build(true, 1, func(b *serialization.Builder, x, p, end int32) {
			o := b.Tensor(serialization.Int32, []uint32{1}, -1)
			b.Op("aten.neg.default", x, o)
			b.Outputs(o)
		}), false},
		{"position input of two elements", build(true, 2, nil), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := analyze(t, c.b, ops.Config{})
			if d := a.Lowered.DevicePos; (d != nil) != c.onDevice {
				t.Errorf("position on the device: %v (%+v), want %v (plan %s)", d != nil, d, c.onDevice, a.Lowered)
			}
		})
	}
}

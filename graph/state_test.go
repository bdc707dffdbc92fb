package graph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// loadDecoderWith is loadDecoder with kernel choices.
func loadDecoderWith(t testing.TB, d *models.Decoder, k ops.Config) *graph.WebGPUGraph {
	t.Helper()
	return loadBuilder(t, d.B, graph.Options{Kernels: k})
}

// TestStateSwap runs two sequences through one decoder graph, swapping
// their KV caches through StateStores (only the filled prefix copied),
// and checks every step's outputs bit for bit against a graph that runs
// that sequence alone. A forked store (CopyStateStore) continues as its
// original does. Both cache op styles, float32 and half KV caches.
func TestStateSwap(t *testing.T) {
	ctx := context.Background()
	for _, split := range []bool{false, true} {
		for _, half := range []bool{false, true} {
			t.Run(fmt.Sprintf("split=%v/half=%v", split, half), func(t *testing.T) {
				cfg := models.DefaultDecoder
				cfg.SplitCache = split
				d, err := models.NewDecoder(cfg)
				if err != nil {
					t.Fatal(err)
				}
				k := ops.Config{HalfKVCache: half}
				g := loadDecoderWith(t, d, k)
				aloneA, aloneB := loadDecoderWith(t, d, k), loadDecoderWith(t, d, k)

				st := g.StateTensors()
				if len(st) != 2 {
					t.Fatalf("state tensors %+v, want the two caches", st)
				}
				elem := int64(4)
				if half {
					elem = 2
				}
				var whole int64
				for _, s := range st {
					if s.Half != half || s.Positions != cfg.MaxSeq || s.RowBytes != cfg.KVHeads*cfg.HeadDim*elem || s.Bytes < s.RowBytes*s.Positions {
						t.Errorf("state tensor %+v: want %d positions of %d bytes, half %v", s, cfg.MaxSeq, cfg.KVHeads*cfg.HeadDim*elem, half)
					}
					whole += s.Bytes
				}
				a, err := g.NewStateStore()
				if err != nil {
					t.Fatal(err)
				}
				defer a.Release()
				b, err := g.NewStateStore()
				if err != nil {
					t.Fatal(err)
				}
				defer b.Release()
				if a.Bytes() < whole || a.Buffers() != 2 {
					t.Errorf("store of %d bytes in %d buffers, want %d in 2", a.Bytes(), a.Buffers(), whole)
				}

				step := func(what string, alone *graph.WebGPUGraph, tokens []int32, pos int64) {
					t.Helper()
					got, err := g.Execute(ctx, d.Inputs(tokens, pos))
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					want, err := alone.Execute(ctx, d.Inputs(tokens, pos))
					if err != nil {
						t.Fatalf("%s alone: %v", what, err)
					}
					for j := range got {
						if !bytes.Equal(got[j].Data, want[j].Data) {
							t.Errorf("%s: output %d differs from the sequence run alone", what, j)
						}
					}
				}
				saved := func(n, got int64, err error) {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
					if want := 2 * n * cfg.KVHeads * cfg.HeadDim * elem; got != want {
						t.Errorf("copied %d bytes for %d positions, want %d", got, n, want)
					}
				}
				// A: 3 tokens. B starts at 0 on A's cache rows.
				step("A prefill", aloneA, []int32{5, 17, 42}, 0)
				n, err := g.SaveState(a, 3)
				saved(3, n, err)
				step("B prefill", aloneB, []int32{9, 1, 30, 2, 7}, 0)
				step("B decode", aloneB, []int32{11}, 5)
				n, err = g.SaveState(b, 6)
				saved(6, n, err)
				// Back to A: rows 3..5 still hold B's, and are written
				// before attention reads them.
				n, err = g.RestoreState(a, 3)
				saved(3, n, err)
				step("A decode", aloneA, []int32{8}, 3)
				step("A decode 2", aloneA, []int32{3}, 4)
				n, err = g.SaveState(a, 5)
				saved(5, n, err)
				n, err = g.RestoreState(b, 6)
				saved(6, n, err)
				step("B decode 2", aloneB, []int32{4}, 6)

				// A fork of A's store continues as A.
				c, err := g.NewStateStore()
				if err != nil {
					t.Fatal(err)
				}
				defer c.Release()
				n, err = g.CopyStateStore(c, a, 5)
				saved(5, n, err)
				n, err = g.RestoreState(c, 5)
				saved(5, n, err)
				step("fork of A", aloneA, []int32{6}, 5)
			})
		}
	}
}

// cacheGraph builds one sdpa_with_kv_cache over constant caches of batch
// bsz (no prepack: the op keeps writable copies), or, with none, a graph
// without state.
func cacheGraph(t *testing.T, bsz uint32, none bool) *graph.WebGPUGraph {
	t.Helper()
	f := serialization.Float32
	b := serialization.NewBuilder()
	q := b.Tensor(f, []uint32{bsz, 1, 4, 8}, -1)
	out := b.Tensor(f, []uint32{bsz, 1, 4, 8}, -1)
	if none {
		b.Inputs(q)
		b.Op("aten.relu.default", q, out)
		b.Outputs(out)
	} else {
		k, v := b.Tensor(f, []uint32{bsz, 1, 2, 8}, -1), b.Tensor(f, []uint32{bsz, 1, 2, 8}, -1)
		cd := []uint32{bsz, 6, 2, 8}
		kc, _ := b.NamedConst(f, cd, make([]byte, 4*6*2*8*int(bsz)))
		vc, _ := b.NamedConst(f, cd, make([]byte, 4*6*2*8*int(bsz)))
		b.Inputs(q, k, v)
		b.Op("sdpa_with_kv_cache.default", q, k, v, kc, vc, b.Int(0), b.Int(1), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
		b.Outputs(out)
	}
	return loadBuilder(t, b, graph.Options{})
}

// TestStateLayouts: constant caches get their writable copies as state; a
// cache of batch 1 is position-major, one of batch 2 is copied whole; a
// graph without cache ops has no state and an empty store.
func TestStateLayouts(t *testing.T) {
	for _, c := range []struct {
		name      string
		bsz       uint32
		none      bool
		positions int64
		row       int64
	}{
		{name: "batch 1", bsz: 1, positions: 6, row: 2 * 8 * 4},
		{name: "batch 2", bsz: 2},
		{name: "stateless", bsz: 1, none: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := cacheGraph(t, c.bsz, c.none)
			st := g.StateTensors()
			want := 2
			if c.none {
				want = 0
			}
			if len(st) != want {
				t.Fatalf("state %+v, want %d tensors", st, want)
			}
			s, err := g.NewStateStore()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release()
			var total int64
			for _, e := range st {
				if e.Positions != c.positions || e.RowBytes != c.row {
					t.Errorf("state tensor %+v: want %d positions of %d bytes", e, c.positions, c.row)
				}
				want := c.row // one position
				if c.row == 0 {
					want = e.Bytes // not position-major: whole
				}
				if got := e.PrefixBytes(1); got != want {
					t.Errorf("PrefixBytes(1) = %d, want %d", got, want)
				}
				total += e.PrefixBytes(1)
			}
			n, err := g.SaveState(s, 1)
			if err != nil || n != total {
				t.Errorf("SaveState: %d bytes, %v; want %d", n, err, total)
			}
		})
	}
}

// TestStateStoreRejected: a store of another graph, a released store and
// a closed graph are errors; nothing is copied.
func TestStateStoreRejected(t *testing.T) {
	g, other := cacheGraph(t, 1, false), cacheGraph(t, 1, false)
	s, err := other.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if _, err := g.SaveState(s, 1); !errors.Is(err, graph.ErrStateStore) {
		t.Errorf("save into another graph's store: %v, want ErrStateStore", err)
	}
	if _, err := g.RestoreState(nil, 1); !errors.Is(err, graph.ErrStateStore) {
		t.Errorf("restore from nil: %v, want ErrStateStore", err)
	}
	mine, err := g.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.CopyStateStore(mine, s, 1); !errors.Is(err, graph.ErrStateStore) {
		t.Errorf("copy from another graph's store: %v, want ErrStateStore", err)
	}
	mine.Release()
	mine.Release()
	if mine.Bytes() != 0 || mine.Buffers() != 0 {
		t.Errorf("released store: %d bytes in %d buffers", mine.Bytes(), mine.Buffers())
	}
	if _, err := g.RestoreState(mine, 1); !errors.Is(err, graph.ErrStateStore) {
		t.Errorf("restore from a released store: %v, want ErrStateStore", err)
	}
	g.Close()
	if _, err := g.NewStateStore(); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("NewStateStore on a closed graph: %v, want ErrClosed", err)
	}
	if _, err := g.SaveState(s, 1); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("SaveState on a closed graph: %v, want ErrClosed", err)
	}
}

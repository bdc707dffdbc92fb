package graph_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// attnDispatches counts g's recorded dispatches of attention.wgsl (the
// attentions, whichever op or fused group records them, and the cache
// updates), and the workgroups of the largest.
func attnDispatches(g *graph.WebGPUGraph) (n int, most uint32) {
	for _, d := range g.Dispatches() {
		if strings.HasPrefix(d.Kernel, "attention.wgsl") {
			n++
			most = max(most, d.Groups[0]*max(d.Groups[1], 1))
		}
	}
	return n, most
}

// TestDecodeSplitAttention decodes a two-layer GQA llama with a 1,024-row
// cache under the gpu family, whose decode attention is then split over
// the keys (ops gpu/attn-split: blocks of 64 keys, one workgroup each, and
// a dispatch merging them), one-token steps at positions around the block
// edges (63, 64, 65 keys; 128, 129; the cache's last row) after a 3-token
// prefill (not split). With the position on the device the moving
// position re-records and refreshes nothing: the kernels read the live key
// count from the position tensor. Every step's logits match the reference
// replay (the half one for half caches) and a load with the split skipped
// by name (Config.SkipKernels), whose attentions take one dispatch less
// each and one workgroup per kv head. Both cache op styles, float32 and
// half KV caches, both memory plans.
func TestDecodeSplitAttention(t *testing.T) {
	type step struct {
		tokens []int32
		pos    int64
	}
	steps := []step{{[]int32{1, 7, 23}, 0}}
	for _, p := range []int64{3, 4, 62, 63, 64, 65, 127, 128, 129, 700, 1023} {
		steps = append(steps, step{[]int32{int32(p % 40)}, p})
	}
	for _, split := range []bool{false, true} {
		for _, half := range []bool{false, true} {
			for _, plan := range models.Plans {
				t.Run(fmt.Sprintf("split_cache=%v/half=%v/plan=%s", split, half, plan), func(t *testing.T) {
					cfg := models.LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 40,
						MaxSeq: 1024, MaxTokens: 4, Eps: 1e-5, RopeTheta: 10000, Seed: 3, SplitCache: split}
					l, err := models.NewLlama(cfg, nil)
					if err != nil {
						t.Fatal(err)
					}
					models.ApplyPlan(l.B, plan)
					k := ops.Config{Family: ops.FamilyGPU, HalfKVCache: half}
					old := k
					old.SkipKernels = "gpu/attn-split"
					g, og := loadBuilder(t, l.B, graph.Options{Kernels: k}), loadBuilder(t, l.B, graph.Options{Kernels: old})
					if !g.PositionStats().OnDevice {
						t.Fatal("the position is not on the device")
					}
					ref := l.NewReference()
					if half {
						ref = l.NewHalfKVReference()
					}
					ctx := context.Background()
					for i, s := range steps {
						what := fmt.Sprintf("step %d (input_pos %d, %d tokens)", i, s.pos, len(s.tokens))
						before, follows := g.RecordStats(), g.PositionStats().Follows
						got, err := g.Execute(ctx, l.Inputs(s.tokens, s.pos))
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						after := g.RecordStats()
						if i > 1 {
							rr, rf, fl := after.Rerecords-before.Rerecords, after.Refreshes-before.Refreshes, g.PositionStats().Follows-follows
							if rr != 0 || rf != 0 || fl != 1 {
								t.Errorf("%s: %d re-records, %d refreshes, %d steps following the position on the device, want 0, 0, 1", what, rr, rf, fl)
							}
						}
						want, err := og.Execute(ctx, l.Inputs(s.tokens, s.pos))
						if err != nil {
							t.Fatalf("%s: split skipped: %v", what, err)
						}
						n, most := attnDispatches(g)
						on, omost := attnDispatches(og)
						if len(s.tokens) == 1 && (n != on+int(cfg.Layers) || most != omost*16) {
							t.Errorf("%s: %d attention dispatches of at most %d workgroups, split skipped %d of %d: want %d more, 16 times the workgroups", what, n, most, on, omost, cfg.Layers)
						}
						if len(s.tokens) > 1 && (n != on || most != omost) {
							t.Errorf("%s: a prefill's attention: %d dispatches of at most %d workgroups, split skipped %d of %d: want the same", what, n, most, on, omost)
						}
						wantRef, err := ref.Step(s.tokens, s.pos)
						if err != nil {
							t.Fatalf("%s: reference: %v", what, err)
						}
						if _, err := models.Compare(got[0], wantRef, models.Tolerance{Abs: 1e-4, Rel: 1e-4}); err != nil {
							t.Errorf("%s: logits: %v", what, err)
						}
						if _, err := models.Compare(want[0], wantRef, models.Tolerance{Abs: 1e-4, Rel: 1e-4}); err != nil {
							t.Errorf("%s: logits, split skipped: %v", what, err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkAttnKernels times one decode attention (llama.custom_sdpa
// over a KV cache, one query row) with the split kernel (ops
// gpu/attn-split) and with it skipped (one workgroup per kv head), loads
// alternated step by step, at Llama 3.2 1B's heads (32 query, 8 kv, 64
// dims) and Stories110M's (12, 12, 64), over a 2,048-row cache at
// positions 100, 1,000 and 2,000. It reports the median µs per step of
// each. Both loads take the gpu family: the attention kernel is the same
// in both families, so this is what decides the cpu family's entry on a
// CPU adapter too.
func BenchmarkAttnKernels(b *testing.B) {
	ctx := context.Background()
	const maxS = 2048
	for _, h := range []struct{ hq, hkv, d int64 }{{32, 8, 64}, {12, 12, 64}} {
		for _, pos := range []int64{100, 1000, 2000} {
			b.Run(fmt.Sprintf("heads=%d-%d/pos=%d", h.hq, h.hkv, pos), func(b *testing.B) {
				sb, q := attnGraph(h.hq, h.hkv, h.d, maxS)
				var gs []*graph.WebGPUGraph
				for _, skip := range []string{"", "gpu/attn-split"} {
					gs = append(gs, loadBuilder(b, sb, graph.Options{Kernels: ops.Config{Family: ops.FamilyGPU, SkipKernels: skip}}))
				}
				in := []graph.Tensor{graph.Float32Tensor([]int64{1, 1, h.hq, h.d}, q), graph.Int64Tensor([]int64{1}, []int64{pos})}
				times := make([][]float64, len(gs))
				for i := 0; i < b.N; i++ {
					for k, g := range gs {
						t0 := time.Now()
						if _, err := g.Execute(ctx, in); err != nil {
							b.Fatal(err)
						}
						times[k] = append(times[k], float64(time.Since(t0).Microseconds()))
					}
				}
				for k, name := range []string{"split-µs/step", "one-workgroup-µs/step"} {
					slices.Sort(times[k])
					b.ReportMetric(times[k][len(times[k])/2], name)
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// attnGraph is a graph of one llama.custom_sdpa: q [1, 1, hq, d] and
// input_pos (int64 [1], read through select_as_symint, as the llama
// export does) in, random caches [1, maxS, hkv, d] held as prepack
// outputs; and q's random values.
func attnGraph(hq, hkv, d, maxS int64) (*serialization.Builder, []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.Float64()*2 - 1)
		}
		return v
	}
	f := serialization.Float32
	sb := serialization.NewBuilder()
	q := sb.Tensor(f, []uint32{1, 1, uint32(hq), uint32(d)}, -1)
	posT := sb.Tensor(serialization.Int64, []uint32{1}, -1)
	sb.Inputs(q, posT)
	pos := sb.SymInt(0)
	sb.Op("et_vk.select_as_symint.default", posT, sb.Int(0), sb.Int(-1), pos)
	var caches [2]int32
	for i := range caches {
		c, _ := sb.NamedConst(f, []uint32{1, uint32(maxS), uint32(hkv), uint32(d)}, f32le(rnd(maxS*hkv*d)))
		caches[i] = sb.Tensor(f, []uint32{1, uint32(maxS), uint32(hkv), uint32(d)}, -1)
		sb.Op("et_vk.prepack.default", c, caches[i])
	}
	out := sb.Tensor(f, []uint32{1, 1, uint32(hq), uint32(d)}, -1)
	sb.Op("llama.custom_sdpa.default", q, caches[0], caches[1], pos, sb.Null(), sb.Double(0), sb.Bool(true), sb.Null(), out)
	sb.Outputs(out)
	return sb, rnd(hq * d)
}

// f32le is v's little-endian bytes.
func f32le(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

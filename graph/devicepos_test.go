package graph_test

import (
	"bytes"
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

// tinyLlama is a two-layer llama export (grouped-query attention, prompts
// of up to 4 tokens, a 32-row cache) for the device-position tests.
var tinyLlama = models.LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 64,
	MaxSeq: 32, MaxTokens: 4, Eps: 1e-5, RopeTheta: 10000, Seed: 3}

// llamaInputs are a llama export's inputs: tokens [1, S] and input_pos [1].
func llamaInputs(tokens []int32, pos int64) []graph.Tensor {
	return []graph.Tensor{graph.Int32Tensor([]int64{1, int64(len(tokens))}, tokens), graph.Int64Tensor([]int64{1}, []int64{pos})}
}

// TestHeadPositionOnDevice decodes greedily with a Head, pipelined, on a
// llama export whose position the graph holds on the device, and on the
// same model loaded with HostPosition: the tokens are the same. Every
// fed step of the former (but the first after a prompt of several tokens,
// which re-records for one token) makes no queue write at all (its token
// and its position come from the previous step's head on the device,
// nothing is refreshed or re-recorded: RecordStats.Followed counts it).
// Between the
// sequences, steps at positions the host passes (a second sequence from
// position 0, then the first one's position again, as a session switch
// makes them) write the position. Both cache op styles, float32 and half
// KV caches, both kernel families; a vocabulary of 33,000 in the gpu
// family takes the two-level argmax, whose second dispatch advances the
// position.
func TestHeadPositionOnDevice(t *testing.T) {
	ctx := context.Background()
	dev := graph.OpenTestDevice(t)
	type variant struct {
		split, half bool
		fam         ops.Family
		vocab       int64
	}
	var variants []variant
	for _, split := range []bool{false, true} {
		for _, half := range []bool{false, true} {
			for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
				variants = append(variants, variant{split, half, fam, tinyLlama.Vocab})
			}
		}
	}
	variants = append(variants, variant{false, false, ops.FamilyGPU, 33000})
	for _, v := range variants {
		split, half, fam := v.split, v.half, v.fam
		{
			{
				t.Run(fmt.Sprintf("split=%v/half=%v/family=%v/vocab=%d", split, half, fam, v.vocab), func(t *testing.T) {
					cfg := tinyLlama
					cfg.SplitCache = split
					cfg.Vocab = v.vocab
					l, err := models.NewLlama(cfg, nil)
					if err != nil {
						t.Fatal(err)
					}
					kc := ops.Config{HalfKVCache: half, Family: fam}
					hostKC := kc
					hostKC.HostPosition = true
					var toks [2][]int32
					for k, c := range []ops.Config{kc, hostKC} {
						g := loadBuilder(t, l.B, graph.Options{Kernels: c})
						if ps := g.PositionStats(); ps.OnDevice != (k == 0) {
							t.Fatalf("position on the device: %v", ps.OnDevice)
						}
						h, err := g.NewHead(graph.HeadOptions{Logits: 0, Token: 0})
						if err != nil {
							t.Fatal(err)
						}
						if am, _ := h.Kernels(); (am == "gpu/argmax-split") != (v.vocab > 32768) {
							t.Fatalf("argmax kernel %s at a vocabulary of %d", am, v.vocab)
						}
						// seq decodes n tokens after prompt at pos, pipelined
						// two deep, checking each fed step's writes and stats.
						seq := func(prompt []int32, pos int64, n int) {
							st, err := h.Submit(ctx, llamaInputs(prompt, pos), graph.StepOptions{})
							if err != nil {
								t.Fatal(err)
							}
							queue := []graph.HeadStep{st}
							pos += int64(len(prompt))
							for i := 0; i < n; i++ {
								w0, rs0 := dev.QueueWrites(), g.RecordStats()
								next, err := h.Submit(ctx, llamaInputs([]int32{-1}, pos), graph.StepOptions{Fed: true})
								if err != nil {
									t.Fatalf("fed step at %d: %v", pos, err)
								}
								// The first one after a prompt of several tokens
								// re-records, for one token (its params written).
								if k == 0 && (i > 0 || len(prompt) == 1) {
									rs := g.RecordStats()
									if w := dev.QueueWrites() - w0; w != 0 {
										t.Errorf("fed step at %d: %d queue writes, want none", pos, w)
									}
									if rs.Rerecords != rs0.Rerecords || rs.Refreshes != rs0.Refreshes || rs.Followed != rs0.Followed+1 {
										t.Errorf("fed step at %d: record stats %+v after %+v, want one more Followed only", pos, rs, rs0)
									}
								}
								pos++
								var tok int32
								tok, queue = waitOldest(ctx, t, h, append(queue, next))
								toks[k] = append(toks[k], tok)
							}
							for _, st := range queue { // the step past the last read token
								if _, err := h.Wait(ctx, st); err != nil {
									t.Fatal(err)
								}
							}
						}
						seq([]int32{5, 17, 42}, 0, 10)
						seq([]int32{3}, 0, 6)
						seq([]int32{9, 4}, 13, 8)
						// An Execute at a new position writes it too.
						if _, err := g.Execute(ctx, llamaInputs([]int32{7}, 2)); err != nil {
							t.Fatal(err)
						}
						seq([]int32{8}, 3, 5)
					}
					if !slices.Equal(toks[0], toks[1]) {
						t.Errorf("tokens with the position on the device %v, with HostPosition %v", toks[0], toks[1])
					}
				})
			}
		}
	}
}

// offsetGraph writes a rope (tables read whole from row p) and a KV-cache
// attention whose input_pos is c = p + 3 (so its kernels read the
// position plus an offset): sdpa_with_kv_cache, fused with the rope, or
// with split, update_cache ×2 and custom_sdpa. Inputs q [1,1,4,8], k and
// v [1,1,2,8] and the SymInt p; output the attention.
func offsetGraph(split bool) *serialization.Builder {
	f := serialization.Float32
	b := serialization.NewBuilder()
	q, k, v := b.Tensor(f, []uint32{1, 1, 4, 8}, -1), b.Tensor(f, []uint32{1, 1, 2, 8}, -1), b.Tensor(f, []uint32{1, 1, 2, 8}, -1)
	p := b.SymInt(0)
	b.Inputs(q, k, v, p)
	end, c := b.SymInt(0), b.SymInt(0)
	b.Op("add", p, b.Int(1), end)
	b.Op("add", p, b.Int(3), c)
	table := func(seed int) int32 {
		data := make([]byte, 0, 16*4*4)
		for i := range 16 * 4 {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(math.Cos(float64(seed*97+i)))))
		}
		return b.InlineConst(f, []uint32{16, 4}, data)
	}
	cosT, sinT := table(1), table(2)
	cos, sin := b.Tensor(f, []uint32{1, 4}, -1), b.Tensor(f, []uint32{1, 4}, -1)
	b.Op("aten.slice_copy.Tensor", cosT, b.Int(0), p, end, b.Int(1), cos)
	b.Op("aten.slice_copy.Tensor", sinT, b.Int(0), p, end, b.Int(1), sin)
	var caches [2]int32 // prepacked before the compute ops, as the exporter does
	for i := range caches {
		cc := b.InlineConst(f, []uint32{1, 24, 2, 8}, make([]byte, 24*2*8*4))
		caches[i] = b.Tensor(f, []uint32{1, 24, 2, 8}, -1)
		b.Op("et_vk.prepack.default", cc, caches[i])
	}
	qr, kr := b.Tensor(f, []uint32{1, 1, 4, 8}, -1), b.Tensor(f, []uint32{1, 1, 2, 8}, -1)
	b.Op("et_vk.apply_rotary_emb.default", q, k, cos, sin, b.ValueList(qr, kr))
	out := b.Tensor(f, []uint32{1, 1, 4, 8}, -1)
	if split {
		b.Op("update_cache.default", kr, caches[0], c, b.Tensor(f, []uint32{1}, -1))
		b.Op("update_cache.default", v, caches[1], c, b.Tensor(f, []uint32{1}, -1))
		b.Op("llama.custom_sdpa.default", qr, caches[0], caches[1], c, b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	} else {
		b.Op("sdpa_with_kv_cache.default", qr, kr, v, caches[0], caches[1], c, b.Int(1), b.Null(), b.Double(0), b.Bool(true), b.Null(), out)
	}
	b.Outputs(out)
	return b
}

// TestDevicePosOffsets: kernels that read the position plus an offset
// (the cache ops given input_pos + 3, the rope its tables from input_pos)
// compute bit for bit what the same graph computes with HostPosition, at
// positions moving forward and back, both cache op styles; a position
// past the rope tables fails in both.
func TestDevicePosOffsets(t *testing.T) {
	ctx := context.Background()
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			b := offsetGraph(split)
			g := loadBuilder(t, b, graph.Options{})
			host := loadBuilder(t, b, graph.Options{Kernels: ops.Config{HostPosition: true}})
			rng := rand.New(rand.NewPCG(5, uint64(len(fmt.Sprint(split)))))
			vals := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = rng.Float32()*2 - 1
				}
				return v
			}
			follows := 0
			for _, p := range []int64{0, 1, 2, 3, 7, 4, 15, 16, 5, 6} {
				in := []graph.Tensor{graph.Float32Tensor([]int64{1, 1, 4, 8}, vals(32)), graph.Float32Tensor([]int64{1, 1, 2, 8}, vals(16)),
					graph.Float32Tensor([]int64{1, 1, 2, 8}, vals(16)), graph.Int64Tensor([]int64{}, []int64{p})}
				got, err := g.Execute(ctx, in)
				if p == 16 { // past the tables' 16 rows: both fail, then go on
					if _, herr := host.Execute(ctx, in); err == nil || herr == nil {
						t.Fatalf("position 16: errors %v and %v, want both to fail", err, herr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("position %d: %v", p, err)
				}
				want, err := host.Execute(ctx, in)
				if err != nil {
					t.Fatalf("position %d, HostPosition: %v", p, err)
				}
				if !bytes.Equal(got[0].Data, want[0].Data) {
					t.Errorf("position %d: the outputs differ from HostPosition's", p)
				}
				if p != 0 && p != 5 { // the first and the one after the error record
					follows++
				}
				// The kernels that read the position plus an offset.
				kinds := map[string]bool{"DevCacheOff:true": !split, "DevOff:true": split}
				for k, w := range kinds {
					found := false
					for _, d := range g.Dispatches() {
						found = found || strings.Contains(d.Kernel, k)
					}
					if found != w {
						t.Errorf("position %d: a kernel with %s: %v, want %v", p, k, found, w)
					}
				}
				if ps := g.PositionStats(); !ps.OnDevice || !ps.Clean || ps.Follows != follows {
					t.Errorf("position %d: %+v, want a clean position on the device, %d steps followed", p, ps, follows)
				}
			}
		})
	}
}

// BenchmarkStepHost times the host's part of a pipelined greedy step
// (HostStep: inputs, recording, position) at a moving position, on two
// loads of one llama export: its position on the device (the default)
// and in uniform params (HostPosition, refreshed at every step),
// alternating step by step so that the machine's noise falls on both.
// It reports the median µs per step of each. Run it with
//
//	go test ./graph -run '^$' -bench StepHost -benchtime 2000x
func BenchmarkStepHost(b *testing.B) {
	for _, shape := range []struct {
		name string
		cfg  models.LlamaConfig
	}{{"260k", models.Stories260K}, {"110m", models.Stories110M}} {
		b.Run(shape.name, func(b *testing.B) {
			l, err := models.NewLlama(shape.cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			gs := []*graph.WebGPUGraph{loadBuilder(b, l.B, graph.Options{}), loadBuilder(b, l.B, graph.Options{Kernels: ops.Config{HostPosition: true}})}
			l = nil
			ctx := context.Background()
			times := make([][]float64, len(gs))
			span := int(shape.cfg.MaxSeq) - 1
			for i := 0; i < b.N; i++ {
				in := llamaInputs([]int32{1}, int64(1+i%span))
				for k, g := range gs {
					t0 := time.Now()
					if err := graph.HostStep(ctx, g, in); err != nil {
						b.Fatal(err)
					}
					times[k] = append(times[k], float64(time.Since(t0).Nanoseconds())/1e3)
				}
			}
			for k, name := range []string{"device-µs/step", "host-µs/step"} {
				slices.Sort(times[k])
				b.ReportMetric(times[k][len(times[k])/2], name)
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

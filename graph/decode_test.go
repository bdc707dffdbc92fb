package graph_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/ops"
)

// newPlannedDecoder builds models.DefaultDecoder, with split caches or
// not, under the memory plan plan.
func newPlannedDecoder(t testing.TB, split bool, plan models.Plan) *models.Decoder {
	t.Helper()
	cfg := models.DefaultDecoder
	cfg.SplitCache = split
	d, err := models.NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	models.ApplyPlan(d.B, plan)
	return d
}

// loadDecoder loads d's graph on the test device.
func loadDecoder(t testing.TB, d *models.Decoder) *graph.WebGPUGraph {
	t.Helper()
	return loadBuilder(t, d.B, graph.Options{})
}

// TestDecodeMovingPosRefreshes: decode steps whose input_pos moves (and
// whose token count does not) re-record nothing. With the position on the
// device (the default) they refresh nothing either: the kernels read
// input_pos from the graph's position tensor, and the graph only moves
// its SymInt values (PositionStats.Follows). With ops.Config.HostPosition
// only the params of the ops that read input_pos are rewritten, through
// their update functions. Every step's outputs are bit-identical to those
// of a second loaded graph that re-records every op at every step, and
// match the reference interpreter replaying the same steps. A new token
// count still re-records, and so does an input_pos past the cache, which
// is then an error (the cache op's own check), after which decoding goes
// on. Both cache op styles, both memory plans, both kernel families.
func TestDecodeMovingPosRefreshes(t *testing.T) {
	type step struct {
		tokens []int32
		pos    int64
		// rerecord: the step must re-record (its token count differs
		// from the previous step's); otherwise it must refresh.
		rerecord bool
		bad      bool // input_pos + S past the cache: an error
	}
	steps := []step{
		{[]int32{5, 17, 42}, 0, true, false},
		{[]int32{7}, 3, true, false},
		{[]int32{88}, 4, false, false},
		{[]int32{1}, 5, false, false},
		{[]int32{64}, 6, false, false},
		{[]int32{2, 30}, 7, true, false},
		{[]int32{9, 3}, 9, false, false},
		{[]int32{9, 3}, 31, false, true},
		{[]int32{11, 4}, 11, true, false}, // after the error: re-recorded
		{[]int32{12}, 13, true, false},
		{[]int32{13}, 14, false, false},
		{[]int32{14}, 3, false, false}, // back: rows 3.. are overwritten
		{[]int32{15}, 4, false, false},
	}
	type variant struct {
		split bool
		plan  models.Plan
		kcfg  ops.Config
	}
	var variants []variant
	for _, split := range []bool{false, true} {
		for _, plan := range models.Plans {
			for _, host := range []bool{false, true} {
				for _, fam := range []ops.Family{ops.FamilyCPU, ops.FamilyGPU} {
					variants = append(variants, variant{split, plan, ops.Config{HostPosition: host, Family: fam}})
				}
			}
		}
	}
	for _, v := range variants {
		{
			split, plan, host := v.split, v.plan, v.kcfg.HostPosition
			t.Run(fmt.Sprintf("split=%v/plan=%s/host_position=%v/family=%v", split, plan, host, v.kcfg.Family), func(t *testing.T) {
				d := newPlannedDecoder(t, split, plan)
				g, fresh := loadDecoderWith(t, d, v.kcfg), loadDecoderWith(t, d, v.kcfg)
				if ps := g.PositionStats(); ps.OnDevice == host {
					t.Fatalf("position on the device: %v, want %v", ps.OnDevice, !host)
				}
				ref := d.NewReference()
				ctx := context.Background()
				for i, s := range steps {
					before, follows := g.RecordStats(), g.PositionStats().Follows
					graph.ForceRerecord(fresh)
					freshBefore := fresh.RecordStats()
					got, err := g.Execute(ctx, d.Inputs(s.tokens, s.pos))
					want, ferr := fresh.Execute(ctx, d.Inputs(s.tokens, s.pos))
					after := g.RecordStats()
					what := fmt.Sprintf("step %d (input_pos %d, %d tokens)", i, s.pos, len(s.tokens))
					if s.bad {
						if err == nil || ferr == nil {
							t.Fatalf("%s: errors %v and %v, want both to fail", what, err, ferr)
						}
						continue
					}
					if err != nil || ferr != nil {
						t.Fatalf("%s: %v / re-recorded every step: %v", what, err, ferr)
					}
					if n := fresh.RecordStats().Rerecords - freshBefore.Rerecords; n != 1 {
						t.Errorf("%s: the graph forced to re-record did so %d times", what, n)
					}
					rr, rf := after.Rerecords-before.Rerecords, after.Refreshes-before.Refreshes
					if s.rerecord && rr != 1 {
						t.Errorf("%s: %d re-records (%d refreshes), want 1", what, rr, rf)
					}
					if !s.rerecord && host && (rr != 0 || rf != 1) {
						t.Errorf("%s: %d re-records and %d refreshes, want 0 and 1", what, rr, rf)
					}
					if fl := g.PositionStats().Follows - follows; !s.rerecord && !host && (rr != 0 || rf != 0 || fl != 1) {
						t.Errorf("%s: %d re-records, %d refreshes and %d steps following the position on the device, want 0, 0 and 1", what, rr, rf, fl)
					}
					for j := range got {
						if !bytes.Equal(got[j].Data, want[j].Data) || fmt.Sprint(got[j].Shape) != fmt.Sprint(want[j].Shape) {
							t.Errorf("%s: output %d differs from the graph re-recorded at every step", what, j)
						}
					}
					wantRef, err := ref.Step(s.tokens, s.pos)
					if err != nil {
						t.Fatalf("%s: reference: %v", what, err)
					}
					for j := range wantRef {
						if _, err := models.Compare(got[j], wantRef[j], models.Tol); err != nil {
							t.Errorf("%s: output %d: %v", what, j, err)
						}
					}
				}
				// Every node a refresh re-ran re-ran through its update
				// functions: a step re-parses no op's arguments. On the
				// device, no params were patched: the refresh the bad
				// step tried (outside the recording's positions) failed.
				st := g.RecordStats()
				if host && (st.Patched == 0 || st.Rerun == 0 || st.Updated != st.Rerun) {
					t.Errorf("record stats %+v: want params patched, every node re-run through its update functions", st)
				}
				if !host && (st.Patched != 0 || st.Refreshes != 0) {
					t.Errorf("record stats %+v: want no refresh, no params patched", st)
				}
			})
		}
	}
}

// BenchmarkDecodeStepRefresh times one-token decode steps with a moving
// input_pos on three graphs of one decoder, step by step in rotating
// order so that the host's noise falls on all three alike: one that
// refreshes (this package's way), one forced to re-record every op at
// every step (what every such step cost before refresh existed) and,
// as the floor, one whose input_pos stays put. It reports the median
// step time of each.
func BenchmarkDecodeStepRefresh(b *testing.B) {
	for _, c := range benchDecoders() {
		for _, split := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/split=%v", c.name, split), func(b *testing.B) {
				cfg := c.cfg
				cfg.SplitCache = split
				d, err := models.NewDecoder(cfg)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				var gs [3]*graph.WebGPUGraph // refresh, re-record, fixed
				for k := range gs {
					gs[k] = loadDecoder(b, d)
					for _, s := range []struct {
						tokens []int32
						pos    int64
					}{{[]int32{3, 9, 27}, 0}, {[]int32{4}, 3}} { // prefill, then S = 1
						if _, err := gs[k].Execute(ctx, d.Inputs(s.tokens, s.pos)); err != nil {
							b.Fatal(err)
						}
					}
				}
				times := [3][]time.Duration{}
				before := gs[0].RecordStats()
				b.ResetTimer()
				for i := range b.N {
					for j := range gs {
						k := (i + j) % len(gs)
						pos := 4 + int64(i)%(cfg.MaxSeq-4)
						switch k {
						case 1:
							graph.ForceRerecord(gs[k])
						case 2:
							pos = 4 + (cfg.MaxSeq-4)/2 // about the moving ones' mean context
						}
						t0 := time.Now()
						if _, err := gs[k].Execute(ctx, d.Inputs([]int32{int32(i % 64)}, pos)); err != nil {
							b.Fatal(err)
						}
						times[k] = append(times[k], time.Since(t0))
					}
				}
				b.StopTimer()
				for k, unit := range []string{"refresh-ms/step", "rerecord-ms/step", "fixed-ms/step"} {
					slices.Sort(times[k])
					b.ReportMetric(float64(times[k][len(times[k])/2].Microseconds())/1000, unit)
				}
				after := gs[0].RecordStats()
				b.ReportMetric(float64(after.Rerecords-before.Rerecords)/float64(b.N), "rerecords/step")
			})
		}
	}
}

// benchDecoder is one decoder size of the benchmarks.
type benchDecoder struct {
	name string
	cfg  models.DecoderConfig
}

// benchDecoders are the default decoder and a larger one: Dim 512 in 8
// query heads of 64 over 4 key/value heads, a 512-position cache.
func benchDecoders() []benchDecoder {
	large := models.DefaultDecoder
	large.Dim, large.Heads, large.KVHeads, large.HeadDim, large.Hidden = 512, 8, 4, 64, 1024
	large.MaxSeq, large.Vocab = 512, 256
	return []benchDecoder{{"default", models.DefaultDecoder}, {"dim512seq512", large}}
}

// BenchmarkDecodeRecord times what a one-token decode step with a new
// input_pos costs on the host before the dispatches run: a refresh, or
// (rerecord) the full re-record every such step took before.
func BenchmarkDecodeRecord(b *testing.B) {
	for _, c := range benchDecoders() {
		for _, split := range []bool{false, true} {
			for _, full := range []bool{false, true} {
				name := "refresh"
				if full {
					name = "rerecord"
				}
				b.Run(fmt.Sprintf("%s/split=%v/%s", c.name, split, name), func(b *testing.B) {
					cfg := c.cfg
					cfg.SplitCache = split
					d, err := models.NewDecoder(cfg)
					if err != nil {
						b.Fatal(err)
					}
					g := loadDecoder(b, d)
					ctx := context.Background()
					if _, err := g.Execute(ctx, d.Inputs([]int32{4}, 3)); err != nil {
						b.Fatal(err)
					}
					before := g.RecordStats()
					b.ResetTimer()
					for i := range b.N {
						if err := graph.Prepare(ctx, g, d.Inputs([]int32{4}, 4+int64(i)%(cfg.MaxSeq-4)), full); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					after := g.RecordStats()
					b.ReportMetric(float64(after.Rerecords-before.Rerecords)/float64(b.N), "rerecords/op")
					b.ReportMetric(float64(after.Patched-before.Patched)/float64(b.N), "patched/op")
				})
			}
		}
	}
}

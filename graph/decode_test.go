package graph_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate/graph"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// loadDecoder loads d's graph on the test device.
func loadDecoder(t *testing.T, d *models.Decoder) *graph.WebGPUGraph {
	t.Helper()
	blob, err := d.B.Blob()
	if err != nil {
		t.Fatal(err)
	}
	named := serialization.NewNamedDataMap()
	for _, nb := range d.B.NamedBlobs() {
		if err := named.Add(nb.Key, nb.Data); err != nil {
			t.Fatal(err)
		}
	}
	g, err := graph.Load(context.Background(), graph.OpenTestDevice(t), blob, graph.Options{NamedData: named})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestDecodeMovingPosRefreshes: decode steps whose input_pos moves (and
// whose token count does not) re-record nothing: only the params of the
// ops that read input_pos are rewritten. Every step's outputs are
// bit-identical to those of a second loaded graph that re-records every
// op at every step, and match the reference interpreter replaying the
// same steps. A new token count still re-records, and so does an
// input_pos past the cache, which is then an error (the cache op's own
// check), after which decoding goes on. Both cache op styles, both
// memory plans.
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
	for _, split := range []bool{false, true} {
		for _, plan := range models.Plans {
			t.Run(fmt.Sprintf("split=%v/plan=%s", split, plan), func(t *testing.T) {
				cfg := models.DefaultDecoder
				cfg.SplitCache = split
				d, err := models.NewDecoder(cfg)
				if err != nil {
					t.Fatal(err)
				}
				models.ApplyPlan(d.B, plan)
				g, fresh := loadDecoder(t, d), loadDecoder(t, d)
				ref := d.NewReference()
				ctx := context.Background()
				for i, s := range steps {
					before := g.RecordStats()
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
					if !s.rerecord && (rr != 0 || rf != 1) {
						t.Errorf("%s: %d re-records and %d refreshes, want 0 and 1", what, rr, rf)
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
				if st := g.RecordStats(); st.Patched == 0 {
					t.Errorf("record stats %+v: no params patched", st)
				}
			})
		}
	}
}

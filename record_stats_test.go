package wgdelegate_test

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestModelRecordStats: a model's RecordStats count the re-recordings of
// new token counts and, for a moving input_pos, the steps that followed
// the position on the device (nothing re-run or patched) or, with
// KernelConfig.HostPosition, the refreshes.
func TestModelRecordStats(t *testing.T) {
	d, err := models.NewDecoder(models.DefaultDecoder)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(d.B, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []bool{false, true} {
		m := openModel(t, f, wgdelegate.WithKernels(wgdelegate.KernelConfig{HostPosition: host}))
		ctx := context.Background()
		// moved is the stats of a step at a new position only.
		moved := func(n int) wgdelegate.RecordStats {
			if host {
				return wgdelegate.RecordStats{Rerecords: 2, Refreshes: n}
			}
			return wgdelegate.RecordStats{Rerecords: 2, Followed: n}
		}
		for _, s := range []struct {
			tokens []int32
			pos    int64
			want   wgdelegate.RecordStats
		}{
			{[]int32{5, 17, 42}, 0, wgdelegate.RecordStats{Rerecords: 1}}, // 3 of at most 8 tokens
			{[]int32{7}, 3, wgdelegate.RecordStats{Rerecords: 2}},
			{[]int32{8}, 4, moved(1)},
			{[]int32{9}, 5, moved(2)},
			{[]int32{9}, 5, moved(2)}, // nothing changed
		} {
			if _, err := m.Execute(ctx, d.Inputs(s.tokens, s.pos)...); err != nil {
				t.Fatal(err)
			}
			got := m.RecordStats()
			got.Patched, got.Rerun, got.Updated = 0, 0, 0
			if got != s.want {
				t.Errorf("host position %v: after input_pos %d, %d tokens: %+v, want %+v", host, s.pos, len(s.tokens), got, s.want)
			}
		}
		st := m.RecordStats()
		if host && (st.Patched == 0 || st.Rerun == 0 || st.Updated != st.Rerun) {
			t.Errorf("%d params patched by %d nodes re-run, %d through their update functions; want some, all through them", st.Patched, st.Rerun, st.Updated)
		}
		if !host && (st.Patched != 0 || st.Rerun != 0) {
			t.Errorf("position on the device: %d params patched by %d nodes re-run, want none", st.Patched, st.Rerun)
		}
	}
}

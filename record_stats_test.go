package wgdelegate_test

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestModelRecordStats: a model's RecordStats count the re-recordings of
// new token counts and the refreshes of a moving input_pos.
func TestModelRecordStats(t *testing.T) {
	d, err := models.NewDecoder(models.DefaultDecoder)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Encode(d.B, true)
	if err != nil {
		t.Fatal(err)
	}
	m := openModel(t, f)
	ctx := context.Background()
	for _, s := range []struct {
		tokens []int32
		pos    int64
		want   wgdelegate.RecordStats
	}{
		{[]int32{5, 17, 42}, 0, wgdelegate.RecordStats{Rerecords: 1}}, // 3 of at most 8 tokens
		{[]int32{7}, 3, wgdelegate.RecordStats{Rerecords: 2}},
		{[]int32{8}, 4, wgdelegate.RecordStats{Rerecords: 2, Refreshes: 1}},
		{[]int32{9}, 5, wgdelegate.RecordStats{Rerecords: 2, Refreshes: 2}},
		{[]int32{9}, 5, wgdelegate.RecordStats{Rerecords: 2, Refreshes: 2}}, // nothing changed
	} {
		if _, err := m.Execute(ctx, d.Inputs(s.tokens, s.pos)...); err != nil {
			t.Fatal(err)
		}
		got := m.RecordStats()
		got.Patched, got.Rerun, got.Updated = 0, 0, 0
		if got != s.want {
			t.Errorf("after input_pos %d, %d tokens: %+v, want %+v", s.pos, len(s.tokens), got, s.want)
		}
	}
	if st := m.RecordStats(); st.Patched == 0 || st.Rerun == 0 || st.Updated != st.Rerun {
		t.Errorf("%d params patched by %d nodes re-run, %d through their update functions; want some, all through them", st.Patched, st.Rerun, st.Updated)
	}
}

package wgdelegate_test

import (
	"fmt"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
)

// TestE2EChunkedMLP: an MLP whose hidden weight is over a lowered binding
// limit (WithMaxBindingSize) holds it in chunks, with the weights bound
// directly or behind et_vk.prepack, under both memory plans, and run on
// dynamic batches (one recording per batch size, each finding the chunks
// and scratch outputs the load made) like the reference.
func TestE2EChunkedMLP(t *testing.T) {
	for _, prepacked := range []bool{false, true} {
		for _, plan := range models.Plans {
			t.Run(fmt.Sprintf("prepack=%v/plan=%s", prepacked, plan), func(t *testing.T) {
				// Weights [100, 16], [100, 100] and [9, 100]: 6400, 40000
				// and 3600 bytes; the limit holds 64 rows of the second.
				cfg := models.MLPConfig{MaxBatch: 8, In: 16, Hidden: 100, Out: 9, Seed: 7, Prepack: prepacked, Linears: 3}
				m := models.NewMLP(cfg)
				models.ApplyPlan(m.B, plan)
				f, err := models.Encode(m.B, true)
				if err != nil {
					t.Fatal(err)
				}
				model := openModel(t, f, wgdelegate.WithMaxBindingSize(64*100*4+16))
				if st := model.MemoryStats(); st.NumChunkedWeights != 1 || st.NumWeightChunks != 2 {
					t.Fatalf("MemoryStats: %d chunked weights in %d chunks, want 1 in 2", st.NumChunkedWeights, st.NumWeightChunks)
				}
				checkMLPBatches(t, model, m, []int64{1, 8, 5, 1}, 40)
			})
		}
	}
}

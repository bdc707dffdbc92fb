package llm

import "testing"

func TestSeqLen(t *testing.T) {
	for _, tc := range []struct{ cache, meta, want int64 }{
		{128, 0, 128}, {128, 64, 64}, {128, 256, 128}, {0, 64, 64}, {0, 0, 0},
	} {
		if got := seqLen(tc.cache, tc.meta); got != tc.want {
			t.Errorf("seqLen(cache %d, get_max_seq_len %d) = %d, want %d", tc.cache, tc.meta, got, tc.want)
		}
	}
}

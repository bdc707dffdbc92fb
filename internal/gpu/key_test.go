package gpu

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// TestPipelineKey pins the bytes behind a pipeline's content key: source,
// NUL, entry point, NUL, then one byte per binding (shaders.Binding's
// value). Packed-weight cache seeds contain the key, so a change here
// would make every cached packing stale.
func TestPipelineKey(t *testing.T) {
	for i, tc := range []struct {
		source, entry string
		layout        []shaders.Binding
		hashed        string
	}{
		{"src", "main", nil, "src\x00main\x00"},
		{"src", "main", []shaders.Binding{shaders.ReadWrite}, "src\x00main\x00\x01"},
		{"k", "e", shaders.Layout(2, 1, true), "k\x00e\x00\x00\x00\x01\x02"},
	} {
		sum := sha256.Sum256([]byte(tc.hashed))
		if got, want := PipelineKey(tc.source, tc.entry, tc.layout), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%d: PipelineKey(%q, %q, %v) = %s, want %s", i, tc.source, tc.entry, tc.layout, got, want)
		}
	}
}

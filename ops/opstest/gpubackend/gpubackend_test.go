package gpubackend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestRunBadBlob: bytes that are no delegate blob, or named data given
// twice under one key, fail Run with an error that says so, before the
// device is touched (GPU{} has none). ops/opstest's tests run every case
// through GPU on a device.
func TestRunBadBlob(t *testing.T) {
	b := serialization.NewBuilder()
	x := b.Tensor(serialization.Float32, []uint32{4}, -1)
	y := b.Tensor(serialization.Float32, []uint32{4}, -1)
	b.Op("aten.neg.default", x, y)
	b.Inputs(x)
	b.Outputs(y)
	raw, err := b.Blob()
	if err != nil {
		t.Fatal(err)
	}
	twice := []serialization.NamedBlob{{Key: "w", Data: []byte{1}}, {Key: "w", Data: []byte{2}}}
	for _, c := range []struct {
		name  string
		raw   []byte
		named []serialization.NamedBlob
		want  string
		is    error
	}{
		{"not a blob", []byte("not a delegate blob"), nil, "gpubackend: decode", serialization.ErrTruncated},
		{"named twice", raw, twice, "gpubackend: named data", serialization.ErrDuplicateKey},
	} {
		_, _, err := GPU{}.Run(context.Background(), c.raw, c.named, nil)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %v prefixed %q", c.name, err, c.is, c.want)
		}
	}
}

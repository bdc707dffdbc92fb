package gpu

import (
	"context"
	"testing"

	"github.com/wgdelegate/wgdelegate/shaders"
)

// TestManyDevices opens and closes devices repeatedly in one process, which
// crashed with the binding's own (unzeroed) instance descriptor.
func TestManyDevices(t *testing.T) {
	for i := 0; i < 8; i++ {
		d, err := Open(context.Background(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pipeline("inc", incWGSL, "main", []shaders.Binding{shaders.ReadWrite}); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

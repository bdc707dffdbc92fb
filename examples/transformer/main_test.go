package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTransformer runs the example end to end (a prefill and two decode
// steps); run fails if any step differs from the reference.
func TestTransformer(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir, 2); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"decoder.pte", "weights.ptd"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

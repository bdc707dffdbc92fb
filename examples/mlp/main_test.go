package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMLP runs the example end to end; run fails if the GPU result is off.
func TestMLP(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.pte", "weights.ptd"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

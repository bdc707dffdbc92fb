package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCNN runs the example end to end; run fails if the GPU result is off.
func TestCNN(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cnn.pte")); err != nil {
		t.Error(err)
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLlama runs the example end to end; run fails if a step's logits are
// off the reference or Generate disagrees with the checked steps.
func TestLlama(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir, 24); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"llama-fp32.pte", "llama-fp32.ptd", "llama-q4g16.pte", "llama-q4g16.ptd"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if err := run(dir, 100); err == nil {
		t.Error("-steps 100 with a 64-position cache: no error")
	}
}

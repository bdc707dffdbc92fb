package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate"
)

// TestRunGeneratedInputs: run without --input generates the inputs as
// bench does (generateInputs), says so in one stderr line after the
// outputs, and writes exactly what running those inputs given explicitly
// writes; for a float32 model and for a Llama with int32 tokens and an
// int64 position. With -q it prints nothing.
func TestRunGeneratedInputs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	dir := t.TempDir()
	llama, _, _ := writeGenModel(t, dir, "llama", 0)
	llamaData := strings.TrimSuffix(llama, ".pte") + ".ptd"
	for _, tc := range []struct {
		name, model string
		data        []string
		note        string
	}{
		{"float32", f.pteInline, nil, "input 0 float32 [2 3]"},
		{"llama", llama, []string{llamaData}, "input 0 int32 [1 8], input 1 int64 [1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			var dataArgs []string
			for _, d := range tc.data {
				dataArgs = append(dataArgs, "--data", d)
			}
			gen := filepath.Join(sub, "gen")
			code, stdout, stderr := invoke(t, append(append([]string{"run"}, dataArgs...), "--output-dir", gen, tc.model)...)
			if want := "wgdelegate: no --input: used generated inputs (seed 1): " + tc.note + "\n"; code != 0 || stderr != want {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, want)
			}
			if !strings.Contains(stdout, filepath.Join(gen, "output_0.npy")) {
				t.Fatalf("stdout %q", stdout)
			}

			// The same inputs, given explicitly.
			dev, release, err := openDevice(ctx, wgdelegate.DeviceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := wgdelegate.Open(ctx, tc.model, wgdelegate.WithDevice(dev), wgdelegate.WithDataFiles(tc.data...))
			if err != nil {
				release()
				t.Fatal(err)
			}
			inputs := generateInputs(m)
			m.Close()
			release()
			args := append([]string{"run"}, dataArgs...)
			for i, in := range inputs {
				args = append(args, "--input", writeNPY(t, sub, fmt.Sprintf("in%d.npy", i), in))
			}
			explicit := filepath.Join(sub, "explicit")
			code, _, stderr = invoke(t, append(args, "--output-dir", explicit, tc.model)...)
			if code != 0 || stderr != "" {
				t.Fatalf("explicit inputs: exit %d, stderr %q", code, stderr)
			}
			es, err := os.ReadDir(explicit)
			if err != nil || len(es) == 0 {
				t.Fatalf("explicit outputs: %v, %v", es, err)
			}
			for _, e := range es {
				want, _ := os.ReadFile(filepath.Join(explicit, e.Name()))
				got, err := os.ReadFile(filepath.Join(gen, e.Name()))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s with generated inputs differs from the explicit run's (%v)", e.Name(), err)
				}
			}
		})
	}
	code, stdout, stderr := invoke(t, "run", "-q", "--output-dir", filepath.Join(dir, "quiet"), f.pteInline)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("-q: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
)

// bigVocabLlama is a llama2.c-shaped model whose embedding and unshared
// classifier are each 270000 × 256 float32 (276 MB), over lavapipe's 128
// MiB maxStorageBufferBindingSize (and an H100's 256 MiB maxBufferSize):
// both are held in chunks (3 of at most 131008 rows on lavapipe). One
// layer keeps the rest tiny.
var bigVocabLlama = LlamaConfig{Dim: 256, Hidden: 512, Layers: 1, Heads: 8, KVHeads: 4, Vocab: 270000,
	MaxSeq: 32, MaxTokens: 1, Eps: 1e-5, RopeTheta: 10000, Seed: 27}

// TestChunkedLlamaMatchesRunC: a llama2.c checkpoint of random weights
// with a 270000-token vocabulary, written as a .pte/.ptd from the
// checkpoint as read back, decodes 16 greedy steps from BOS with run.c's
// tokens, and each step's logits agree with run.c's (run.c's forward
// pass compiled with a small driver, testdata/runc_logits.c). The load
// must hold the embedding and the classifier in chunks.
func TestChunkedLlamaMatchesRunC(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a 550 MB model")
	}
	cc := testenv.CCompiler(t)
	runC := testenv.RunCSource(t)
	const steps = 16
	dir := t.TempDir()
	bin := filepath.Join(dir, "runc_logits")
	if out, err := exec.Command(cc, "-O2", "-I", filepath.Dir(runC), "-o", bin, "testdata/runc_logits.c", "-lm").CombinedOutput(); err != nil {
		t.Fatalf("compiling run.c: %v\n%s", err, out)
	}
	cfg := bigVocabLlama
	var ckpt bytes.Buffer
	if err := WriteLlama2C(&ckpt, cfg, RandomLlamaWeights(cfg)); err != nil {
		t.Fatal(err)
	}
	ckptPath := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(ckptPath, ckpt.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, w, err := ReadLlama2C(ckpt.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	logitsPath := filepath.Join(dir, "logits.bin")
	if out, err := exec.Command(bin, ckptPath, "16", logitsPath).CombinedOutput(); err != nil {
		t.Fatalf("run.c: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(logitsPath)
	if err != nil {
		t.Fatal(err)
	}
	rec := 4 + 4*int(cfg.Vocab)
	if len(raw) != steps*rec {
		t.Fatalf("run.c wrote %d bytes, want %d", len(raw), steps*rec)
	}

	l, err := NewLlama(rc, w)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Encode(l.B, true)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, err := wgdelegate.Load(context.Background(), f.PTE, wgdelegate.WithData(f.PTD))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	load := time.Since(start)
	st := m.MemoryStats()
	if st.NumChunkedWeights != 2 || st.NumWeightChunks < 4 {
		t.Fatalf("MemoryStats: %d chunked weights in %d chunks, want the embedding and the classifier in chunks", st.NumChunkedWeights, st.NumWeightChunks)
	}
	token, worst := int32(1), 0.0
	start = time.Now()
	var last time.Duration
	for step := range steps {
		if step == steps/2 {
			last = time.Since(start)
		}
		rtok := int32(binary.LittleEndian.Uint32(raw[step*rec:]))
		if rtok != token {
			t.Fatalf("step %d: input token %d, run.c's %d", step, token, rtok)
		}
		got, err := m.Execute(context.Background(), l.Inputs([]int32{token}, int64(step))...)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		logits, err := got[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(logits) != int(cfg.Vocab) {
			t.Fatalf("step %d: %d logits, want %d", step, len(logits), cfg.Vocab)
		}
		want := raw[step*rec+4 : (step+1)*rec]
		for i, g := range logits {
			r := math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:]))
			d := math.Abs(float64(g - r))
			worst = max(worst, d)
			if d > 1e-4+1e-4*math.Abs(float64(r)) {
				t.Fatalf("step %d: logit %d is %g, run.c's %g", step, i, g, r)
			}
		}
		token = Argmax(logits, int(cfg.Vocab))
	}
	all := time.Since(start)
	t.Logf("load %v (%d chunked weights, %d chunks, %d MiB on the device); %d steps in %v (the last %d: %v a step); largest logit difference %.3g",
		load, st.NumChunkedWeights, st.NumWeightChunks, st.TotalBytes()>>20, steps, all, steps-steps/2, (all-last)/time.Duration(steps-steps/2), worst)
}

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/internal/testenv"
)

// writeCheckpoint writes cfg and w as the llama2.c checkpoint dir/name and
// returns its path.
func writeCheckpoint(t *testing.T, dir, name string, cfg models.LlamaConfig, w *models.LlamaWeights) string {
	t.Helper()
	var b bytes.Buffer
	if err := models.WriteLlama2C(&b, cfg, w); err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, b.Bytes())
}

// writeTokenizer writes a tokenizer.bin of vocab "<i>" pieces as
// dir/name.
func writeTokenizer(t *testing.T, dir, name string, vocab int) string {
	t.Helper()
	var b bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&b, vocab); err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, b.Bytes())
}

// buildRunC compiles llama2.c's run.c into dir, skipping the test when
// there is no C compiler or no run.c.
func buildRunC(t *testing.T, dir string) string {
	t.Helper()
	cc := testenv.CCompiler(t)
	src := testenv.RunCSource(t)
	bin := filepath.Join(dir, "run")
	if out, err := exec.Command(cc, "-O2", "-o", bin, src, "-lm").CombinedOutput(); err != nil {
		t.Fatalf("compiling run.c: %v\n%s", err, out)
	}
	return bin
}

// runCIDs runs run.c greedily for 64 steps from BOS on a checkpoint and
// returns the token ids it printed, and what it wrote to stderr (its
// speed).
func runCIDs(t *testing.T, bin, ckpt, tok string) ([]int32, string) {
	t.Helper()
	cmd := exec.Command(bin, ckpt, "-z", tok, "-t", "0", "-n", "64", "-i", "")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("run.c: %v\n%s", err, se.String())
	}
	ids := models.ParseLlama2CPieces(so.String())
	if len(ids) < 8 {
		t.Fatalf("run.c printed only %d tokens: %q", len(ids), so.String())
	}
	return ids, se.String()
}

// TestImportMatchesRunC: `import llama2c` on a checkpoint of random
// weights, then `generate --ids 1 -n 64 --temperature 0` on what it wrote,
// prints run.c's greedy tokens for the same checkpoint: float32 with a
// classifier of its own and with one shared with the embedding (as
// stories15M has), and with --q4 16 (run.c then runs the checkpoint of
// the dequantized weights, which is what the 4-bit kernels compute with).
// Skipped without a C compiler.
func TestImportMatchesRunC(t *testing.T) {
	dir := t.TempDir()
	runC := buildRunC(t, dir)
	tok := writeTokenizer(t, dir, "tokenizer.bin", int(genCfg.Vocab))
	for _, tc := range []struct {
		name   string
		shared bool
		q4     int64
	}{{"float32", false, 0}, {"float32 shared classifier", true, 0}, {"q4 16", false, 16}} {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			w := models.RandomLlamaWeights(genCfg)
			if tc.shared {
				// The classifier's scale (1/√dim) for both: with the
				// embedding's (1) the logits of the token just fed
				// dominate, and run.c stops at once on BOS.
				w.Embedding = w.Output
			}
			ckpt := writeCheckpoint(t, sub, "model.bin", genCfg, w)
			out := filepath.Join(sub, "out")
			args := []string{"import", "llama2c", "--tokenizer", tok, "-o", out, ckpt}
			if tc.q4 > 0 {
				args = append(args, "--q4", fmt.Sprint(tc.q4))
			}
			mustRun(t, args...)
			runCCkpt := ckpt
			if tc.q4 > 0 {
				runCCkpt = writeCheckpoint(t, sub, "dequantized.bin", genCfg, dequantized(genCfg, w, tc.q4))
			}
			want, _ := runCIDs(t, runC, runCCkpt, tok)
			got := parseIDs(t, mustRunStdout(t, "generate", filepath.Join(out, "model.pte"), "--data", filepath.Join(out, "model.ptd"),
				"--ids", "1", "-n", "64", "--temperature", "0"))
			if len(got) != 64 {
				t.Fatalf("generate printed %d tokens, want 64", len(got))
			}
			n := len(want)
			if !slices.Equal(got[:n], want) || (n < 64 && got[n] != 1) {
				t.Fatalf("generate's greedy tokens differ from run.c's:\n got %v\nwant %v (then BOS if shorter)", got, want)
			}
			t.Logf("%d tokens equal run.c's", n)
		})
	}
}

// TestImportFiles: what import writes and says: the output directory is
// created; the tokenizer is copied; files already there are kept unless
// --force; a tokenizer.bin beside the checkpoint is found; without a
// tokenizer none is written and stderr says so; -q and -v.
func TestImportFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := genCfg
	ckpt := writeCheckpoint(t, dir, "model.bin", cfg, models.RandomLlamaWeights(cfg))
	tok := writeTokenizer(t, dir, "tok512.bin", int(cfg.Vocab))
	out := filepath.Join(dir, "a", "b", "out")
	files := func(d string) []string {
		t.Helper()
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}

	code, stdout, stderr := invoke(t, "import", "llama2c", "--tokenizer", tok, "-o", out, ckpt)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"model.bin: llama2.c checkpoint, ", "dim 64, hidden 176, 5 layers, 8 heads (4 key/value), vocabulary 512, seq_len 128, its own classifier",
		"wrote " + filepath.Join(out, "model.pte") + " (", filepath.Join(out, "model.ptd") + " (", filepath.Join(out, "tokenizer.bin") + " (",
		"float32 linears, 128-position KV cache, up to 32 tokens per Execute",
		"run it: wgdelegate generate " + filepath.Join(out, "model.pte") + " --data " + filepath.Join(out, "model.ptd") +
			" --tokenizer " + filepath.Join(out, "tokenizer.bin") + ` --prompt "Once upon a time"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if got := files(out); !slices.Equal(got, []string{"model.ptd", "model.pte", "tokenizer.bin"}) {
		t.Fatalf("the output directory holds %v", got)
	}
	tokBytes, _ := os.ReadFile(tok)
	if got, _ := os.ReadFile(filepath.Join(out, "tokenizer.bin")); !bytes.Equal(got, tokBytes) {
		t.Error("tokenizer.bin is not a copy of --tokenizer")
	}
	ptd, _ := os.ReadFile(filepath.Join(out, "model.ptd"))

	// Files are kept without --force, replaced with it.
	mustFail(t, []string{filepath.Join(out, "model.pte"), "exists", "--force"}, "import", "llama2c", "--q4", "16", "-o", out, ckpt)
	if got, _ := os.ReadFile(filepath.Join(out, "model.ptd")); !bytes.Equal(got, ptd) {
		t.Fatal("a refused import changed model.ptd")
	}
	mustRun(t, "import", "llama2c", "--tokenizer", tok, "--q4", "16", "--force", "-o", out, ckpt)
	if got, _ := os.ReadFile(filepath.Join(out, "model.ptd")); len(got) >= len(ptd) {
		t.Fatalf("--force --q4 16: model.ptd has %d bytes, the float32 one %d", len(got), len(ptd))
	}

	// No tokenizer anywhere: none written, a note on stderr; with --force
	// the replaced model's tokenizer goes too.
	code, _, stderr = invoke(t, "import", "llama2c", "--force", "-o", out, ckpt)
	if code != 0 || !strings.Contains(stderr, "wgdelegate: no tokenizer") || !strings.Contains(stderr, "token ids") ||
		!strings.Contains(stderr, "removed "+filepath.Join(out, "tokenizer.bin")) {
		t.Fatalf("no tokenizer: exit %d, stderr %q", code, stderr)
	}
	if got := files(out); !slices.Equal(got, []string{"model.ptd", "model.pte"}) {
		t.Fatalf("without a tokenizer the output directory holds %v", got)
	}

	// A tokenizer.bin beside the checkpoint is used, and said to be.
	beside := writeTokenizer(t, dir, "tokenizer.bin", int(cfg.Vocab))
	out2 := filepath.Join(dir, "out2")
	code, stdout, stderr = invoke(t, "import", "llama2c", "-q", "-o", out2, ckpt)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "using "+beside+", beside the checkpoint") {
		t.Fatalf("tokenizer beside, -q: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if got := files(out2); !slices.Equal(got, []string{"model.ptd", "model.pte", "tokenizer.bin"}) {
		t.Fatalf("the output directory holds %v", got)
	}

	// -v: a line per step on stderr.
	code, _, stderr = invoke(t, "import", "llama2c", "-v", "--force", "--max-seq", "64", "--max-tokens", "4", "-o", out2, ckpt)
	if code != 0 {
		t.Fatalf("-v: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"import: reading " + ckpt, "import: checking " + beside, "import: writing the graph (float32 linears)", "import: writing " + out2} {
		if !strings.Contains(stderr, want) {
			t.Errorf("-v: stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestImportErrors: one case per rejection, each the one-line error.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := genCfg // dim 64, hidden 176, seq_len 128, vocab 512
	var b bytes.Buffer
	if err := models.WriteLlama2C(&b, cfg, models.RandomLlamaWeights(cfg)); err != nil {
		t.Fatal(err)
	}
	good := b.Bytes()
	ckpt := write(t, dir, "model.bin", good)
	tok := writeTokenizer(t, dir, "tok.bin", int(cfg.Vocab))
	out := filepath.Join(dir, "out")
	v2 := binary.LittleEndian.AppendUint32(nil, 0x616b3432)
	v2 = binary.LittleEndian.AppendUint32(v2, 2)
	v2 = append(v2, good[:256]...)
	existing := filepath.Join(dir, "existing")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, existing, "model.ptd", []byte("keep me"))

	for _, tc := range []struct {
		name string
		want []string
		args []string
	}{
		{"no format", []string{"no FORMAT"}, nil},
		{"unknown format", []string{`unknown format "gguf"`, "llama2c"}, []string{"gguf", "x.gguf", "-o", out}},
		{"no checkpoint", []string{"no CHECKPOINT"}, []string{"llama2c", "-o", out}},
		{"two checkpoints", []string{"one CHECKPOINT", "got 2"}, []string{"llama2c", ckpt, ckpt, "-o", out}},
		{"no -o", []string{"-o DIR is required"}, []string{"llama2c", ckpt}},
		{"-o twice", []string{"--output", "twice"}, []string{"llama2c", ckpt, "-o", out, "--output", out}},
		{"unknown flag", []string{"--frob"}, []string{"llama2c", ckpt, "-o", out, "--frob"}},
		{"q4 not a number", []string{"--q4", `"x" is not a group size`}, []string{"llama2c", ckpt, "-o", out, "--q4", "x"}},
		{"q4 zero", []string{"--q4", `"0" is not a group size`}, []string{"llama2c", ckpt, "-o", out, "--q4", "0"}},
		{"q4 not a multiple of 8", []string{"--q4", "not a multiple of 8"}, []string{"llama2c", ckpt, "-o", out, "--q4", "12"}},
		{"q4 not dividing dim", []string{"group size 24 does not divide dim 64 and hidden_dim 176", "8, 16"}, []string{"llama2c", ckpt, "-o", out, "--q4", "24"}},
		{"max-seq zero", []string{"--max-seq", "cache length"}, []string{"llama2c", ckpt, "-o", out, "--max-seq", "0"}},
		{"max-seq past seq_len", []string{"129 positions", "seq_len is 128"}, []string{"llama2c", ckpt, "-o", out, "--max-seq", "129"}},
		{"max-tokens not a number", []string{"--max-tokens", "token count"}, []string{"llama2c", ckpt, "-o", out, "--max-tokens", "many"}},
		{"max-tokens past the cache", []string{"64 tokens per Execute", "holds 32 positions"}, []string{"llama2c", ckpt, "-o", out, "--max-seq", "32", "--max-tokens", "64"}},
		{"missing checkpoint", []string{"checkpoint", "no such file"}, []string{"llama2c", filepath.Join(dir, "none.bin"), "-o", out}},
		{"checkpoint is a directory", []string{"checkpoint", "not a regular file"}, []string{"llama2c", dir, "-o", out}},
		{"empty checkpoint", []string{"empty.bin", "0 bytes, shorter than the header"}, []string{"llama2c", write(t, dir, "empty.bin", nil), "-o", out}},
		{"truncated checkpoint", []string{"short.bin", "truncated", "the header calls for"}, []string{"llama2c", write(t, dir, "short.bin", good[:len(good)-8]), "-o", out}},
		{"trailing bytes", []string{"long.bin", "8 more than the header calls for"}, []string{"llama2c", write(t, dir, "long.bin", append(slices.Clone(good), make([]byte, 8)...)), "-o", out}},
		{"version 2 export", []string{"v2.bin", `magic "ak42", version 2`, "--version 0"}, []string{"llama2c", write(t, dir, "v2.bin", v2), "-o", out}},
		{"bad header", []string{"header field 0"}, []string{"llama2c", write(t, dir, "zero.bin", make([]byte, 64)), "-o", out}},
		{"missing tokenizer", []string{"tokenizer", "no such file"}, []string{"llama2c", ckpt, "--tokenizer", filepath.Join(dir, "none"), "-o", out}},
		{"malformed tokenizer", []string{"tokenizer", "bad.tok", "no header"}, []string{"llama2c", ckpt, "--tokenizer", write(t, dir, "bad.tok", []byte{1, 2}), "-o", out}},
		{"tokenizer of another vocabulary", []string{"has 100 tokens", "vocabulary 512"}, []string{"llama2c", ckpt, "--tokenizer", writeTokenizer(t, dir, "tok100.bin", 100), "-o", out}},
		{"-o is a file", []string{"not a directory"}, []string{"llama2c", ckpt, "--tokenizer", tok, "-o", ckpt}},
		{"output exists", []string{filepath.Join(existing, "model.ptd"), "exists", "--force"}, []string{"llama2c", ckpt, "-o", existing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, tc.want, append([]string{"import"}, tc.args...)...)
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed import created the output directory")
	}
	if got, _ := os.ReadFile(filepath.Join(existing, "model.ptd")); string(got) != "keep me" {
		t.Error("a refused import replaced an existing file")
	}
	for _, args := range [][]string{{"import", "-h"}, {"import", "llama2c", "--help"}, {"help", "import"}} {
		out := mustRun(t, args...)
		if !strings.Contains(out, "Usage:") || !hasExamples(out) {
			t.Fatalf("%v: %q", args, out)
		}
	}
}

// TestWriteImport: files are written to temporaries and renamed into
// place only when all are written; Ctrl-C (a cancelled context) or a
// failed rename leaves neither the new files nor temporaries behind.
func TestWriteImport(t *testing.T) {
	files := []importFile{{"model.pte", []byte("pte")}, {"model.ptd", []byte("ptd")}}
	list := func(dir string) []string {
		t.Helper()
		es, _ := os.ReadDir(dir)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := writeImport(t.Context(), dir, files); err != nil {
		t.Fatal(err)
	}
	if got := list(dir); !slices.Equal(got, []string{"model.ptd", "model.pte"}) {
		t.Fatalf("wrote %v", got)
	}

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	dir = filepath.Join(t.TempDir(), "out")
	if err := writeImport(cancelled, dir, files); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if got := list(dir); len(got) != 0 {
		t.Fatalf("a cancelled write left %v", got)
	}

	dir = t.TempDir()
	write(t, filepath.Join(dir), "keep", nil)
	if err := os.MkdirAll(filepath.Join(dir, "model.pte", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeImport(t.Context(), dir, files); err == nil {
		t.Fatal("renaming over a directory: no error")
	}
	if got := list(dir); !slices.Equal(got, []string{"keep", "model.pte"}) {
		t.Fatalf("a failed write left %v", got)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"stories15M/model.pte": "stories15M/model.pte",
		"my models/m.pte":      "'my models/m.pte'",
		"it's":                 `'it'\''s'`,
		"":                     "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

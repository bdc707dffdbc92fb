package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/serialization"
)

const importUsage = `Usage:
  wgdelegate import llama2c [flags] CHECKPOINT -o DIR

Converts a llama2.c checkpoint (the legacy version-0 .bin that llama2.c's
run.c reads, such as stories15M.bin) into the files ExecuTorch's Llama
export for the Vulkan delegate writes, which 'wgdelegate generate' runs:

  DIR/model.pte      the program: the Llama graph as a VulkanBackend
                     delegate, laid out as export_llama -kv
                     --use_sdpa_with_kv_cache (dynamic shape) leaves it,
                     called with int64 tokens [1, T] and input_pos [1],
                     returning the last token's logits
  DIR/model.ptd      every weight, under the SHA-256 of its bytes
  DIR/tokenizer.bin  a copy of the tokenizer, checked to be llama2.c's
                     format with the checkpoint's vocabulary size

The tokenizer is --tokenizer, else the tokenizer.bin beside the checkpoint
when there is one; with neither, none is written and generate works on
token ids. DIR is created if missing. Files already in DIR are not
replaced unless --force is given; --force also removes a tokenizer.bin
that the import does not write (it belongs to the model replaced). A
llama2.c export of a later version (export.py --version 1 or 2, files that
start with the magic "ak42") is refused: run.c reads only version 0.
No GPU is used.

Flags:
  -o, --output DIR    where the files go (required)
  --tokenizer FILE    llama2.c's tokenizer.bin for this checkpoint
  --q4 G              quantize every linear, the classifier included, to 4
                      bits in groups of G along the input features, as
                      export_llama -qmode 4w -G G does (et_vk.linear_q4gsw);
                      G is a multiple of 8 that divides dim and hidden_dim
                      (stories15M: 8, 16, 24, 32, 48 or 96; stories110M: 8,
                      16, 32, 64, 128 or 256)
  --max-seq N         the KV cache length, at most the checkpoint's seq_len
                      (default: seq_len)
  --max-tokens N      tokens per Execute, the prefill chunk (default 32, or
                      the cache length when shorter)
  --force             replace model.pte, model.ptd and tokenizer.bin in DIR
  -q, --quiet         print nothing on success
  -v, --verbose       print each step on stderr
  -h, --help          print this help

Examples:
  wgdelegate import llama2c stories15M.bin --tokenizer tokenizer.bin -o stories15M
  wgdelegate generate stories15M/model.pte --data stories15M/model.ptd --tokenizer stories15M/tokenizer.bin --prompt "Once upon a time"
  wgdelegate import llama2c --q4 32 --max-seq 256 stories110M.bin -o stories110M-q4
`

// importOptions are the parsed arguments of "wgdelegate import llama2c".
type importOptions struct {
	checkpoint, tokenizer, outDir string
	opts                          models.ImportOptions
	force, quiet, verbose         bool
}

// The files an import writes in its output directory.
const (
	importPTE       = "model.pte"
	importPTD       = "model.ptd"
	importTokenizer = "tokenizer.bin"
)

func parseImportArgs(args []string) (importOptions, error) {
	var o importOptions
	count := func(dst *int64, what string) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("%q is not %s (a positive integer)", v, what)
			}
			*dst = n
			return nil
		}
	}
	specs := []flagSpec{
		{names: []string{"output", "o"}, value: true, set: func(v string) error {
			if o.outDir != "" {
				return errors.New("given twice")
			}
			o.outDir = v
			return nil
		}},
		{names: []string{"tokenizer"}, value: true, set: func(v string) error { o.tokenizer = v; return nil }},
		{names: []string{"q4"}, value: true, set: func(v string) error {
			if err := count(&o.opts.Q4Group, "a group size")(v); err != nil {
				return err
			}
			if o.opts.Q4Group%8 != 0 {
				return fmt.Errorf("group size %d is not a multiple of 8", o.opts.Q4Group)
			}
			return nil
		}},
		{names: []string{"max-seq"}, value: true, set: count(&o.opts.MaxSeq, "a cache length")},
		{names: []string{"max-tokens"}, value: true, set: count(&o.opts.MaxTokens, "a token count")},
		{names: []string{"force"}, set: func(string) error { o.force = true; return nil }},
		{names: []string{"quiet", "q"}, set: func(string) error { o.quiet = true; return nil }},
		{names: []string{"verbose", "v"}, set: func(string) error { o.verbose = true; return nil }},
	}
	pos, err := parseArgs("import", args, specs)
	if err != nil {
		return o, err
	}
	const synopsis = "wgdelegate import llama2c [flags] CHECKPOINT -o DIR"
	switch {
	case len(pos) == 0:
		return o, fmt.Errorf("import: no FORMAT given (usage: %s)", synopsis)
	case pos[0] != "llama2c":
		return o, fmt.Errorf("import: unknown format %q (the one there is: llama2c; usage: %s)", pos[0], synopsis)
	case len(pos) == 1:
		return o, fmt.Errorf("import: no CHECKPOINT given (usage: %s)", synopsis)
	case len(pos) > 2:
		return o, fmt.Errorf("import: expected one CHECKPOINT, got %d arguments: %s", len(pos)-1, strings.Join(pos[1:], " "))
	}
	o.checkpoint = pos[1]
	if o.outDir == "" {
		return o, fmt.Errorf("import: -o DIR is required (usage: %s)", synopsis)
	}
	return o, nil
}

func importCommand(args []string, stdout, stderr io.Writer) error {
	return parseAndRun(args, stdout, stderr, parseImportArgs, importLlama2C)
}

// importLlama2C does the work of "wgdelegate import llama2c": every check
// that is cheap (the output directory, the checkpoint's header and size,
// the tokenizer) comes before the conversion, and nothing is written
// until all of it has succeeded. Notes for the user go to stderr only on
// success, so that a failure is the one "wgdelegate: " line.
func importLlama2C(ctx context.Context, o importOptions, stdout, stderr io.Writer) error {
	start := time.Now()
	if o.quiet {
		stdout = io.Discard
	}
	st := newImportSteps(newProgressOut(stderr, o.verbose))
	defer st.end()
	var notes []string

	out := func(name string) string { return filepath.Join(o.outDir, name) }
	if fi, err := os.Stat(o.outDir); err == nil && !fi.IsDir() {
		return fmt.Errorf("import: -o %s is not a directory", o.outDir)
	}
	if !o.force {
		for _, name := range []string{importPTE, importPTD, importTokenizer} {
			if _, err := os.Lstat(out(name)); err == nil {
				return fmt.Errorf("import: %s exists (--force replaces it)", out(name))
			}
		}
	}

	st.step("reading " + o.checkpoint)
	mf, err := serialization.MapFile(o.checkpoint)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer mf.Close()
	cfg, shared, err := models.ParseLlama2CHeader(mf.Bytes())
	if err != nil {
		return fmt.Errorf("%s: %w", o.checkpoint, err)
	}

	tokPath := o.tokenizer
	if tokPath == "" {
		beside := filepath.Join(filepath.Dir(o.checkpoint), importTokenizer)
		if _, err := os.Stat(beside); err == nil {
			tokPath = beside
			notes = append(notes, fmt.Sprintf("no --tokenizer: using %s, beside the checkpoint", beside))
		}
	}
	var tokBytes []byte
	if tokPath != "" {
		st.step("checking " + tokPath)
		if tokBytes, err = os.ReadFile(tokPath); err != nil {
			return fmt.Errorf("tokenizer: %w", err)
		}
		tok, err := llm.ParseLlama2CTokenizer(tokBytes)
		if err != nil {
			return fmt.Errorf("tokenizer %s: %w", tokPath, err)
		}
		if int64(tok.VocabSize()) != cfg.Vocab {
			return fmt.Errorf("tokenizer %s has %d tokens, the checkpoint's vocabulary %d (give the tokenizer the checkpoint was trained with)",
				tokPath, tok.VocabSize(), cfg.Vocab)
		}
	} else {
		notes = append(notes, fmt.Sprintf("no tokenizer (no --tokenizer, no %s beside the checkpoint): none written; generate will take and print token ids (--ids)",
			importTokenizer))
	}

	mode := "float32 linears"
	if g := o.opts.Q4Group; g > 0 {
		mode = fmt.Sprintf("4-bit linears in groups of %d", g)
	}
	st.step("writing the graph (" + mode + ")")
	imp, err := models.ImportLlama2C(ctx, mf.Bytes(), o.opts)
	if err != nil {
		return fmt.Errorf("%s: %w", o.checkpoint, err)
	}
	mf.Close()

	st.step("writing " + o.outDir)
	// The program goes last: should a rename fail half way, an old
	// model.pte meets the new weights and fails to load (their keys
	// differ) instead of running.
	files := []importFile{{importPTD, imp.PTD}}
	if tokBytes != nil {
		files = append(files, importFile{importTokenizer, tokBytes})
	}
	files = append(files, importFile{importPTE, imp.PTE})
	removeTok := false
	if tokBytes == nil && o.force {
		if _, err := os.Lstat(out(importTokenizer)); err == nil {
			removeTok = true
		}
	}
	if err := writeImport(ctx, o.outDir, files); err != nil {
		return err
	}
	if removeTok {
		if err := os.Remove(out(importTokenizer)); err != nil {
			return fmt.Errorf("import: removing the replaced model's tokenizer: %w", err)
		}
		notes = append(notes, fmt.Sprintf("--force: removed %s, the replaced model's tokenizer", out(importTokenizer)))
	}
	st.end()

	c := imp.Cfg
	cls := "its own classifier"
	if shared {
		cls = "classifier shared with the embedding"
	}
	fmt.Fprintf(stdout, "%s: llama2.c checkpoint, %s parameters: dim %d, hidden %d, %d layers, %d heads (%d key/value), vocabulary %d, seq_len %d, %s\n",
		filepath.Base(o.checkpoint), paramCount(imp.Params), cfg.Dim, cfg.Hidden, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.Vocab, imp.SeqLen, cls)
	wrote := []string{fmt.Sprintf("%s (%s)", out(importPTE), byteSize(int64(len(imp.PTE)))),
		fmt.Sprintf("%s (%s)", out(importPTD), byteSize(int64(len(imp.PTD))))}
	if tokBytes != nil {
		wrote = append(wrote, fmt.Sprintf("%s (%s)", out(importTokenizer), byteSize(int64(len(tokBytes)))))
	}
	fmt.Fprintf(stdout, "wrote %s in %.1fs: %s, %d-position KV cache, up to %d tokens per Execute\n",
		strings.Join(wrote, ", "), time.Since(start).Seconds(), mode, c.MaxSeq, c.MaxTokens)
	next := fmt.Sprintf("wgdelegate generate %s --data %s", shellQuote(out(importPTE)), shellQuote(out(importPTD)))
	if tokBytes != nil {
		next += fmt.Sprintf(" --tokenizer %s --prompt \"Once upon a time\"", shellQuote(out(importTokenizer)))
	}
	fmt.Fprintf(stdout, "run it: %s\n", next)
	for _, n := range notes {
		fmt.Fprintf(stderr, "wgdelegate: %s\n", n)
	}
	return nil
}

// importFile is one file an import writes.
type importFile struct {
	name string
	data []byte
}

// writeImport writes files into dir (created if missing): each to a
// temporary file first, and only when all of them are written are they
// renamed into place, in order, so that a failure or Ctrl-C leaves no
// half-written file behind.
func writeImport(ctx context.Context, dir string, files []importFile) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("import: output directory: %w", err)
	}
	var temps []string
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	for _, f := range files {
		t, err := os.CreateTemp(dir, "."+f.name+".*")
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		temps = append(temps, t.Name())
		_, err = t.Write(f.data)
		if cerr := t.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(t.Name(), 0o644)
		}
		if err != nil {
			return fmt.Errorf("import: writing %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	for i, f := range files {
		if err := os.Rename(temps[i], filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return nil
}

// shellQuote returns s as one shell word: as it is when it holds only
// letters, digits and _ . / - +, else in single quotes.
func shellQuote(s string) string {
	plain := s != ""
	for _, c := range s {
		plain = plain && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_./-+", c))
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// paramCount writes n as millions ("15.2M") or thousands ("260.1K").
func paramCount(n int64) string {
	if n >= 1e6 {
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1fK", float64(n)/1e3)
}

// byteSize writes n in KiB, MiB or GiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// importSteps shows what an import is doing: on a terminal, one line
// redrawn per step and erased at the end; on any other stderr, with
// --verbose, a plain line per step; otherwise nothing.
type importSteps struct {
	po    progressOut
	start time.Time
	shown bool
}

func newImportSteps(po progressOut) *importSteps { return &importSteps{po: po, start: time.Now()} }

func (s *importSteps) step(what string) {
	if s.po.w == nil {
		return
	}
	s.shown = true
	if s.po.tty {
		fmt.Fprintf(s.po.w, "\r\033[Kimport: %s (%.1fs)", what, time.Since(s.start).Seconds())
		return
	}
	fmt.Fprintf(s.po.w, "import: %s (%.1fs)\n", what, time.Since(s.start).Seconds())
}

// end erases a terminal's step line; it is safe to call twice.
func (s *importSteps) end() {
	if s.shown && s.po.tty {
		fmt.Fprint(s.po.w, "\r\033[K")
	}
	s.shown = false
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// TestHelpFlagExitsZero: "help --help" (and -h) print the usage and exit
// 0, like "--help" alone.
func TestHelpFlagExitsZero(t *testing.T) {
	for _, args := range [][]string{{"help", "--help"}, {"help", "-h"}, {"help", "-help"}, {"--help"}} {
		code, stdout, stderr := invoke(t, args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q, stdout %.40q", args, code, stderr, stdout)
		}
	}
}

// TestFlagErrorsNameTheFlagAsTyped: a bad value names the flag as the
// user wrote it (-n, not --n; --iterations when spelt so).
func TestFlagErrorsNameTheFlagAsTyped(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, not  string
		wantAlways string
	}{
		{[]string{"generate", "-n", "x", "m.pte"}, "flag -n:", "--n", "token count"},
		{[]string{"generate", "--n=-2", "m.pte"}, "flag --n:", "", "token count"},
		{[]string{"profile", "-n", "0", "m.pte"}, "flag -n:", "--iterations", "positive"},
		{[]string{"profile", "--iterations=0", "m.pte"}, "flag --iterations:", "", "positive"},
		{[]string{"bench", "-n", "0", "m.pte"}, "flag -n:", "--", "positive"},
		{[]string{"generate", "-top-k", "x", "m.pte"}, "flag -top-k:", "", "token count"},
		{[]string{"run", "-output-dir"}, "flag -output-dir needs a value", "", ""},
	} {
		stderr := mustFail(t, []string{tc.want, tc.wantAlways}, tc.args...)
		if tc.not != "" && strings.Contains(stderr, tc.not) {
			t.Errorf("%v: %q mentions %q", tc.args, stderr, tc.not)
		}
	}
}

// TestChatErrorNamesTheFormat: --chat with a tokenizer whose tokens fit
// no built-in chat format, and no template beside it, names the
// tokenizer's format, not a Go type.
func TestChatErrorNamesTheFormat(t *testing.T) {
	tok, err := llm.ParseTokenizer(llama2cTokenizerBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	p := "hi"
	_, _, _, err = chatPrompt(generateOptions{chat: true, prompt: &p, tokenizer: filepath.Join(t.TempDir(), "tokenizer.bin")}, tok)
	if err == nil || !strings.Contains(err.Error(), "(a llama2.c tokenizer.bin)") || strings.Contains(err.Error(), "*llm.") {
		t.Fatalf("--chat with tokenizer.bin: %v", err)
	}
}

// llama2cTokenizerBytes is a tokenizer.bin of 300 pieces.
func llama2cTokenizerBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&buf, 300); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFailOnePrefix: an error that already says "wgdelegate: " (such as
// an interrupted profile's "wgdelegate: delegate graph 0: context
// canceled") is printed with the prefix once.
func TestFailOnePrefix(t *testing.T) {
	var buf bytes.Buffer
	code := fail(&buf, fmt.Errorf("wgdelegate: delegate graph 0: %w", context.Canceled))
	if got := buf.String(); got != "wgdelegate: delegate graph 0: context canceled\n" || code != exitInterrupted {
		t.Errorf("fail: %q, exit %d", got, code)
	}
	buf.Reset()
	fail(&buf, fmt.Errorf("profile: %w", fmt.Errorf("wgdelegate: x")))
	if got := buf.String(); got != "wgdelegate: profile: wgdelegate: x\n" {
		t.Errorf("an inner prefix is kept: %q", got)
	}
}

// TestSamplingCheckedBeforeLoad: a bad sampling option is reported before
// the model (here a file that does not exist) or the tokenizer is read.
func TestSamplingCheckedBeforeLoad(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pte")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--temperature", "-1"}, "temperature -1"},
		{[]string{"--top-p", "1.5"}, "top-p 1.5"},
		{[]string{"--min-p", "2", "--tokenizer", "missing.bin"}, "min-p 2"},
		{[]string{"--repeat-penalty", "-0.5"}, "repeat penalty -0.5"},
	} {
		stderr := mustFail(t, []string{tc.want, "bad option"}, append(append([]string{"generate"}, tc.args...), missing)...)
		if strings.Contains(stderr, "missing") {
			t.Errorf("%v: %q: the model or tokenizer was looked at first", tc.args, stderr)
		}
	}
}

// TestGenerateStopOutsideVocabulary: --stop ids the model's vocabulary
// does not have are an error, not a stop that never comes.
func TestGenerateStopOutsideVocabulary(t *testing.T) {
	dir := t.TempDir()
	pte, cfg, _ := writeGenModel(t, dir, "m", 0)
	ptd := strings.TrimSuffix(pte, ".pte") + ".ptd"
	mustFail(t, []string{fmt.Sprintf("stop token %d is outside the model's vocabulary of %d tokens", cfg.Vocab, cfg.Vocab)},
		"generate", "--data", ptd, "--ids", "1", "-n", "2", "--stop", fmt.Sprintf("2,%d", cfg.Vocab), pte)
	mustRun(t, "generate", "--json", "--data", ptd, "--ids", "1", "-n", "2", "--stop", fmt.Sprint(cfg.Vocab-1), pte)
}

// TestVerifyFlag: every command that loads a model takes --verify; a .ptd
// whose weight has a flipped bit then fails with the key named, and
// without it loads as before; a key that is not a SHA-256 gets one
// warning line.
func TestVerifyFlag(t *testing.T) {
	f := newFixture(t)
	ptd, err := os.ReadFile(f.ptd)
	if err != nil {
		t.Fatal(err)
	}
	w := f32bytes(wData)
	at := bytes.Index(ptd, w)
	if at < 0 {
		t.Fatal("the weight is not in the .ptd")
	}
	ptd[at+5] ^= 0x04
	bad := write(t, f.dir, "bad.ptd", ptd)
	b := twoOutputGraph()
	key := b.NamedBlobs()[0].Key
	out := filepath.Join(f.dir, "out")
	for _, cmd := range [][]string{
		{"run", "--output-dir", out, "--input", f.x},
		{"profile", "--input", f.x, "-n", "1"},
		{"bench", "--input", f.x, "-n", "1"},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			args := append(append([]string{}, cmd...), "--data", f.ptd, "--verify", f.pteSegment)
			mustRun(t, args...)
			args = append(append([]string{}, cmd...), "--data", bad, "--verify", f.pteSegment)
			mustFail(t, []string{key, "does not match its SHA-256 key"}, args...)
			args = append(append([]string{}, cmd...), "--data", bad, f.pteSegment)
			mustRun(t, args...)
		})
	}
	t.Run("generate", func(t *testing.T) {
		dir := t.TempDir()
		pte, _, _ := writeGenModel(t, dir, "m", 0)
		ptd, err := os.ReadFile(strings.TrimSuffix(pte, ".pte") + ".ptd")
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, "generate", "--json", "--verify", "--data", write(t, dir, "good.ptd", ptd), "--ids", "1", "-n", "2", pte)
		ptd[len(ptd)-1] ^= 1 // the last weight's last byte
		mustFail(t, []string{"does not match its SHA-256 key"}, "generate", "--verify", "--data", write(t, dir, "bad.ptd", ptd), "--ids", "1", "-n", "2", pte)
	})
	t.Run("unverifiable", func(t *testing.T) {
		b := serialization.NewBuilder()
		x := b.Tensor(serialization.Float32, []uint32{2, 3}, -1)
		c := b.NamedConstKey(serialization.Float32, []uint32{2, 3}, "my.weight", 24)
		y := b.Tensor(serialization.Float32, []uint32{2, 3}, -1)
		b.Op("aten.add.Tensor", x, c, b.Double(1), y)
		b.Inputs(x)
		b.Outputs(y)
		pte, err := serialization.EncodePTE(serialization.PTEOptions{
			Delegates: []serialization.DelegateSpec{{ID: serialization.VulkanBackendID, Blob: mustBlob(t, b)}},
			NamedData: []serialization.NamedBlob{{Key: "my.weight", Data: f32bytes(wData)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		path := write(t, f.dir, "named.pte", pte)
		code, _, stderr := invoke(t, "run", "--verify", "--output-dir", out, "--input", f.x, path)
		if code != 0 || stderr != "wgdelegate: warning: --verify: 1 named tensor(s) have keys that are not SHA-256 digests and were loaded unchecked: \"my.weight\"\n" {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		mustRun(t, "run", "--output-dir", out, "--input", f.x, path) // no --verify, no warning
	})
}

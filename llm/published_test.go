package llm_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

// TestPublishedVocabularies checks full-size vocabularies against ids
// published with other projects, when WGDELEGATE_TOKENIZER_DIR names a
// folder holding some of:
//
//   - llama3.tiktoken: Llama 3's tokenizer.model (SHA-256 82e9d319...);
//   - llama3.json: a Llama 3 tokenizer.json;
//   - qwen2.json: a Qwen 2 (or 2.5, 3) tokenizer.json;
//   - gpt2.json: GPT-2's tokenizer.json.
//
// None is committed (their size, and Llama 3's licence). The strings and
// ids are llama.cpp's tokenizer tests (MIT): models/ggml-vocab-*.gguf.inp
// (the same 46 strings for every vocabulary) and .out (the ids the
// tokenizers library gives each, without special tokens), in
// testdata/tok/llamacpp. The Llama 3 tokenizer.model is also checked
// against the one expectation of ExecuTorch's tokenizer tests
// (meta-pytorch/tokenizers test/test_tiktoken.cpp: "hello world" after
// BOS is 128000 15339 1917).
func TestPublishedVocabularies(t *testing.T) {
	dir := os.Getenv("WGDELEGATE_TOKENIZER_DIR")
	if dir == "" {
		t.Skip("WGDELEGATE_TOKENIZER_DIR is not set")
	}
	inp, err := os.ReadFile(filepath.Join("testdata", "tok", "llamacpp", "vocab-test.inp"))
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(inp), "\n__ggml_vocab_test__\n"), "\n__ggml_vocab_test__\n")
	if len(texts) != 46 {
		t.Fatalf("%d strings", len(texts))
	}
	checked := 0
	for _, tc := range []struct{ file, out string }{
		{"llama3.tiktoken", "llama-bpe.out"},
		{"llama3.json", "llama-bpe.out"},
		{"qwen2.json", "qwen2.out"},
		{"gpt2.json", "gpt-2.out"},
	} {
		path := filepath.Join(dir, tc.file)
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v", tc.file, err)
			continue
		}
		t.Run(tc.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "tok", "llamacpp", tc.out))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(out), "\n")
			tk, err := llm.LoadTokenizer(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				var want []int32
				for _, f := range strings.Fields(lines[i]) {
					n, err := strconv.Atoi(f)
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, int32(n))
				}
				got, err := tk.Encode(text, false)
				if err != nil {
					t.Fatal(err)
				}
				if !eqIDs(got, want) {
					t.Errorf("Encode(%q) = %v, want %v", text, got, want)
				}
			}
			if tc.file == "llama3.tiktoken" {
				got, _ := tk.Encode("hello world", true)
				if want := []int32{128000, 15339, 1917}; !eqIDs(got, want) {
					t.Errorf("Encode(\"hello world\", true) = %v, want %v", got, want)
				}
			}
		})
		checked++
	}
	if checked == 0 {
		t.Fatalf("no tokenizer file in %s", dir)
	}
}

package llm_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

// The files in testdata/tok were written by testdata/tok/gen/gen.js (see
// its header) from vocabularies with permissive licences, cut down to a
// few thousand tokens:
//
//   - llama3_6k.tiktoken.gz: the first 6000 ranks of tiktoken's
//     cl100k_base (MIT), which are also the first 6000 of Llama 3's
//     tokenizer.model, in that file's format;
//   - llama3_6k.json.gz: the same vocabulary as a Hugging Face
//     tokenizer.json laid out like Llama 3's (a Split of Llama 3's regex
//     then ByteLevel, merges as "a b" strings derived from the ranks the
//     way Hugging Face's tiktoken converter derives them, ignore_merges,
//     a TemplateProcessing that puts <|begin_of_text|> first, the 256
//     special tokens);
//   - gpt2_6k.json.gz: GPT-2's first 6000 merges (MIT; read out of
//     llama.cpp's models/ggml-vocab-gpt-2.gguf) laid out like GPT-2's
//     tokenizer.json (a ByteLevel pre-tokenizer with GPT-2's regex,
//     <|endoftext|>);
//   - qwen2_6k.json.gz: the same vocabulary laid out like Qwen 2's (an
//     NFC normalizer, a Split of Qwen 2's regex then ByteLevel, merges
//     as pairs, <|endoftext|>, <|im_start|>, <|im_end|> and two
//     non-special added tokens).
//
// expected.json.gz holds, for every string of gen.js's corpus (447
// strings: 147 written by hand, with runs of spaces, tabs and newlines,
// \r\n, trailing spaces, digit runs, contractions in both cases, 'ſ,
// CJK, Indic and RTL scripts, combining marks, emoji with ZWJ, Unicode
// spaces, code, special tokens in text; and 300 seeded random
// concatenations of such parts), the ids the reference implementations
// give: OpenAI's tiktoken (its Rust core, the npm package tiktoken
// 1.0.22) with Llama 3's regex and special tokens, for encode(text,
// allowed_special="all") and encode_ordinary; and Hugging Face's
// tokenizers (its Rust core, the npm package tokenizers 0.23.2) for
// encode with and without special tokens, and decode (hf, by file; two
// more layouts change one setting of a file: see hfVariant). The two
// references agree on every string for the Llama 3 vocabulary, as
// tiktoken file and as tokenizer.json.

type tiktokenCase struct {
	Text     string  `json:"text"`
	Special  []int32 `json:"special"`
	Ordinary []int32 `json:"ordinary"`
}

type hfCase struct {
	Text       string  `json:"text"`
	AddSpecial []int32 `json:"add_special"`
	IDs        []int32 `json:"ids"`
	// Decoded is the decoded text where it is not Text (NFC changed it).
	Decoded *string `json:"decoded"`
}

type expectedIDs struct {
	Tiktoken []tiktokenCase      `json:"tiktoken"`
	HF       map[string][]hfCase `json:"hf"`
}

func readExpected(t testing.TB) expectedIDs {
	t.Helper()
	b := readGz(t, "expected.json.gz")
	var e expectedIDs
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// readGz returns the contents of a gzip'd file under testdata/tok.
func readGz(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.ReadFile(filepath.Join("testdata", "tok", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func eqIDs(a, b []int32) bool { return slices.Equal(a, b) || len(a) == 0 && len(b) == 0 }

// checkEncode checks tk.Encode(text, bos) against want, the ids the
// library source gives, and returns what Encode gave.
func checkEncode(t *testing.T, tk llm.Tokenizer, text string, bos bool, want []int32, source string) []int32 {
	t.Helper()
	got, err := tk.Encode(text, bos)
	if err != nil {
		t.Fatalf("Encode(%q, %v): %v", text, bos, err)
	}
	if !eqIDs(got, want) {
		t.Errorf("Encode(%q, %v) = %v, %s gives %v", text, bos, got, source, want)
	}
	return got
}

// decodeAll is the text of ids, each decoded on its own (after -1).
func decodeAll(tk llm.Tokenizer, ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(tk.Decode(-1, id))
	}
	return b.String()
}

package llm_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// TestDetectTokenizer: each format is told from its bytes, and
// ParseTokenizer and LoadTokenizer return the matching type.
func TestDetectTokenizer(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want llm.TokenizerFormat
		typ  string
	}{
		{"llama2.c", writeLlama2CTokenizer(testPieces(false)), llm.FormatLlama2C, "*llm.Llama2CTokenizer"},
		{"sentencepiece", spModel(true, true, false), llm.FormatSentencePiece, "*llm.SentencePiece"},
		{"tiktoken", tinyTiktoken("ab"), llm.FormatTiktoken, "*llm.Tiktoken"},
		{"tiktoken with CRLF", []byte(strings.ReplaceAll(string(tinyTiktoken("ab")), "\n", "\r\n")), llm.FormatTiktoken, "*llm.Tiktoken"},
		{"tokenizer.json", marshal(t, tinyHF()), llm.FormatHFTokenizer, "*llm.HFTokenizer"},
		{"tokenizer.json indented with a BOM", append([]byte("\xef\xbb\xbf{\n  "), marshal(t, tinyHF())[1:]...), llm.FormatHFTokenizer, "*llm.HFTokenizer"},
		{"empty", nil, llm.FormatUnknownTokenizer, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := llm.DetectTokenizer(tc.data); got != tc.want {
				t.Fatalf("DetectTokenizer = %v, want %v", got, tc.want)
			}
			tk, err := llm.ParseTokenizer(tc.data)
			if tc.typ == "" {
				if !errors.Is(err, llm.ErrTokenizer) {
					t.Fatalf("ParseTokenizer = %v, want ErrTokenizer", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := typeName(tk); got != tc.typ {
				t.Errorf("ParseTokenizer gave a %s, want %s", got, tc.typ)
			}
			path := filepath.Join(t.TempDir(), "tok")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if tk, err := llm.LoadTokenizer(path); err != nil || typeName(tk) != tc.typ {
				t.Errorf("LoadTokenizer = %T, %v", tk, err)
			}
		})
	}
	// A tokenizer.bin whose max token length is '{' (123) or 0x0a (10,
	// SentencePiece's first byte) is still one.
	for _, n := range []int{123, 10} {
		pieces, scores := testPieces(false)
		pieces = append(pieces, strings.Repeat("x", n))
		scores = append(scores, 0)
		data := writeLlama2CTokenizer(pieces, scores)
		if f := llm.DetectTokenizer(data); f != llm.FormatLlama2C {
			t.Errorf("a tokenizer.bin with max length %d is detected as %v", n, f)
		}
		if _, err := llm.ParseTokenizer(data); err != nil {
			t.Errorf("max length %d: %v", n, err)
		}
	}
	if _, err := llm.LoadTokenizer(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadTokenizer(missing) = %v", err)
	}
	// The path is in the error.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"model": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.LoadTokenizer(bad); !errors.Is(err, llm.ErrTokenizer) || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadTokenizer(bad) = %v", err)
	}
}

// TestStopTokens: the stop ids each kind of tokenizer gives.
func TestStopTokens(t *testing.T) {
	l2c, err := llm.ParseLlama2CTokenizer(writeLlama2CTokenizer(testPieces(false)))
	if err != nil {
		t.Fatal(err)
	}
	if got := llm.StopTokens(l2c); !eqIDs(got, []int32{2}) {
		t.Errorf("llama2.c: %v", got)
	}
	if got, want := llm.StopTokens(loadTiktoken6k(t)), []int32{6001, 6008, 6009}; !eqIDs(got, want) {
		t.Errorf("tiktoken: %v, want %v", got, want)
	}
	for name, want := range map[string][]int32{
		"llama3_6k": {6001, 6008, 6009}, // <|end_of_text|>, <|eom_id|>, <|eot_id|>
		"gpt2_6k":   {6256},             // <|endoftext|>
		"qwen2_6k":  {6256, 6258},       // <|endoftext|>, <|im_end|>
	} {
		if got := llm.StopTokens(loadHF(t, name)); !eqIDs(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string][2]int32{"llama3_6k": {6000, 6001}, "gpt2_6k": {-1, 6256}, "qwen2_6k": {-1, 6256}} {
		tk := loadHF(t, name)
		if tk.BOS() != want[0] || tk.EOS() != want[1] {
			t.Errorf("%s: BOS %d, EOS %d, want %v", name, tk.BOS(), tk.EOS(), want)
		}
	}
}

func typeName(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%T", v)
}

// TestUnknownTokenizer: files of no tokenizer format (a model, a .ptd,
// text, random bytes, a tokenizer.bin header with nonsense after it) are
// an error wrapping ErrUnknownTokenizer and ErrTokenizer that says the
// format is not recognised, not a tokenizer.bin parse error; a
// tokenizer.bin truncated after its first records still reads as one and
// says where it ends.
func TestUnknownTokenizer(t *testing.T) {
	good := writeLlama2CTokenizer(testPieces(false))
	f, err := models.Encode(models.NewMLP(models.DefaultMLP).B, false)
	if err != nil {
		t.Fatal(err)
	}
	header := func(maxLen int32, score float32, n int32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(score))
		return binary.LittleEndian.AppendUint32(b, uint32(n))
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"random", []byte{0x5c, 0x9e, 0x21, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, // max length -1205129700
		{".pte", f.PTE},
		{"text", []byte("Once upon a time\nthere was a tokenizer\n")},
		{"JSON array", []byte(`[1, 2, 3]`)},
		{"max length 0", header(0, 0, 1)},
		{"max length too large", header(1<<20, 0, 1)},
		{"NaN score", header(8, float32(math.NaN()), 1)},
		{"first piece longer than the max", header(8, 0, 9)},
		{"first piece past the end", header(8, 0, 4)},
		{"negative length", header(8, 0, -1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := llm.DetectTokenizer(tc.data); got != llm.FormatUnknownTokenizer {
				t.Errorf("DetectTokenizer = %v", got)
			}
			_, err := llm.ParseTokenizer(tc.data)
			if !errors.Is(err, llm.ErrUnknownTokenizer) || !errors.Is(err, llm.ErrTokenizer) {
				t.Fatalf("ParseTokenizer = %v, want ErrUnknownTokenizer", err)
			}
			if !strings.Contains(err.Error(), "not recognised") || strings.Contains(err.Error(), "max token length") {
				t.Errorf("message %q", err)
			}
		})
	}
	cut := good[:len(good)-3]
	if got := llm.DetectTokenizer(cut); got != llm.FormatLlama2C {
		t.Fatalf("a truncated tokenizer.bin is detected as %v", got)
	}
	if _, err := llm.ParseTokenizer(cut); !errors.Is(err, llm.ErrTokenizer) || errors.Is(err, llm.ErrUnknownTokenizer) || !strings.Contains(err.Error(), "token") {
		t.Errorf("truncated tokenizer.bin: %v", err)
	}
}

// TestTokenID: a chat template's texts as token ids: special tokens by
// their ids (named tokenizers only), other texts by the one id they
// encode to, none for a text of several tokens; IsBOSText only for the
// tokenizer's own BOS (any text when the tokenizer names no special
// tokens and has a BOS).
func TestTokenID(t *testing.T) {
	l2c, err := llm.ParseLlama2CTokenizer(writeLlama2CTokenizer(testPieces(false)))
	if err != nil {
		t.Fatal(err)
	}
	one, err := l2c.Encode("ab", false)
	if err != nil || len(one) != 1 {
		t.Fatalf("Encode(ab) = %v, %v: the case needs a one-token text", one, err)
	}
	llama3, qwen := loadHF(t, "llama3_6k"), loadHF(t, "qwen2_6k")
	for _, tc := range []struct {
		name    string
		tok     llm.Tokenizer
		text    string
		id      int32
		ok      bool
		named   bool
		special bool
		bos     bool
	}{
		{"llama3 eot", llama3, "<|eot_id|>", 6009, true, true, true, false},
		{"llama3 bos", llama3, "<|begin_of_text|>", 6000, true, true, true, true},
		{"llama3 eos is not its bos", llama3, "<|end_of_text|>", 6001, true, true, true, false},
		{"qwen im_end", qwen, "<|im_end|>", 6258, true, true, true, false},
		{"qwen has no bos", qwen, "<|endoftext|>", 6256, true, true, true, false},
		{"llama2.c one token", l2c, "ab", one[0], true, false, false, true},
		{"llama2.c several tokens", l2c, "ab c ab", -1, false, false, false, true},
		{"empty", llama3, "", -1, false, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, special, named := llm.SpecialTokenID(tc.tok, tc.text)
			if special != tc.special || named != tc.named || special && id != tc.id {
				t.Errorf("SpecialTokenID = %d, %v, %v; want %d, %v, %v", id, special, named, tc.id, tc.special, tc.named)
			}
			if id, ok := llm.TokenID(tc.tok, tc.text); id != tc.id || ok != tc.ok {
				t.Errorf("TokenID = %d, %v; want %d, %v", id, ok, tc.id, tc.ok)
			}
			if got := llm.IsBOSText(tc.tok, tc.text); got != tc.bos {
				t.Errorf("IsBOSText = %v, want %v", got, tc.bos)
			}
		})
	}
}

package llm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

func loadHF(t testing.TB, name string) *llm.HFTokenizer {
	t.Helper()
	b, err := hfVariant(readGz(t, strings.Split(name, "+")[0]+".json.gz"), name)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := llm.ParseHFTokenizer(b)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// hfVariant makes the changes gen.js makes to a file for the layouts
// named file+variant: add_prefix_space set on GPT-2's ByteLevel
// pre-tokenizer; rstrip on Qwen 2's <|im_start|> and lstrip on its
// <|im_end|>.
func hfVariant(b []byte, name string) ([]byte, error) {
	_, variant, ok := strings.Cut(name, "+")
	if !ok {
		return b, nil
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	switch variant {
	case "add_prefix_space":
		f["pre_tokenizer"].(map[string]any)["add_prefix_space"] = true
	case "strip":
		added := f["added_tokens"].([]any)
		added[1].(map[string]any)["rstrip"] = true
		added[2].(map[string]any)["lstrip"] = true
	default:
		return nil, fmt.Errorf("no variant %q", variant)
	}
	return json.Marshal(f)
}

// TestHFTokenizerReference checks Encode, with and without the template,
// and Decode against the ids and text of Hugging Face's tokenizers for
// every string of the corpus (expected.json, see bytebpe_test.go) on the
// three tokenizer.json layouts.
func TestHFTokenizerReference(t *testing.T) {
	exp := readExpected(t)
	for _, name := range []string{"llama3_6k", "gpt2_6k", "qwen2_6k", "gpt2_6k+add_prefix_space", "qwen2_6k+strip"} {
		t.Run(name, func(t *testing.T) {
			tk := loadHF(t, name)
			cases := exp.HF[name]
			if len(cases) < 100 {
				t.Fatalf("%d cases", len(cases))
			}
			for _, c := range cases {
				got := checkEncode(t, tk, c.Text, false, c.IDs, "tokenizers")
				checkEncode(t, tk, c.Text, true, c.AddSpecial, "tokenizers")
				want := c.Text
				if c.Decoded != nil {
					want = *c.Decoded
				}
				if text := decodeAll(tk, got); text != want {
					t.Errorf("Decode(Encode(%q)) = %q, tokenizers gives %q", c.Text, text, want)
				}
			}
		})
	}
}

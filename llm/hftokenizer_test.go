package llm_test

import (
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

func loadHF(t testing.TB, name string) *llm.HFTokenizer {
	t.Helper()
	tk, err := llm.ParseHFTokenizer(readGz(t, name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestHFTokenizerReference checks Encode, with and without the template,
// and Decode against the ids and text of Hugging Face's tokenizers for
// every string of the corpus (expected.json, see bytebpe_test.go) on the
// three tokenizer.json layouts.
func TestHFTokenizerReference(t *testing.T) {
	exp := readExpected(t)
	for _, name := range []string{"llama3_6k", "gpt2_6k", "qwen2_6k"} {
		t.Run(name, func(t *testing.T) {
			tk := loadHF(t, name)
			cases := exp.HF[name]
			if len(cases) < 100 {
				t.Fatalf("%d cases", len(cases))
			}
			for _, c := range cases {
				got, err := tk.Encode(c.Text, false)
				if err != nil {
					t.Fatalf("Encode(%q): %v", c.Text, err)
				}
				if !eqIDs(got, c.IDs) {
					t.Errorf("Encode(%q, false) = %v, tokenizers gives %v", c.Text, got, c.IDs)
				}
				withBOS, _ := tk.Encode(c.Text, true)
				if !eqIDs(withBOS, c.AddSpecial) {
					t.Errorf("Encode(%q, true) = %v, tokenizers gives %v", c.Text, withBOS, c.AddSpecial)
				}
				var b strings.Builder
				for _, id := range got {
					b.WriteString(tk.Decode(-1, id))
				}
				if b.String() != c.Decoded {
					t.Errorf("Decode(Encode(%q)) = %q, tokenizers gives %q", c.Text, b.String(), c.Decoded)
				}
			}
		})
	}
}

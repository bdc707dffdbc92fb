package llm_test

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

func loadTiktoken6k(t testing.TB) *llm.Tiktoken {
	t.Helper()
	tk, err := llm.ParseTiktoken(readGz(t, "llama3_6k.tiktoken.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestTiktokenReference checks Encode and EncodeOrdinary against
// tiktoken's ids for every string of the corpus (expected.json, see
// bytebpe_test.go), and that the ids decode back to the text.
func TestTiktokenReference(t *testing.T) {
	tk := loadTiktoken6k(t)
	if got, want := tk.VocabSize(), 6000+256; got != want {
		t.Fatalf("VocabSize() = %d, want %d", got, want)
	}
	cases := readExpected(t).Tiktoken
	if len(cases) < 100 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		got := checkEncode(t, tk, c.Text, false, c.Special, "tiktoken")
		if got := tk.EncodeOrdinary(c.Text); !eqIDs(got, c.Ordinary) {
			t.Errorf("EncodeOrdinary(%q) = %v, tiktoken gives %v", c.Text, got, c.Ordinary)
		}
		if text := decodeAll(tk, got); text != c.Text {
			t.Errorf("Decode(Encode(%q)) = %q", c.Text, text)
		}
	}
}

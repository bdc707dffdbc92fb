package llm_test

import (
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

// longInputs are 100 KB texts with no spaces to split them (one letter,
// digits, a two-letter cycle, CJK, a symbol) or with nothing but spaces
// or newlines: a merge loop that rescans the piece after every merge, or
// a regex that backtracks, would take minutes on them; the heap-ordered
// merge and RE2 take milliseconds. No timing is asserted: the test
// timeout is the bound. Under the race detector or -short they are
// 16 KB.
func longInputs() map[string]string {
	n := 100 << 10
	if raceEnabled || testing.Short() {
		n = 16 << 10
	}
	return map[string]string{
		"letter":  strings.Repeat("a", n),
		"digits":  strings.Repeat("7", n),
		"cycle":   strings.Repeat("ab", n/2),
		"cjk":     strings.Repeat("中", n/3),
		"symbol":  strings.Repeat("!", n),
		"spaces":  strings.Repeat(" ", n) + "x",
		"newline": strings.Repeat("\n", n),
		"special": strings.Repeat("<|eot_id|>", n/10),
		"partial": strings.Repeat("<|", n/2),
	}
}

func TestLongInputs(t *testing.T) {
	toks := map[string]llm.Tokenizer{"tiktoken": loadTiktoken6k(t)}
	for _, name := range []string{"llama3_6k", "gpt2_6k", "qwen2_6k"} {
		toks[name] = loadHF(t, name)
	}
	for tname, tk := range toks {
		for name, text := range longInputs() {
			ids, err := tk.Encode(text, false)
			if err != nil {
				t.Fatalf("%s %s: %v", tname, name, err)
			}
			if len(ids) == 0 || len(ids) > len(text) {
				t.Errorf("%s %s: %d ids for %d bytes", tname, name, len(ids), len(text))
			}
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(tk.Decode(-1, id))
			}
			if b.String() != text {
				t.Errorf("%s %s: Decode(Encode(text)) differs from text", tname, name)
			}
		}
	}
}

// TestConcurrentEncode encodes from several goroutines with one tokenizer
// of each kind (the race detector checks that they share nothing
// mutable).
func TestConcurrentEncode(t *testing.T) {
	toks := []llm.Tokenizer{loadTiktoken6k(t), loadHF(t, "qwen2_6k")}
	cases := readExpected(t).Tiktoken[:100]
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for _, c := range cases {
				if _, e := toks[g%2].Encode(c.Text, true); e != nil && err == nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

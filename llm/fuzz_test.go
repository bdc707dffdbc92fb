package llm_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/wgdelegate/wgdelegate/llm"
)

// FuzzLlama2CTokenizer: any bytes either fail to parse with an error or
// give a tokenizer that encodes any text and decodes every id it returns
// without panicking.
func FuzzLlama2CTokenizer(f *testing.F) {
	f.Add(writeLlama2CTokenizer(testPieces(false)), "ab é")
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a'}, "aaa")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := llm.ParseLlama2CTokenizer(data)
		if err != nil {
			return
		}
		encodeInVocab(t, tk, text)
	})
}

// FuzzSentencePiece is FuzzLlama2CTokenizer for SentencePiece models.
func FuzzSentencePiece(f *testing.F) {
	f.Add(spModel(true, true, false), "ab é")
	f.Add(spModel(false, false, false), "  b  a ")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := llm.ParseSentencePiece(data)
		if err != nil {
			return
		}
		encodeInVocab(t, tk, text)
	})
}

// encodeInVocab encodes text with tk (an error is no failure) and checks
// that every id is in tk's vocabulary and decodes without panicking.
func encodeInVocab(t *testing.T, tk llm.Tokenizer, text string) {
	t.Helper()
	ids, err := tk.Encode(text, true)
	if err != nil {
		return
	}
	prev := int32(-1)
	for _, id := range ids {
		if id < 0 || int(id) >= tk.VocabSize() {
			t.Fatalf("id %d outside the vocabulary of %d", id, tk.VocabSize())
		}
		_ = tk.Decode(prev, id)
		prev = id
	}
}

// FuzzTiktoken: any bytes either fail to parse with an error or give a
// tokenizer (Llama 3's regex and special tokens) that encodes any text to
// ids of its vocabulary which decode back to the text.
func FuzzTiktoken(f *testing.F) {
	f.Add(tinyTiktoken("ab", " a", " ab", "  "), "ab ab<|eot_id|>  x\r\n")
	f.Add(tinyTiktoken(), "")
	f.Add([]byte("QQ== 0\n"), "A")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := llm.ParseTiktoken(data)
		if err != nil {
			return
		}
		checkRoundTrip(t, tk, text, text)
	})
}

// FuzzHFTokenizer: any bytes either fail to parse with an error or give a
// tokenizer that encodes any text to ids of its vocabulary and decodes
// them without panicking.
func FuzzHFTokenizer(f *testing.F) {
	f.Add(marshal(f, tinyHF()), "ab ab</s>  a c")
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`), "aa a")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := llm.ParseHFTokenizer(data)
		if err != nil {
			return
		}
		for _, bos := range []bool{false, true} {
			ids, err := tk.Encode(text, bos)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tk.VocabSize() {
					t.Fatalf("id %d outside the vocabulary of %d", id, tk.VocabSize())
				}
				_ = tk.Decode(-1, id)
			}
		}
	})
}

// FuzzByteLevelEncode encodes any text with the committed vocabularies:
// the ids decode back to the text (NFC-normalized for the Qwen 2 layout),
// and Encode equals EncodeOrdinary for tiktoken when the text holds no
// special token.
func FuzzByteLevelEncode(f *testing.F) {
	tk := loadTiktoken6k(f)
	hf := map[string]*llm.HFTokenizer{}
	for _, name := range []string{"llama3_6k", "gpt2_6k", "qwen2_6k"} {
		hf[name] = loadHF(f, name)
	}
	for _, c := range readExpected(f).Tiktoken[:150] {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := checkRoundTrip(t, tk, text, text)
		if !strings.Contains(text, "<|") {
			if ord := tk.EncodeOrdinary(text); !eqIDs(ord, ids) {
				t.Errorf("EncodeOrdinary(%q) = %v, Encode %v", text, ord, ids)
			}
		}
		checkRoundTrip(t, hf["llama3_6k"], text, text)
		checkRoundTrip(t, hf["gpt2_6k"], text, text)
		checkRoundTrip(t, hf["qwen2_6k"], text, norm.NFC.String(text))
	})
}

// checkRoundTrip encodes text with tk and checks that the ids are in the
// vocabulary and decode to want.
func checkRoundTrip(t *testing.T, tk llm.Tokenizer, text, want string) []int32 {
	t.Helper()
	ids, err := tk.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, id := range ids {
		if id < 0 || int(id) >= tk.VocabSize() {
			t.Fatalf("Encode(%q): id %d outside the vocabulary of %d", text, id, tk.VocabSize())
		}
		b.WriteString(tk.Decode(-1, id))
	}
	if b.String() != want {
		t.Fatalf("Decode(Encode(%q)) = %q, want %q", text, b.String(), want)
	}
	return ids
}

// FuzzParseTokenizer: any bytes are told apart without panicking; a file
// DetectTokenizer does not recognise is ErrUnknownTokenizer, and every
// failure wraps ErrTokenizer.
func FuzzParseTokenizer(f *testing.F) {
	f.Add(writeLlama2CTokenizer(testPieces(false)))
	f.Add(spModel(true, true, false))
	f.Add(tinyTiktoken("ab"))
	f.Add([]byte{0x5c, 0x9e, 0x21, 0xb8, 1, 2, 3, 4})
	f.Add([]byte(`{"model": {}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		format := llm.DetectTokenizer(data)
		tk, err := llm.ParseTokenizer(data)
		switch {
		case format == llm.FormatUnknownTokenizer && !errors.Is(err, llm.ErrUnknownTokenizer):
			t.Fatalf("unrecognised bytes: %v, want ErrUnknownTokenizer", err)
		case err != nil && !errors.Is(err, llm.ErrTokenizer):
			t.Fatalf("%v: %v does not wrap ErrTokenizer", format, err)
		case err == nil && tk == nil:
			t.Fatal("no tokenizer and no error")
		}
	})
}

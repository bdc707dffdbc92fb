package llm_test

import (
	"testing"

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
	})
}

package llm_test

import (
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

// TestLlama3ChatPrompt compares with the chat template of
// Meta-Llama-3-8B-Instruct's tokenizer_config.json rendered by Hugging
// Face's Jinja implementation (the npm package @huggingface/jinja 0.5.11,
// with bos_token <|begin_of_text|> and add_generation_prompt), but for
// the last case: Python's strip, which transformers' template rendering
// uses, also trims 0x1C..0x1F.
func TestLlama3ChatPrompt(t *testing.T) {
	type m = llm.ChatMessage
	for _, tc := range []struct {
		msgs []llm.ChatMessage
		want string
	}{
		{[]m{{"user", "Hello!"}},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{[]m{{"system", "You are a helpful assistant."}, {"user", "  What is 2+2?\n"}},
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{[]m{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a joke."}},
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{[]m{{"user", ""}},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{[]m{{"user", "\t\n line one\n\nline two \u3000"}},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nline one\n\nline two<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{nil, "<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{[]m{{"user", "\x1chi\x1f"}},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
	} {
		if got := llm.Llama3ChatPrompt(tc.msgs); got != tc.want {
			t.Errorf("Llama3ChatPrompt(%q) =\n%q\nwant\n%q", tc.msgs, got, tc.want)
		}
	}
}

// TestLlama3ChatEncode: the prompt encodes to the special tokens' ids
// around the header and content tokens, with one BOS.
func TestLlama3ChatEncode(t *testing.T) {
	tk := loadTiktoken6k(t)
	ids, err := tk.Encode(llm.Llama3ChatPrompt([]llm.ChatMessage{{Role: "user", Content: "Hi"}}), false)
	if err != nil {
		t.Fatal(err)
	}
	sp := func(s string) int32 {
		id, ok := tk.SpecialTokenID(s)
		if !ok {
			t.Fatalf("no %s", s)
		}
		return id
	}
	nl := tk.EncodeOrdinary("\n\n")
	want := []int32{sp("<|begin_of_text|>"), sp("<|start_header_id|>")}
	want = append(want, tk.EncodeOrdinary("user")...)
	want = append(append(want, sp("<|end_header_id|>")), nl...)
	want = append(want, tk.EncodeOrdinary("Hi")...)
	want = append(want, sp("<|eot_id|>"), sp("<|start_header_id|>"))
	want = append(want, tk.EncodeOrdinary("assistant")...)
	want = append(append(want, sp("<|end_header_id|>")), nl...)
	if !eqIDs(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
}

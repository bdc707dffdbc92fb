package chat_test

import (
	"errors"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// TestBuiltinMatchesModels: the built-in chatml and mistral formats render
// what Qwen 2.5's and Mistral Nemo's real templates render (expected.json)
// for every conversation without tools that starts with a system message
// (Qwen adds a default one otherwise) or, for mistral, any without tools;
// a refusal is the same raise_exception.
func TestBuiltinMatchesModels(t *testing.T) {
	f := loadGolden(t)
	for _, tc := range []struct {
		builtin, model string
		needSystem     bool
	}{
		{"chatml", "qwen-2.5", true},
		{"mistral", "mistral-nemo", false},
	} {
		b, err := chat.Builtin(tc.builtin)
		if err != nil {
			t.Fatal(err)
		}
		b = b.WithTokens(f.templates[tc.model].Tokens())
		n := 0
		for _, c := range f.cases {
			conv := f.convs[c.Conversation]
			if c.Template != tc.model || c.Vars != nil || conv.Tools != nil || len(conv.Messages) == 0 {
				continue
			}
			if tc.needSystem && conv.Messages[0].Role != "system" {
				continue
			}
			n++
			got, err := b.Render(conv, chat.Options{AddGenerationPrompt: c.AddGenerationPrompt})
			switch {
			case c.Prompt != nil:
				if err != nil || got != *c.Prompt {
					t.Errorf("%s on %s (gen %v): got %q, %v\nwant %q", tc.builtin, c.Conversation, c.AddGenerationPrompt, got, err, *c.Prompt)
				}
			case c.Raised != nil:
				var r *chat.RaisedError
				if !errors.As(err, &r) || r.Message != *c.Raised {
					t.Errorf("%s on %s: %v, want raise_exception(%q)", tc.builtin, c.Conversation, err, *c.Raised)
				}
			default:
				t.Errorf("%s on %s: the model's template failed in Python: %s", tc.builtin, c.Conversation, *c.Error)
			}
		}
		if n < 4 {
			t.Errorf("%s: %d cases compared", tc.builtin, n)
		}
	}
}

// TestBuiltinLlama2 checks the Llama 2 chat format: <s>[INST] with the
// system message between <<SYS>> markers in the first user turn, each
// turn's text stripped (the first with its system block), " reply </s>" after each answer, nothing added for the
// generation prompt, and the alternation check.
func TestBuiltinLlama2(t *testing.T) {
	tpl, err := chat.Builtin("llama2")
	if err != nil {
		t.Fatal(err)
	}
	type m = chat.Message
	for _, tc := range []struct {
		msgs []chat.Message
		want string
	}{
		{[]m{{Role: "user", Content: "Hi"}}, "<s>[INST] Hi [/INST]"},
		{[]m{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Hi \n"}, {Role: "assistant", Content: " Hello! "}, {Role: "user", Content: "Bye"}},
			// The first turn is stripped as a whole, system block included.
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Bye [/INST]"},
		{[]m{{Role: "user", Content: "Grüße 🙂"}, {Role: "assistant", Content: "Hallo"}}, "<s>[INST] Grüße 🙂 [/INST] Hallo </s>"},
		{nil, ""},
	} {
		for _, gen := range []bool{true, false} {
			got, err := tpl.Render(chat.Conversation{Messages: tc.msgs}, chat.Options{AddGenerationPrompt: gen})
			if err != nil || got != tc.want {
				t.Errorf("%v (gen %v): got %q, %v; want %q", tc.msgs, gen, got, err, tc.want)
			}
		}
	}
	_, err = tpl.Render(chat.Conversation{Messages: []chat.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}}, chat.Options{})
	var r *chat.RaisedError
	if !errors.As(err, &r) || r.Message != "Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Errorf("two user turns: %v", err)
	}
}

// TestBuiltinNames: the four formats, an unknown name's error, and the
// guess from a tokenizer's special tokens.
func TestBuiltinNames(t *testing.T) {
	if got := chat.BuiltinNames(); len(got) != 4 || got[0] != "chatml" || got[1] != "llama2" || got[2] != "llama3" || got[3] != "mistral" {
		t.Errorf("BuiltinNames = %v", got)
	}
	if _, err := chat.Builtin("vicuna"); !errors.Is(err, chat.ErrNoTemplate) {
		t.Errorf("Builtin(vicuna): %v", err)
	}
	for _, tc := range []struct {
		tokens []string
		want   string
	}{
		{[]string{"<|begin_of_text|>", "<|start_header_id|>", "<|eot_id|>"}, "llama3"},
		{[]string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, "chatml"},
		{[]string{"<s>", "</s>", "[INST]", "[/INST]"}, "mistral"},
		{[]string{"<s>", "</s>"}, ""},
		{nil, ""},
	} {
		has := func(s string) bool {
			for _, x := range tc.tokens {
				if x == s {
					return true
				}
			}
			return false
		}
		if got := chat.GuessBuiltin(has); got != tc.want {
			t.Errorf("GuessBuiltin(%v) = %q, want %q", tc.tokens, got, tc.want)
		}
	}
}

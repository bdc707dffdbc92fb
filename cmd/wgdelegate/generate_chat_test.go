package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// tiktoken256 writes a tiktoken tokenizer.model of the 256 single bytes
// (Llama 3's special tokens follow them) into dir.
func tiktoken256(t *testing.T, dir string) (string, llm.Tokenizer) {
	t.Helper()
	var b strings.Builder
	for c := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(c)}), c)
	}
	p := write(t, dir, "tokenizer.model", []byte(b.String()))
	tk, err := llm.ParseTokenizer([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return p, tk
}

func specialIDOf(t *testing.T, tk llm.Tokenizer, s string) int32 {
	t.Helper()
	id, ok, _ := llm.SpecialTokenID(tk, s)
	if !ok {
		t.Fatalf("no %s", s)
	}
	return id
}

// TestGenerateChat: --chat needs --prompt and wraps it in the built-in
// Llama 3 format for a Llama 3 tokenizer without a template beside it
// (BOS as the tokenizer's id, not text, and the template's <|eot_id|> and
// <|end_of_text|> as stop ids); a tokenizer no built-in format fits is an
// error naming --chat-template; without --chat the prompt goes as it is.
// No model runs.
func TestGenerateChat(t *testing.T) {
	if _, err := parseGenerateArgs([]string{"--chat", "m.pte"}); err == nil || !strings.Contains(err.Error(), "--chat (and --chat-template) needs --prompt") {
		t.Fatalf("--chat without --prompt: %v", err)
	}
	if _, err := parseGenerateArgs([]string{"--chat-template", "llama3", "m.pte"}); err == nil || !strings.Contains(err.Error(), "needs --prompt") {
		t.Fatalf("--chat-template without --prompt: %v", err)
	}
	dir := t.TempDir()
	path, tk := tiktoken256(t, dir)
	o, err := parseGenerateArgs([]string{"--chat", "--tokenizer", path, "--prompt", " Hi ", "m.pte"})
	if err != nil || !o.chat {
		t.Fatalf("parse: %+v, %v", o, err)
	}
	text, bos, stops, err := chatPrompt(o, tk)
	if err != nil || !bos || text != "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" {
		t.Fatalf("chatPrompt = %q, %v, %v", text, bos, err)
	}
	if want := []int32{specialIDOf(t, tk, "<|eot_id|>"), specialIDOf(t, tk, "<|end_of_text|>")}; !slices.Equal(stops, want) {
		t.Errorf("stops %v, want %v", stops, want)
	}
	if ids, _ := tk.Encode(text, bos); ids[0] != tk.BOS() || ids[1] == tk.BOS() || ids[1] != specialIDOf(t, tk, "<|start_header_id|>") {
		t.Fatalf("ids %v: want one BOS first", ids)
	}

	var l2c bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&l2c, 300); err != nil {
		t.Fatal(err)
	}
	other, err := llm.ParseTokenizer(l2c.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	o.tokenizer = write(t, t.TempDir(), "tokenizer.bin", l2c.Bytes())
	if _, _, _, err := chatPrompt(o, other); err == nil || !strings.Contains(err.Error(), "no chat template beside") || !strings.Contains(err.Error(), "--chat-template") {
		t.Fatalf("--chat with a llama2.c tokenizer: %v", err)
	}
	// --chat-template llama2 fits it: BOS from the tokenizer's id (the
	// text "<s>" is not a token of llama2.c's), the stop </s> left out
	// as it is not one token there.
	o.chatTemplate = "llama2"
	text, bos, stops, err = chatPrompt(o, other)
	if err != nil || !bos || text != "[INST] Hi [/INST]" {
		t.Fatalf("--chat-template llama2: %q, %v, %v, %v", text, bos, stops, err)
	}
	o.chat, o.chatTemplate = false, ""
	if text, bos, stops, _ := chatPrompt(o, other); text != " Hi " || !bos || stops != nil {
		t.Fatalf("without --chat: %q, %v, %v", text, bos, stops)
	}
}

// TestGenerateChatModelTemplate: a tokenizer_config.json beside the
// tokenizer gives --chat the model's own template and tokens, and its
// stop texts (the <|eom_id|> its source writes, eos_token); a
// chat_template.jinja there wins; --chat-template FILE takes a Jinja file
// (with the tokens of the config beside the tokenizer) or a config; a
// template that refuses the conversation is an error with its message.
func TestGenerateChatModelTemplate(t *testing.T) {
	dir := t.TempDir()
	path, tk := tiktoken256(t, dir)
	cfg, _ := json.Marshal(map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": map[string]any{"content": "<|eot_id|>"},
		"chat_template": "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{{ m.content|upper }}<|eom_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>{% endif %}"})
	write(t, dir, "tokenizer_config.json", cfg)
	o, err := parseGenerateArgs([]string{"--chat", "--tokenizer", path, "--prompt", "hi", "m.pte"})
	if err != nil {
		t.Fatal(err)
	}
	text, bos, stops, err := chatPrompt(o, tk)
	if err != nil || !bos || text != "<|start_header_id|>user<|end_header_id|>HI<|eom_id|><|start_header_id|>assistant<|end_header_id|>" {
		t.Fatalf("config's template: %q, %v, %v", text, bos, err)
	}
	if want := []int32{specialIDOf(t, tk, "<|eom_id|>"), specialIDOf(t, tk, "<|eot_id|>")}; !slices.Equal(stops, want) {
		t.Errorf("stops %v, want %v", stops, want)
	}

	write(t, dir, "chat_template.jinja", []byte("{{ bos_token }}J:{{ messages[0].content }}<|eot_id|>\n"))
	if text, _, _, err := chatPrompt(o, tk); err != nil || text != "J:hi<|eot_id|>" {
		t.Fatalf("chat_template.jinja: %q, %v", text, err)
	}

	other := t.TempDir()
	o.chatTemplate = write(t, other, "my.jinja", []byte("{{ bos_token }}M:{{ messages[0].content }}{{ eos_token }}"))
	if text, bos, _, err := chatPrompt(o, tk); err != nil || !bos || text != "M:hi<|eot_id|>" {
		t.Fatalf("--chat-template my.jinja: %q, %v, %v", text, bos, err)
	}
	cfg2, _ := json.Marshal(map[string]any{"eos_token": "<|end_of_text|>", "chat_template": "C:{{ messages[0].content }}{{ eos_token }}"})
	o.chatTemplate = write(t, other, "tokenizer_config.json", cfg2)
	if text, bos, stops, err := chatPrompt(o, tk); err != nil || bos || text != "C:hi<|end_of_text|>" || !slices.Equal(stops, []int32{specialIDOf(t, tk, "<|end_of_text|>")}) {
		t.Fatalf("--chat-template tokenizer_config.json: %q, %v, %v, %v", text, bos, stops, err)
	}
	o.chatTemplate = write(t, other, "refuse.jinja", []byte("{{ raise_exception('only system messages here') }}"))
	if _, _, _, err := chatPrompt(o, tk); err == nil || !strings.Contains(err.Error(), "only system messages here") {
		t.Fatalf("raise_exception: %v", err)
	}
	o.chatTemplate = filepath.Join(other, "missing.jinja")
	if _, _, _, err := chatPrompt(o, tk); err == nil || !strings.Contains(err.Error(), "built-in format") {
		t.Fatalf("missing --chat-template: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"chat_template": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o.chatTemplate = ""
	if err := os.Remove(filepath.Join(dir, "chat_template.jinja")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := chatPrompt(o, tk); err == nil || !strings.Contains(err.Error(), "malformed tokenizer config") {
		t.Fatalf("bad config: %v", err)
	}
}

// TestStopTokens: --stop wins; else the tokenizer's stop tokens (or the
// program's EOS) with the chat template's added once each.
func TestStopTokens(t *testing.T) {
	_, tk := tiktoken256(t, t.TempDir())
	tkStops := llm.StopTokens(tk)
	// Not one of the tokenizer's stops: a template's end-of-turn token
	// the tokenizer does not know as one.
	eom := specialIDOf(t, tk, "<|start_header_id|>")
	for _, tc := range []struct {
		o         generateOptions
		tok       llm.Tokenizer
		chatStops []int32
		want      []int32
	}{
		{generateOptions{stopSet: true, stop: []int32{5}}, tk, []int32{eom}, []int32{5}},
		{generateOptions{}, tk, nil, tkStops},
		{generateOptions{}, tk, []int32{tkStops[0], eom}, append(slices.Clone(tkStops), eom)},
		{generateOptions{}, nil, []int32{7}, []int32{2, 7}},
		{generateOptions{}, nil, nil, []int32{2}},
	} {
		if got := stopTokens(tc.o, tc.tok, []int32{2}, tc.chatStops); !slices.Equal(got, tc.want) {
			t.Errorf("stopSet %v, tokenizer %v, chat %v: %v, want %v", tc.o.stopSet, tc.tok != nil, tc.chatStops, got, tc.want)
		}
	}
	if slices.Contains(tkStops, eom) {
		t.Fatalf("the tokenizer's stops %v already hold %d: the case above tests nothing", tkStops, eom)
	}
}

// TestGenerateChatRun runs generate --chat on a model: the prompt the
// built-in llama2 format renders is what is prefilled, BOS as the
// tokenizer's id (the text "<s>" would be several byte tokens).
func TestGenerateChatRun(t *testing.T) {
	dir := t.TempDir()
	pte, _, _ := writeGenModel(t, dir, "m", 0)
	var l2c bytes.Buffer
	if err := models.WriteLlama2CTokenizer(&l2c, int(genCfg.Vocab)); err != nil {
		t.Fatal(err)
	}
	tokPath := write(t, dir, "tokenizer.bin", l2c.Bytes())
	tk, err := llm.ParseTokenizer(l2c.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want, err := tk.Encode("[INST] hi [/INST]", true)
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "generate", "--json", "--data", strings.TrimSuffix(pte, ".pte")+".ptd", "--tokenizer", tokPath,
		"--chat-template", "llama2", "--prompt", "hi", "-n", "2", "--temperature", "0", pte)
	var r generateResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if r.PromptTokens != len(want) || r.GeneratedTokens == 0 {
		t.Fatalf("prompt %d tokens, want %d (%v); %+v", r.PromptTokens, len(want), want, r)
	}
}

package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
)

// TestGenerateChat: --chat needs --prompt, wraps it in Llama 3 instruct's
// format (encoded without another BOS) and refuses a tokenizer without
// Llama 3's header tokens. No model runs.
func TestGenerateChat(t *testing.T) {
	if _, err := parseGenerateArgs([]string{"--chat", "m.pte"}); err == nil || !strings.Contains(err.Error(), "--chat needs --prompt") {
		t.Fatalf("--chat without --prompt: %v", err)
	}
	o, err := parseGenerateArgs([]string{"--chat", "--tokenizer", "t.model", "--prompt", " Hi ", "m.pte"})
	if err != nil || !o.chat {
		t.Fatalf("parse: %+v, %v", o, err)
	}
	var b strings.Builder
	for c := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(c)}), c)
	}
	tk, err := llm.ParseTokenizer([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	text, bos, err := chatPrompt(o, tk)
	if err != nil || bos || text != "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" {
		t.Fatalf("chatPrompt = %q, %v, %v", text, bos, err)
	}
	if ids, _ := tk.Encode(text, bos); ids[0] != tk.BOS() || ids[1] == tk.BOS() {
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
	if _, _, err := chatPrompt(o, other); err == nil || !strings.Contains(err.Error(), "Llama 3 tokenizer") {
		t.Fatalf("--chat with a llama2.c tokenizer: %v", err)
	}
	o.chat = false
	if text, bos, _ := chatPrompt(o, other); text != " Hi " || !bos {
		t.Fatalf("without --chat: %q, %v", text, bos)
	}
}

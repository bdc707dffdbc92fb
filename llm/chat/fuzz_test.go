package chat_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// FuzzParseConfig: any bytes are a Config or an error wrapping ErrConfig,
// never a panic; a Config's templates compile or fail as template errors.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"bos_token": "<s>", "chat_template": "{{ bos_token }}"}`,
		`{"chat_template": [{"name": "default", "template": "d"}, {"name": "tool_use", "template": "t"}]}`,
		`{"eos_token": {"content": "</s>"}, "additional_special_tokens": ["<a>", {"content": "<b>"}]}`,
		`{"chat_template": null, "bos_token": null}`,
		`[1]`, `{"chat_template": [{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := chat.ParseConfig(b)
		if err != nil {
			if !errors.Is(err, chat.ErrConfig) {
				t.Fatalf("error not ErrConfig: %v", err)
			}
			return
		}
		for _, src := range c.Templates {
			if len(src) > 4096 {
				return
			}
		}
		if _, err := c.Template("fuzz"); err != nil && !errors.Is(err, chat.ErrTemplate) && !errors.Is(err, chat.ErrNoTemplate) {
			t.Fatalf("Template: %v", err)
		}
	})
}

// FuzzConversation: any request body decoded as a Conversation renders
// with the real templates of testdata, or fails with an error (a template
// error, or a message, tool or document that is not JSON of the right
// shape), never a panic.
func FuzzConversation(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "conversations", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var tpls []*chat.Template
	for _, name := range []string{"meta-llama-Llama-3.1-8B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "deepseek-ai-DeepSeek-V3.1.jinja"} {
		tpl, err := chat.LoadTemplateFile(filepath.Join("testdata", "templates", name), chat.Tokens{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			f.Fatal(err)
		}
		tpls = append(tpls, tpl)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c chat.Conversation
		if json.Unmarshal(b, &c) != nil {
			return
		}
		for _, tpl := range tpls {
			out, err := tpl.Render(c, chat.Options{AddGenerationPrompt: true})
			if err == nil && out == "" && len(c.Messages) > 0 {
				t.Fatalf("%s rendered nothing for %d messages", tpl.Name(), len(c.Messages))
			}
		}
	})
}

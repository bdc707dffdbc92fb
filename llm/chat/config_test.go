package chat_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// TestParseConfig reads the shapes tokenizer_config.json files have: a
// template string or a list of named ones, tokens as strings, AddedToken
// objects or null, additional_special_tokens, and no template at all.
func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       chat.Config
	}{
		{"string template, string tokens",
			`{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "chat_template": "{{ bos_token }}", "model_max_length": 4096}`,
			chat.Config{Templates: map[string]string{"default": "{{ bos_token }}"}, Tokens: chat.Tokens{BOS: "<s>", EOS: "</s>", Other: map[string]string{"unk_token": "<unk>"}}}},
		{"AddedToken objects, null bos, additional tokens",
			`{"bos_token": null, "eos_token": {"__type": "AddedToken", "content": "<|im_end|>", "lstrip": false, "normalized": false, "rstrip": false, "single_word": false}, "pad_token": "<|endoftext|>", "additional_special_tokens": ["<|im_start|>", {"content": "<|im_end|>"}], "chat_template": "x"}`,
			chat.Config{Templates: map[string]string{"default": "x"}, Tokens: chat.Tokens{EOS: "<|im_end|>", Other: map[string]string{"pad_token": "<|endoftext|>"}, Additional: []string{"<|im_start|>", "<|im_end|>"}}}},
		{"named templates",
			`{"chat_template": [{"name": "default", "template": "d"}, {"name": "tool_use", "template": "t"}, {"name": "rag", "template": "r"}]}`,
			chat.Config{Templates: map[string]string{"default": "d", "tool_use": "t", "rag": "r"}}},
		{"no template", `{"eos_token": "</s>"}`, chat.Config{Templates: map[string]string{}, Tokens: chat.Tokens{EOS: "</s>"}}},
		{"null template", `{"chat_template": null}`, chat.Config{Templates: map[string]string{}}},
		{"a tokenizer.json", `{"version": "1.0", "added_tokens": [{"id": 0, "content": "<s>", "special": true}], "model": {"type": "BPE"}, "chat_template": "{{ messages }}"}`,
			chat.Config{Templates: map[string]string{"default": "{{ messages }}"}}},
	} {
		got, err := chat.ParseConfig([]byte(tc.json))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestParseConfigErrors: every malformed shape is an error wrapping
// ErrConfig.
func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []string{
		``,
		`[]`,
		`{"chat_template": 3}`,
		`{"chat_template": [{"name": "default"}]}`,
		`{"chat_template": [{"template": "x"}]}`,
		`{"chat_template": [{"name": "a", "template": "x"}, {"name": "a", "template": "y"}]}`,
		`{"bos_token": 1}`,
		`{"eos_token": {"lstrip": false}}`,
		`{"additional_special_tokens": "x"}`,
		`{"additional_special_tokens": [1]}`,
		`{"additional_special_tokens": [""]}`,
		`{"chat_template": "x"`,
	} {
		if _, err := chat.ParseConfig([]byte(tc)); !errors.Is(err, chat.ErrConfig) {
			t.Errorf("%q: %v, want ErrConfig", tc, err)
		}
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFind: chat_template.jinja wins over tokenizer_config.json's
// default (keeping its other named templates and its tokens),
// tokenizer.json's template is used when the config has none, and a
// directory without any template is ErrNoTemplate.
func TestFind(t *testing.T) {
	const cfg = `{"bos_token": "<B>", "eos_token": "<E>", "chat_template": [{"name": "default", "template": "cfg {{ bos_token }}"}, {"name": "tool_use", "template": "tools {{ eos_token }}"}]}`
	one := chat.Conversation{Messages: []chat.Message{{Role: "user", Content: "hi"}}}
	for _, tc := range []struct {
		name      string
		files     map[string]string
		want      string // rendered without tools
		wantTools string // rendered with tools
		wantErr   error
	}{
		{"config alone", map[string]string{"tokenizer_config.json": cfg}, "cfg <B>", "tools <E>", nil},
		{"jinja wins", map[string]string{"tokenizer_config.json": cfg, "chat_template.jinja": "jinja {{ bos_token }}\n"}, "jinja <B>", "tools <E>", nil},
		{"jinja alone", map[string]string{"chat_template.jinja": "jinja [{{ bos_token }}]"}, "jinja []", "jinja []", nil},
		{"tokenizer.json's template, config's tokens", map[string]string{"tokenizer_config.json": `{"bos_token": "<B>"}`, "tokenizer.json": `{"chat_template": "tj {{ bos_token }}", "bos_token": "<X>"}`}, "tj <B>", "tj <B>", nil},
		{"tokenizer.json alone", map[string]string{"tokenizer.json": `{"chat_template": "tj {{ bos_token }}", "bos_token": "<X>"}`}, "tj <X>", "tj <X>", nil},
		{"none", map[string]string{"tokenizer_config.json": `{"bos_token": "<B>"}`, "tokenizer.json": `{"model": {}}`}, "", "", chat.ErrNoTemplate},
		{"empty dir", nil, "", "", chat.ErrNoTemplate},
		{"bad config", map[string]string{"tokenizer_config.json": `{"chat_template": 1}`, "chat_template.jinja": "x"}, "", "", chat.ErrConfig},
		{"bad template", map[string]string{"chat_template.jinja": "{% if %}"}, "", "", chat.ErrTemplate},
	} {
		tpl, _, err := chat.Find(writeFiles(t, tc.files))
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got, err := tpl.Render(one, chat.Options{})
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
		tools := one
		tools.Tools = []json.RawMessage{}
		got, err = tpl.Render(tools, chat.Options{})
		if err != nil || got != tc.wantTools {
			t.Errorf("%s with tools: %q, %v; want %q", tc.name, got, err, tc.wantTools)
		}
	}
	if _, _, err := chat.Find(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, chat.ErrNoTemplate) {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := chat.LoadConfig(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadConfig(missing): %v", err)
	}
}

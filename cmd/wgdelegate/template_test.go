package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chatTestdata is llm/chat's test data: real templates, conversations and
// the prompts Python's jinja2 renders for them.
const chatTestdata = "../../llm/chat/testdata"

// expectedPrompt returns the prompt expected.json has for a case with no
// extra variables.
func expectedPrompt(t *testing.T, template, conversation string, gen bool) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chatTestdata, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Cases []struct {
			Template            string          `json:"template"`
			Conversation        string          `json:"conversation"`
			AddGenerationPrompt bool            `json:"add_generation_prompt"`
			Vars                json.RawMessage `json:"vars"`
			Prompt              *string         `json:"prompt"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	for _, c := range exp.Cases {
		if c.Template == template && c.Conversation == conversation && c.AddGenerationPrompt == gen && c.Vars == nil && c.Prompt != nil {
			return *c.Prompt
		}
	}
	t.Fatalf("no prompt for %s/%s/%v", template, conversation, gen)
	return ""
}

// TestTemplateCommand: the command prints exactly what Python's jinja2
// renders (no newline added), from a template file with --bos/--eos or
// from a tokenizer_config.json, with and without the generation prompt,
// with --date fixing strftime_now, --var passing variables, a config's
// named tool_use template picked for tools, a conversation on stdin, and
// --stops.
func TestTemplateCommand(t *testing.T) {
	tpl := func(f string) string { return filepath.Join(chatTestdata, "templates", f) }
	conv := func(c string) string { return filepath.Join(chatTestdata, "conversations", c+".json") }
	dir := t.TempDir()
	src, err := os.ReadFile(tpl("Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"eos_token": map[string]any{"__type": "AddedToken", "content": "<|im_end|>"}, "pad_token": "<|endoftext|>",
		"chat_template": []map[string]string{{"name": "default", "template": string(src)}, {"name": "tool_use", "template": "TOOLS {{ tools|length }} {{ eos_token }}"}}})
	cfgPath := write(t, dir, "tokenizer_config.json", cfg)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--template", tpl("meta-llama-Llama-3.1-8B-Instruct.jinja"), "--bos", "<|begin_of_text|>", "--eos", "<|eot_id|>", "--messages", conv("unicode")},
			expectedPrompt(t, "llama-3.1", "unicode", true)},
		{[]string{"--template", tpl("meta-llama-Llama-3.1-8B-Instruct.jinja"), "--bos", "<|begin_of_text|>", "--messages", conv("tools"), "--no-generation-prompt"},
			expectedPrompt(t, "llama-3.1", "tools", false)},
		{[]string{"--template", tpl("meta-llama-Llama-3.2-3B-Instruct.jinja"), "--bos", "<|begin_of_text|>", "--messages", conv("basic"), "--date", "26 Jul 2024"},
			expectedPrompt(t, "llama-3.2", "basic", true)},
		{[]string{"--template", tpl("meta-llama-Llama-3.2-3B-Instruct.jinja"), "--messages", conv("single"), "--date", "2025-01-02", "--no-generation-prompt"},
			"<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 02 Jan 2025\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"},
		{[]string{"--tokenizer-config", cfgPath, "--messages", conv("basic")},
			expectedPrompt(t, "qwen-2.5", "basic", true)},
		{[]string{"--tokenizer-config", cfgPath, "--messages", conv("tools")}, "TOOLS 2 <|im_end|>"},
		{[]string{"--tokenizer-config", cfgPath, "--messages", conv("tools"), "--eos", "E", "--name", "tool_use"}, "TOOLS 2 E"},
		{[]string{"--template", tpl("Qwen-Qwen3-0.6B.jinja"), "--messages", conv("single"), "--var", "enable_thinking=false"},
			"<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{[]string{"--template", "chatml", "--messages", conv("single"), "--var", `x={"a": [1, 2.0]}`}, "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"},
		{[]string{"--template", tpl("google-gemma-2-2b-it.jinja"), "--eos", "<eos>", "--stops"}, "<end_of_turn>\n<eos>\n"},
		{[]string{"--template", "llama3", "--stops"}, "<|eot_id|>\n<|end_of_text|>\n"},
	} {
		if got := mustRun(t, append([]string{"template"}, tc.args...)...); got != tc.want {
			t.Errorf("%v:\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}

	var out bytes.Buffer
	if err := templateCommand([]string{"--template", "mistral", "--messages", "-"}, strings.NewReader(`{"messages": [{"role": "user", "content": "Hi"}]}`), &out); err != nil || out.String() != "<s>[INST]Hi[/INST]" {
		t.Errorf("stdin: %q, %v", out.String(), err)
	}
}

// TestTemplateCommandErrors: each mistake exits 1 with one line saying
// what is wrong; a template's raise_exception prints its message.
func TestTemplateCommandErrors(t *testing.T) {
	dir := t.TempDir()
	conv := filepath.Join(chatTestdata, "conversations", "basic.json")
	gemma := filepath.Join(chatTestdata, "templates", "google-gemma-2-2b-it.jinja")
	bad := write(t, dir, "bad.json", []byte(`{"messages": "no"}`))
	badTpl := write(t, dir, "bad.jinja", []byte(`{% if %}`))
	noTpl := write(t, dir, "tokenizer_config.json", []byte(`{"eos_token": "</s>"}`))
	for _, tc := range []struct {
		wants []string
		args  []string
	}{
		{[]string{"System role not supported"}, []string{"--template", gemma, "--messages", conv}},
		{[]string{"give the template", "--tokenizer-config"}, []string{"--messages", conv}},
		{[]string{"not both"}, []string{"--template", gemma, "--tokenizer-config", noTpl, "--messages", conv}},
		{[]string{"--messages FILE"}, []string{"--template", gemma}},
		{[]string{"nope.jinja", "built-in format"}, []string{"--template", "nope.jinja", "--messages", conv}},
		{[]string{"missing.json"}, []string{"--template", "chatml", "--messages", filepath.Join(dir, "missing.json")}},
		{[]string{"not a conversation"}, []string{"--template", "chatml", "--messages", bad}},
		{[]string{"bad.jinja"}, []string{"--template", badTpl, "--messages", conv}},
		{[]string{"no chat template"}, []string{"--tokenizer-config", noTpl, "--messages", conv}},
		{[]string{"--var", "NAME=JSON"}, []string{"--template", "chatml", "--messages", conv, "--var", "novalue"}},
		{[]string{"--var", "not JSON"}, []string{"--template", "chatml", "--messages", conv, "--var", "x=hello"}},
		{[]string{"--date", "not a date"}, []string{"--template", "chatml", "--messages", conv, "--date", "yesterday"}},
		{[]string{"no template named", "rag"}, []string{"--template", "chatml", "--messages", conv, "--name", "rag"}},
		{[]string{"unexpected arguments", "extra"}, []string{"--template", "chatml", "--messages", conv, "extra"}},
	} {
		mustFail(t, tc.wants, append([]string{"template"}, tc.args...)...)
	}
	for _, args := range [][]string{{"template", "--help"}, {"template", "-h"}, {"help", "template"}} {
		code, stdout, stderr := invoke(t, args...)
		if code != 0 || stderr != "" || stdout != templateUsage || !hasExamples(stdout) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if !strings.Contains(usage, "wgdelegate template") {
		t.Error("the command list does not name template")
	}
}

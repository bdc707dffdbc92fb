package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wgdelegate/wgdelegate/llm/chat"
)

const templateUsage = `Usage:
  wgdelegate template (--template FILE | --tokenizer-config FILE) --messages FILE [flags]

Renders a conversation with a model's chat template, as Hugging Face
transformers' apply_chat_template does, and prints the prompt exactly as the
model is given it (no newline added): what generate --chat encodes. The
conversation is the JSON of an OpenAI chat request, {"messages": [...],
"tools": [...]} ("documents" too); a message may carry every field the
template reads (tool_calls, tool_call_id, ...). A template that refuses the
conversation (raise_exception) exits 1 with its message.

Flags:
  --template FILE          the template's Jinja source (chat_template.jinja),
                           or a built-in format: llama3, llama2, chatml,
                           mistral
  --tokenizer-config FILE  a tokenizer_config.json (or a tokenizer.json with
                           a chat_template): its template, bos_token,
                           eos_token and other special tokens
  --messages FILE          the conversation JSON; - reads stdin
  --no-generation-prompt   leave out the start of the assistant's reply
                           (add_generation_prompt false)
  --bos S                  bos_token (over the config's)
  --eos S                  eos_token (over the config's)
  --date DATE              the date strftime_now formats, for output that
                           does not change day by day: "26 Jul 2024" or
                           2024-07-26 (default: now)
  --var NAME=JSON          another template variable, as JSON
                           (repeatable): --var enable_thinking=false
  --name NAME              which of a config's named templates (default:
                           tool_use when there are tools, else default)
  --stops                  print the texts that end a reply (the template's
                           end-of-turn token, eos_token), one per line,
                           instead of the prompt
  -h, --help               print this help

Examples:
  wgdelegate template --tokenizer-config Llama-3.2-1B-Instruct/tokenizer_config.json --messages chat.json
  wgdelegate template --template chat_template.jinja --bos '<s>' --eos '</s>' --messages chat.json --date 2024-07-26
  echo '{"messages": [{"role": "user", "content": "Hi"}]}' | wgdelegate template --template chatml --messages -
  wgdelegate template --tokenizer-config qwen3/tokenizer_config.json --var enable_thinking=false --messages chat.json
  wgdelegate template --tokenizer-config tokenizer_config.json --stops
`

// templateOptions are the parsed arguments of "wgdelegate template".
type templateOptions struct {
	template, config, messages string
	noGen, stops               bool
	bos, eos, name             *string
	now                        time.Time
	vars                       map[string]any
}

func parseTemplateArgs(args []string) (templateOptions, error) {
	o := templateOptions{vars: map[string]any{}}
	str := func(dst **string) func(string) error { return func(v string) error { *dst = &v; return nil } }
	specs := []flagSpec{
		{names: []string{"template"}, value: true, set: func(v string) error { o.template = v; return nil }},
		{names: []string{"tokenizer-config"}, value: true, set: func(v string) error { o.config = v; return nil }},
		{names: []string{"messages"}, value: true, set: func(v string) error { o.messages = v; return nil }},
		{names: []string{"no-generation-prompt"}, set: func(string) error { o.noGen = true; return nil }},
		{names: []string{"bos"}, value: true, set: str(&o.bos)},
		{names: []string{"eos"}, value: true, set: str(&o.eos)},
		{names: []string{"name"}, value: true, set: str(&o.name)},
		{names: []string{"stops"}, set: func(string) error { o.stops = true; return nil }},
		{names: []string{"date"}, value: true, set: func(v string) error {
			t, err := parseDate(v)
			o.now = t
			return err
		}},
		{names: []string{"var"}, value: true, set: func(v string) error {
			name, val, ok := strings.Cut(v, "=")
			if !ok || name == "" {
				return fmt.Errorf("%q is not NAME=JSON", v)
			}
			if !json.Valid([]byte(val)) {
				return fmt.Errorf("%s: %q is not JSON (a string is written \"...\")", name, val)
			}
			o.vars[name] = json.RawMessage(val)
			return nil
		}},
	}
	pos, err := parseArgs("template", args, specs)
	if err != nil {
		return o, err
	}
	switch {
	case len(pos) > 0:
		return o, fmt.Errorf("template: unexpected arguments: %s", strings.Join(pos, " "))
	case o.template != "" && o.config != "":
		return o, errors.New("template: give --template or --tokenizer-config, not both")
	case o.template == "" && o.config == "":
		return o, errors.New("template: give the template: --template FILE (or a built-in format) or --tokenizer-config FILE")
	case o.messages == "" && !o.stops:
		return o, errors.New("template: give the conversation: --messages FILE")
	}
	return o, nil
}

// parseDate reads --date: "26 Jul 2024", "26 July 2024" or 2024-07-26, at
// midnight in the local time zone (strftime_now formats a naive local
// time).
func parseDate(v string) (time.Time, error) {
	for _, layout := range []string{"2 Jan 2006", "2 January 2006", "2006-01-02", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date like \"26 Jul 2024\" or 2024-07-26", v)
}

// loadChatTemplate reads a template for --template or --chat-template: a
// file of Jinja source, a tokenizer_config.json (or tokenizer.json,
// told by its JSON), or the name of a built-in format.
func loadChatTemplate(path string) (*chat.Template, error) {
	if _, err := os.Stat(path); err != nil {
		if slices.Contains(chat.BuiltinNames(), path) {
			return chat.Builtin(path)
		}
		return nil, fmt.Errorf("%w (nor is it a built-in format: %s)", err, strings.Join(chat.BuiltinNames(), ", "))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if isJSONObject(b) {
		c, err := chat.ParseConfig(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return c.Template(path)
	}
	return chat.New(path, string(b), chat.Tokens{})
}

// isJSONObject reports whether b is a JSON object (a config), not a
// template's source.
func isJSONObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

func templateCommand(args []string, stdin io.Reader, stdout io.Writer) error {
	o, err := parseTemplateArgs(args)
	if err != nil {
		return err
	}
	var tpl *chat.Template
	if o.config != "" {
		c, err := chat.LoadConfig(o.config)
		if err != nil {
			return fmt.Errorf("template: %w", err)
		}
		if tpl, err = c.Template(o.config); err != nil {
			return fmt.Errorf("template: %w", err)
		}
	} else if tpl, err = loadChatTemplate(o.template); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if o.bos != nil || o.eos != nil {
		tok := tpl.Tokens()
		if o.bos != nil {
			tok.BOS = *o.bos
		}
		if o.eos != nil {
			tok.EOS = *o.eos
		}
		tpl = tpl.WithTokens(tok)
	}
	if o.stops {
		for _, s := range tpl.Stops() {
			if _, err := fmt.Fprintln(stdout, s); err != nil {
				return err
			}
		}
		return nil
	}
	var b []byte
	if o.messages == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(o.messages)
	}
	if err != nil {
		return fmt.Errorf("template: --messages: %w", err)
	}
	var conv chat.Conversation
	if err := json.Unmarshal(b, &conv); err != nil {
		return fmt.Errorf("template: %s: not a conversation ({\"messages\": [...], \"tools\": [...]}): %w", o.messages, err)
	}
	opts := chat.Options{AddGenerationPrompt: !o.noGen, Vars: o.vars, Now: o.now}
	if o.name != nil {
		opts.Name = *o.name
	}
	prompt, err := tpl.Render(conv, opts)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	_, err = io.WriteString(stdout, prompt)
	return err
}

package chat_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// TestPick: templates are picked by name, else tool_use when the
// conversation has tools (even an empty list) and the model has it, else
// default; asking for a name the model lacks, or a set without default,
// is ErrNoTemplate.
func TestPick(t *testing.T) {
	tpl, err := chat.NewSet("m", map[string]string{"default": "D", "tool_use": "T", "rag": "R"}, chat.Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	noTools := chat.Conversation{}
	tools := chat.Conversation{Tools: []json.RawMessage{}}
	for _, tc := range []struct {
		c    chat.Conversation
		name string
		want string
	}{
		{noTools, "", "D"},
		{tools, "", "T"},
		{noTools, "rag", "R"},
		{tools, "default", "D"},
	} {
		got, err := tpl.Render(tc.c, chat.Options{Name: tc.name})
		if err != nil || got != tc.want {
			t.Errorf("tools %v, name %q: %q, %v; want %q", tc.c.Tools != nil, tc.name, got, err, tc.want)
		}
	}
	if _, err := tpl.Render(noTools, chat.Options{Name: "nope"}); !errors.Is(err, chat.ErrNoTemplate) || !strings.Contains(err.Error(), "default, rag, tool_use") {
		t.Errorf("unknown name: %v", err)
	}
	if got := tpl.Names(); !reflect.DeepEqual(got, []string{"default", "rag", "tool_use"}) {
		t.Errorf("Names = %v", got)
	}
	only, err := chat.NewSet("m", map[string]string{"tool_use": "T"}, chat.Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := only.Render(noTools, chat.Options{}); !errors.Is(err, chat.ErrNoTemplate) {
		t.Errorf("no default: %v", err)
	}
	if got, err := only.Render(tools, chat.Options{}); err != nil || got != "T" {
		t.Errorf("tool_use alone, with tools: %q, %v", got, err)
	}
	if _, err := chat.NewSet("m", nil, chat.Tokens{}); !errors.Is(err, chat.ErrNoTemplate) {
		t.Errorf("no templates: %v", err)
	}
}

// TestRenderErrors: every bad input is an error of its kind, never a
// panic: a template that does not compile or fails (*TemplateError), a
// message or tool that is not the right JSON, an integer past int64, a
// variable of a type with no template value, JSON nested too deep.
func TestRenderErrors(t *testing.T) {
	for _, src := range []string{"{% if x %}", "{{ x ", "{% for %}{% endfor %}", "{% endif %}", strings.Repeat("x", 1<<20+1)} {
		_, err := chat.New("bad.jinja", src, chat.Tokens{})
		var te *chat.TemplateError
		if !errors.As(err, &te) || !errors.Is(err, chat.ErrTemplate) || te.Template != "bad.jinja" {
			t.Errorf("New(%.20q): %v, want a *TemplateError", src, err)
		}
	}
	tpl, err := chat.New("t", "{{ messages[0].content }}{{ tools }}{{ x.y.z() }}", chat.Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(s string) []chat.Message { return []chat.Message{{JSON: json.RawMessage(s)}} }
	for _, tc := range []struct {
		name string
		c    chat.Conversation
		vars map[string]any
		is   error
	}{
		{"not callable", chat.Conversation{Messages: msg(`{"role": "user", "content": "x"}`)}, nil, chat.ErrTemplate},
		{"message not an object", chat.Conversation{Messages: msg(`["user", "x"]`)}, nil, nil},
		{"message not JSON", chat.Conversation{Messages: msg(`{"role": `)}, nil, nil},
		{"trailing data", chat.Conversation{Messages: msg(`{} {}`)}, nil, nil},
		{"big integer", chat.Conversation{Messages: msg(`{"n": 123456789012345678901234567890}`)}, nil, nil},
		{"tool not JSON", chat.Conversation{Tools: []json.RawMessage{json.RawMessage(`{`)}}, nil, nil},
		{"document not JSON", chat.Conversation{Documents: []json.RawMessage{json.RawMessage(`nul`)}}, nil, nil},
		{"deep", chat.Conversation{Messages: msg(strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200))}, nil, nil},
		{"bad variable", chat.Conversation{}, map[string]any{"x": struct{}{}}, nil},
		{"bad variable JSON", chat.Conversation{}, map[string]any{"x": json.RawMessage(`{`)}, nil},
		{"variable messages", chat.Conversation{}, map[string]any{"messages": "x"}, nil},
		{"variable add_generation_prompt", chat.Conversation{}, map[string]any{"add_generation_prompt": true}, nil},
		{"variable of the package's", chat.Conversation{}, map[string]any{"wgd_tojson": 1}, nil},
	} {
		_, err := tpl.Render(tc.c, chat.Options{Vars: tc.vars})
		if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestRaised: raise_exception is a *RaisedError carrying the template's
// message, matching ErrTemplate.
func TestRaised(t *testing.T) {
	tpl, err := chat.New("t", `{% if messages|length == 0 %}{{ raise_exception("no messages: " ~ 'none given') }}{% endif %}ok`, chat.Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render(chat.Conversation{}, chat.Options{})
	var r *chat.RaisedError
	if !errors.As(err, &r) || r.Message != "no messages: none given" || !errors.Is(err, chat.ErrTemplate) || !strings.Contains(err.Error(), "no messages: none given") {
		t.Errorf("got %v", err)
	}
	if got, err := tpl.Render(chat.Conversation{Messages: []chat.Message{{Role: "user"}}}, chat.Options{}); got != "ok" || err != nil {
		t.Errorf("with a message: %q, %v", got, err)
	}
}

// TestVariables: the special tokens (an empty one undefined), the
// variables over them (Go values and JSON), add_generation_prompt,
// tools and documents None when nil, and strftime_now at Options.Now.
func TestVariables(t *testing.T) {
	tpl, err := chat.New("t", `{{ bos_token is defined }} {{ eos_token }} {{ pad_token }} {{ additional_special_tokens|tojson }} {{ add_generation_prompt }} {{ tools }} {{ documents|tojson }} {{ x|tojson }} {{ n }} {{ l|tojson }} {{ m|tojson }} {{ strftime_now("%d %b %Y") }}`,
		chat.Tokens{EOS: "</s>", Other: map[string]string{"pad_token": "<pad>"}, Additional: []string{"<a>", "<b>"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render(chat.Conversation{Documents: []json.RawMessage{json.RawMessage(`{"title": "T", "text": "é"}`)}}, chat.Options{
		AddGenerationPrompt: true,
		Vars:                map[string]any{"eos_token": "<E>", "x": json.RawMessage(`{"b": [1, 2.0], "a": null}`), "n": 1.5, "l": []string{"p"}, "m": map[string]any{"z": 1, "y": true}},
		Now:                 time.Date(2025, 1, 2, 3, 4, 5, 0, time.Local),
	})
	want := `False <E> <pad> ["<a>", "<b>"] True None [{"title": "T", "text": "é"}] {"b": [1, 2.0], "a": null} 1.5 ["p"] {"y": true, "z": 1} 02 Jan 2025`
	if err != nil || got != want {
		t.Errorf("got  %q, %v\nwant %q", got, err, want)
	}
	// A variable shadows a global, as render's keyword arguments do.
	shadow, err := chat.New("t", `{{ strftime_now }}`, chat.Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := shadow.Render(chat.Conversation{}, chat.Options{Vars: map[string]any{"strftime_now": "fixed"}}); err != nil || got != "fixed" {
		t.Errorf("shadowed strftime_now: %q, %v", got, err)
	}
}

// TestMessageJSON: a decoded message keeps its JSON (and so every field
// and the key order) and reads role and content; a built one writes role
// and content.
func TestMessageJSON(t *testing.T) {
	var c chat.Conversation
	in := `{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}]}, {"content": "hi", "role": "user"}], "tools": [{"type": "function"}]}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Messages[0].Role != "assistant" || c.Messages[0].Content != "" || c.Messages[1].Role != "user" || c.Messages[1].Content != "hi" || len(c.Tools) != 1 || c.Documents != nil {
		t.Fatalf("decoded %+v", c)
	}
	tpl, err := chat.New("t", `{% for m in messages %}{{ m|tojson }};{% endfor %}`, chat.Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render(c, chat.Options{})
	want := `{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}]};{"content": "hi", "role": "user"};`
	if err != nil || got != want {
		t.Errorf("got  %q, %v\nwant %q", got, err, want)
	}
	b, err := json.Marshal(chat.Message{Role: "user", Content: "é"})
	if err != nil || string(b) != `{"role":"user","content":"é"}` {
		t.Errorf("Marshal: %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`"text"`), &chat.Message{}); err == nil {
		t.Error("a message that is a string decoded")
	}
}

// TestStops: the stop texts each real template implies, found by
// rendering a probe conversation, with the end-of-turn tokens its source
// writes and eos_token.
func TestStops(t *testing.T) {
	f := loadGolden(t)
	for name, want := range map[string][]string{
		"llama-3.1":                {"<|eot_id|>", "<|eom_id|>"},
		"llama-3.2":                {"<|eot_id|>"},
		"qwen-2.5":                 {"<|im_end|>"},
		"qwen-3":                   {"<|im_end|>"},
		"mistral-nemo":             {"</s>"},
		"mistral-small-3.2":        {"</s>"},
		"gemma-2":                  {"<end_of_turn>", "<eos>"},
		"phi-3.5":                  {"<|end|>", "<|endoftext|>"},
		"deepseek-r1-distill-qwen": {"<｜end▁of▁sentence｜>"},
		"deepseek-v3.1":            {"<｜end▁of▁sentence｜>"},
		"hermes-3-tool-use":        {"<|im_end|>"},
	} {
		if got := f.templates[name].Stops(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Stops = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string][]string{
		"llama3":  {"<|eot_id|>", "<|end_of_text|>"},
		"llama2":  {"</s>"},
		"chatml":  {"<|im_end|>", "<|endoftext|>"},
		"mistral": {"</s>"},
	} {
		b, err := chat.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Stops(); !reflect.DeepEqual(got, want) {
			t.Errorf("builtin %s: Stops = %q, want %q", name, got, want)
		}
	}
	// The probe finds an end-of-turn token of no family listed here,
	// after spaces: Command R's.
	cr, err := chat.New("t", `{% for m in messages %}<|START_OF_TURN_TOKEN|><|{{ m.role|upper }}_TOKEN|>{{ m.content }} <|END_OF_TURN_TOKEN|>{% endfor %}`, chat.Tokens{EOS: "<E>"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cr.Stops(); !reflect.DeepEqual(got, []string{"<|END_OF_TURN_TOKEN|>", "<E>"}) {
		t.Errorf("Command R style: Stops = %q", got)
	}
	// A template that writes nothing after a reply stops at EOS alone,
	// and one that refuses every probe too.
	for _, src := range []string{"{% for m in messages %}{{ m.content }}\n{% endfor %}", "{{ raise_exception('no') }}"} {
		tpl, err := chat.New("t", src, chat.Tokens{EOS: "<E>"})
		if err != nil {
			t.Fatal(err)
		}
		if got := tpl.Stops(); !reflect.DeepEqual(got, []string{"<E>"}) {
			t.Errorf("%q: Stops = %q", src, got)
		}
	}
}

// TestConcurrentRender: one Template renders from many goroutines at once
// (as a server's requests do) with the results of one at a time; run
// with -race.
func TestConcurrentRender(t *testing.T) {
	f := loadGolden(t)
	tpl := f.templates["hermes-3-tool-use"]
	conv := f.convs["tool_call"]
	want, err := tpl.Render(conv, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for g := range 16 {
		go func() {
			for range 20 {
				got, err := tpl.Render(conv, chat.Options{AddGenerationPrompt: true, Vars: map[string]any{"g": g}})
				if err == nil && got != want {
					err = errors.New("a different prompt")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

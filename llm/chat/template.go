package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one message of a conversation. Role and Content are what
// every template reads; JSON, when set, is the whole message as a JSON
// object, as an OpenAI chat request carries it (content null or a list of
// parts, tool_calls, tool_call_id, name, reasoning_content, ...): the
// template then gets that object as parsed, its keys in order, and Role
// and Content are not used. Decoding a message from JSON sets all three
// (Role and Content when they are strings).
type Message struct {
	Role    string
	Content string
	JSON    json.RawMessage
}

// UnmarshalJSON keeps the message's JSON object and reads its role and
// content.
func (m *Message) UnmarshalJSON(b []byte) error {
	var f struct {
		Role    json.RawMessage `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*m = Message{JSON: bytes.Clone(b)}
	_ = json.Unmarshal(f.Role, &m.Role)
	_ = json.Unmarshal(f.Content, &m.Content)
	return nil
}

// MarshalJSON writes the message's JSON, or an object of its role and
// content.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.JSON != nil {
		return m.JSON, nil
	}
	return json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{m.Role, m.Content})
}

// Conversation is what a template renders: the messages, and the tools
// and documents the model may use, in the shapes of an OpenAI chat
// request ({"messages": [...], "tools": [...]}) and of transformers'
// apply_chat_template. Nil Tools or Documents are None to the template
// (as when a request has none); an empty, non-nil list is an empty list.
type Conversation struct {
	Messages  []Message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools,omitempty"`
	Documents []json.RawMessage `json:"documents,omitempty"`
}

// Options are the rest of what a render takes.
type Options struct {
	// AddGenerationPrompt ends the prompt with what starts the
	// assistant's reply (add_generation_prompt).
	AddGenerationPrompt bool
	// Vars are more template variables (enable_thinking, date_string,
	// tools_in_user_message, ...), which win over the special tokens and
	// functions of the same name, as apply_chat_template's keyword
	// arguments do; messages, tools, documents and add_generation_prompt
	// are not theirs to set. A value is JSON (json.RawMessage), or nil, a
	// bool, a number, a string, []string, []any or map[string]any (its
	// keys sorted).
	Vars map[string]any
	// Now is the time strftime_now formats; the zero Time is the time of
	// the render.
	Now time.Time
	// Name picks one of the model's named templates ("rag", ...); empty
	// picks as transformers does: "tool_use" when the conversation has
	// tools and the model has one, else "default".
	Name string
}

// Tokens are the special tokens a template sees, as transformers'
// special_tokens_map gives them: bos_token, eos_token and the others by
// variable name (unk_token, pad_token, ...), and the list
// additional_special_tokens. An empty token is not defined to the
// template, as a null or missing one is not in transformers.
type Tokens struct {
	BOS, EOS   string
	Other      map[string]string
	Additional []string
}

func (t Tokens) vars() map[string]jinja.Value {
	v := map[string]jinja.Value{}
	for k, s := range t.Other {
		if s != "" {
			v[k] = jinja.NewString(s)
		}
	}
	if t.BOS != "" {
		v["bos_token"] = jinja.NewString(t.BOS)
	}
	if t.EOS != "" {
		v["eos_token"] = jinja.NewString(t.EOS)
	}
	if t.Additional != nil {
		items := make([]jinja.Value, len(t.Additional))
		for i, s := range t.Additional {
			items[i] = jinja.NewString(s)
		}
		v["additional_special_tokens"] = jinja.NewList(items)
	}
	return v
}

// Template is a model's chat template (or its set of named templates),
// compiled, with the special tokens it is rendered with. It is safe for
// concurrent use.
type Template struct {
	name     string
	sources  map[string]string
	compiled map[string]*jinja.Template
	tokens   Tokens
	stops    []string
}

// DefaultName and ToolUseName are the names transformers picks among a
// model's named templates.
const (
	DefaultName = "default"
	ToolUseName = "tool_use"
)

// maxTemplateBytes caps a template's source.
const maxTemplateBytes = 1 << 20

// New compiles source, a chat template, to be rendered with tokens; name
// says where it came from in errors (a file name).
func New(name, source string, tokens Tokens) (*Template, error) {
	return NewSet(name, map[string]string{DefaultName: source}, tokens)
}

// NewSet compiles a model's named templates (the list form of a
// tokenizer_config.json's chat_template), each by its name.
func NewSet(name string, sources map[string]string, tokens Tokens) (*Template, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("chat: %s: %w", name, ErrNoTemplate)
	}
	t := &Template{name: name, sources: maps.Clone(sources), compiled: map[string]*jinja.Template{}, tokens: tokens}
	for _, n := range slices.Sorted(maps.Keys(sources)) {
		src := sources[n]
		if len(src) > maxTemplateBytes {
			return nil, &TemplateError{Template: t.label(n), Err: fmt.Errorf("%d bytes, at most %d", len(src), maxTemplateBytes)}
		}
		c, err := compile(src)
		if err != nil {
			return nil, &TemplateError{Template: t.label(n), Err: err}
		}
		t.compiled[n] = c
	}
	t.stops = t.findStops()
	return t, nil
}

// compile compiles a template; the library's parser is guarded against
// panics so that a malformed template is an error.
func compile(src string) (c *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("the template's parser failed: %v", r)
		}
	}()
	return jinja.Compile(rewriteFilters(jinjaNewlines(src)))
}

// jinjaNewlines does to a template's source what Jinja's lexer does
// first: \r\n and \r become \n, and one newline at the end is dropped
// (keep_trailing_newline is off in transformers' environment).
func jinjaNewlines(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	return strings.TrimSuffix(src, "\n")
}

// label names template n of t in errors.
func (t *Template) label(n string) string {
	if len(t.sources) == 1 {
		return t.name
	}
	return t.name + " (" + n + ")"
}

// Name returns where the template came from (a file name, or "builtin
// llama3", ...).
func (t *Template) Name() string { return t.name }

// Names returns the names of the model's templates, sorted.
func (t *Template) Names() []string { return slices.Sorted(maps.Keys(t.sources)) }

// Source returns the source of template name ("" when there is none).
func (t *Template) Source(name string) string { return t.sources[name] }

// Tokens returns the special tokens the template is rendered with.
func (t *Template) Tokens() Tokens { return t.tokens }

// WithTokens returns a copy of t rendered with other special tokens.
func (t *Template) WithTokens(tokens Tokens) *Template {
	c := *t
	c.tokens = tokens
	c.stops = c.findStops()
	return &c
}

// pick returns the template o and c ask for, as transformers'
// get_chat_template picks: by name, else tool_use when there are tools
// and the model has it, else default.
func (t *Template) pick(c Conversation, o Options) (string, *jinja.Template, error) {
	if o.Name != "" {
		if tpl, ok := t.compiled[o.Name]; ok {
			return o.Name, tpl, nil
		}
		return "", nil, fmt.Errorf("chat: %s: no template named %q (it has %s): %w", t.name, o.Name, strings.Join(t.Names(), ", "), ErrNoTemplate)
	}
	if c.Tools != nil {
		if tpl, ok := t.compiled[ToolUseName]; ok {
			return ToolUseName, tpl, nil
		}
	}
	if tpl, ok := t.compiled[DefaultName]; ok {
		return DefaultName, tpl, nil
	}
	return "", nil, fmt.Errorf("chat: %s: several templates (%s) and none named %q: %w", t.name, strings.Join(t.Names(), ", "), DefaultName, ErrNoTemplate)
}

// Render renders the conversation to the prompt text, as transformers'
// apply_chat_template(messages, tools=..., documents=...,
// add_generation_prompt=..., tokenize=False, **vars) does. The special
// tokens are written as text: encode the prompt with a tokenizer that
// recognises them, and without adding BOS when the prompt starts with it.
// A template's raise_exception is a *RaisedError; any other failure a
// *TemplateError; both match ErrTemplate.
func (t *Template) Render(c Conversation, o Options) (string, error) {
	n, tpl, err := t.pick(c, o)
	if err != nil {
		return "", err
	}
	data, err := t.data(c, o)
	if err != nil {
		return "", err
	}
	out, err := render(tpl, data)
	if err != nil {
		if r, ok := errors.AsType[*RaisedError](err); ok {
			return "", r
		}
		return "", &TemplateError{Template: t.label(n), Err: err}
	}
	return out, nil
}

// render runs a compiled template, turning a panic of the library into an
// error.
func render(tpl *jinja.Template, data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("the template engine failed: %v", r)
		}
	}()
	return tpl.RenderValues(data)
}

// data builds the template's variables as apply_chat_template does: the
// special tokens, the functions of transformers' environment
// (raise_exception, strftime_now, and the sandbox's range), the extra
// variables over them (as render's keyword arguments shadow globals),
// then messages, tools, documents and add_generation_prompt, which a
// variable may not set (Python refuses a repeated keyword argument), and
// this package's filters and macro depth count.
func (t *Template) data(c Conversation, o Options) (map[string]jinja.Value, error) {
	v := t.tokens.vars()
	now := o.Now
	v["raise_exception"] = jinja.NewCallable("raise_exception", raiseException)
	v["range"] = jinja.NewCallable("range", sandboxRange)
	v["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		tm := now
		if tm.IsZero() {
			tm = time.Now()
		}
		s, err := strftime(tm, args[0].AsString())
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(s), nil
	})
	for k, x := range o.Vars {
		switch {
		case k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt":
			return nil, fmt.Errorf("chat: variable %s: set by the conversation and options, not by Vars", k)
		case strings.HasPrefix(k, filterPrefix):
			return nil, fmt.Errorf("chat: variable %s: the %s prefix is this package's", k, filterPrefix)
		}
		val, err := goValue(x, 0)
		if err != nil {
			return nil, fmt.Errorf("chat: variable %s: %w", k, err)
		}
		v[k] = val
	}
	msgs := make([]jinja.Value, len(c.Messages))
	for i, m := range c.Messages {
		val, err := messageValue(m)
		if err != nil {
			return nil, fmt.Errorf("chat: message %d: %w", i, err)
		}
		msgs[i] = val
	}
	v["messages"] = jinja.NewList(msgs)
	var err error
	if v["tools"], err = listValue("tool", c.Tools); err != nil {
		return nil, err
	}
	if v["documents"], err = listValue("document", c.Documents); err != nil {
		return nil, err
	}
	v["add_generation_prompt"] = jinja.NewBool(o.AddGenerationPrompt)
	depth := 0
	v[filterPrefix+"enter"] = jinja.NewCallable("macro", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		if depth++; depth > maxMacroDepth {
			return jinja.Undefined(), fmt.Errorf("macro calls nested more than %d deep", maxMacroDepth)
		}
		return jinja.NewString(""), nil
	})
	v[filterPrefix+"leave"] = jinja.NewCallable("macro", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		depth--
		return jinja.NewString(""), nil
	})
	for name, f := range filters {
		v[filterPrefix+name] = jinja.NewCallable(name, f)
	}
	return v, nil
}

// filters are the replacements of the library's filters of these names
// (rewriteFilters).
var filters = map[string]func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error){
	"tojson": tojson,
	"trim":   trim,
	"string": stringFilter,
}

// maxMacroDepth is how deeply macro calls may nest: Python stops a
// runaway recursion with RecursionError, Go would overflow its stack.
const maxMacroDepth = 200

// maxRange is the most items range() makes, as in Jinja's sandbox
// (MAX_RANGE).
const maxRange = 100000

// sandboxRange is Python's range(stop), range(start, stop[, step]) over
// integers, refusing more than maxRange items as Jinja's sandbox does.
func sandboxRange(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(kwargs) > 0 || len(args) < 1 || len(args) > 3 {
		return jinja.Undefined(), errors.New("range takes 1 to 3 integers")
	}
	n := make([]int64, len(args))
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: %s is not an integer", a)
		}
		n[i] = a.AsInt()
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(n) > 1 {
		start, stop = n[0], n[1]
	}
	if len(n) > 2 {
		step = n[2]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	var count uint64
	switch {
	case step > 0 && stop > start:
		count = (uint64(stop-start) + uint64(step) - 1) / uint64(step)
	case step < 0 && start > stop:
		count = (uint64(start-stop) + uint64(-step) - 1) / uint64(-step)
	}
	if count > maxRange {
		return jinja.Undefined(), fmt.Errorf("range: %d items, the sandbox allows %d", count, maxRange)
	}
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// raiseException is the template's raise_exception(message).
func raiseException(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	msg := ""
	if len(args) > 0 {
		if args[0].IsString() {
			msg = args[0].AsString()
		} else {
			msg = args[0].String()
		}
	}
	return jinja.Undefined(), &RaisedError{Message: msg}
}

func messageValue(m Message) (jinja.Value, error) {
	if m.JSON != nil {
		v, err := jsonValue(m.JSON)
		if err != nil {
			return v, err
		}
		if !v.IsDict() {
			return jinja.Undefined(), fmt.Errorf("%s is not a JSON object", truncate(m.JSON))
		}
		return v, nil
	}
	d := jinja.NewDict()
	d.AsDict().Set("role", jinja.NewString(m.Role))
	d.AsDict().Set("content", jinja.NewString(m.Content))
	return d, nil
}

func listValue(what string, raw []json.RawMessage) (jinja.Value, error) {
	if raw == nil {
		return jinja.None(), nil
	}
	items := make([]jinja.Value, len(raw))
	for i, r := range raw {
		v, err := jsonValue(r)
		if err != nil {
			return v, fmt.Errorf("chat: %s %d: %w", what, i, err)
		}
		items[i] = v
	}
	return jinja.NewList(items), nil
}

// truncate shortens b for an error message.
func truncate(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

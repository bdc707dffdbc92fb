package chat

import (
	"fmt"
	"slices"
	"strings"
)

// builtin is a chat format this package knows, for models that ship no
// template: its Jinja source (written here, rendering the format as the
// model family's own template does for conversations without tools),
// the tokens it is rendered with, and the special token that tells a
// tokenizer of the family.
type builtin struct {
	source string
	tokens Tokens
	marker string
}

var builtins = map[string]builtin{
	// Llama 3 instruct, as Meta-Llama-3-8B-Instruct's template writes it:
	// BOS once, a header per message, the content trimmed, <|eot_id|>
	// after each.
	"llama3": {
		source: `{%- for message in messages %}
    {%- if loop.first %}{{- bos_token }}{% endif %}
    {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' }}
    {{- message.content | trim }}
    {{- '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}`,
		tokens: Tokens{BOS: "<|begin_of_text|>", EOS: "<|end_of_text|>"},
		marker: "<|start_header_id|>",
	},
	// Llama 2 chat: each user turn "<s>[INST] ... [/INST]", the system
	// message inside the first one between <<SYS>> markers, each reply
	// " ... </s>"; user and assistant must alternate.
	"llama2": {
		source: `{%- set ns = namespace(system='') %}
{%- set turns = messages %}
{%- if messages and messages[0].role == 'system' %}
    {%- set ns.system = '<<SYS>>\n' + messages[0].content + '\n<</SYS>>\n\n' %}
    {%- set turns = messages[1:] %}
{%- endif %}
{%- for message in turns %}
    {%- if (message.role == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message.role == 'user' %}
        {%- set text = message.content %}
        {%- if loop.first %}{% set text = ns.system + text %}{% endif %}
        {{- bos_token + '[INST] ' + text | trim + ' [/INST]' }}
    {%- else %}
        {{- ' ' + message.content | trim + ' ' + eos_token }}
    {%- endif %}
{%- endfor %}`,
		tokens: Tokens{BOS: "<s>", EOS: "</s>"},
	},
	// ChatML, as Qwen's templates write a conversation with a system
	// message and no tools.
	"chatml": {
		source: `{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}`,
		tokens: Tokens{EOS: "<|endoftext|>"},
		marker: "<|im_start|>",
	},
	// Mistral's [INST] format as Mistral Nemo's template writes it
	// without tools: BOS, "[INST]...[/INST]" per user turn with the system
	// message before the last one's text, each reply followed by EOS;
	// user and assistant must alternate.
	"mistral": {
		source: `{%- set ns = namespace(system='', last=-1) %}
{%- set turns = messages %}
{%- if messages and messages[0].role == 'system' %}
    {%- set ns.system = messages[0].content %}
    {%- set turns = messages[1:] %}
{%- endif %}
{%- for message in turns %}
    {%- if (message.role == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message.role == 'user' %}{% set ns.last = loop.index0 %}{% endif %}
{%- endfor %}
{{- bos_token }}
{%- for message in turns %}
    {%- if message.role == 'user' %}
        {%- if loop.index0 == ns.last and ns.system %}
            {{- '[INST]' + ns.system + '\n\n' + message.content + '[/INST]' }}
        {%- else %}
            {{- '[INST]' + message.content + '[/INST]' }}
        {%- endif %}
    {%- else %}
        {{- message.content + eos_token }}
    {%- endif %}
{%- endfor %}`,
		tokens: Tokens{BOS: "<s>", EOS: "</s>"},
		marker: "[INST]",
	},
}

// BuiltinNames returns the names of the built-in chat formats: chatml,
// llama2, llama3, mistral.
func BuiltinNames() []string {
	var n []string
	for k := range builtins {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// Builtin returns a built-in chat format, for a model that ships no
// template: "llama3" (Llama 3 instruct: <|begin_of_text|>, headers,
// <|eot_id|>), "llama2" (Llama 2 chat: <s>[INST] <<SYS>>...<</SYS>> ...
// [/INST] ... </s>), "chatml" (<|im_start|>role ... <|im_end|>, as Qwen)
// or "mistral" ([INST]...[/INST]...</s>, as Mistral Nemo). It is rendered
// with the family's special tokens; WithTokens gives others.
func Builtin(name string) (*Template, error) {
	b, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("chat: no built-in format %q (there are %s): %w", name, strings.Join(BuiltinNames(), ", "), ErrNoTemplate)
	}
	return New("builtin "+name, b.source, b.tokens)
}

// GuessBuiltin picks the built-in format of a tokenizer by the special
// tokens it has (has reports whether a text is one of its special
// tokens): llama3 for <|start_header_id|>, chatml for <|im_start|>,
// mistral for [INST]; "" when none fits (Llama 2's tokenizer has no token
// of its own: ask for llama2 by name).
func GuessBuiltin(has func(token string) bool) string {
	for _, n := range []string{"llama3", "chatml", "mistral"} {
		if has(builtins[n].marker) {
			return n
		}
	}
	return ""
}

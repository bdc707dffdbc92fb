// Package chat renders a conversation to the prompt text a chat model was
// trained on, with the model's own chat template, byte for byte as Hugging
// Face transformers' apply_chat_template does, and says which tokens end
// the model's reply.
//
//	tpl, _, err := chat.Find("Qwen2.5-0.5B-Instruct") // tokenizer_config.json, chat_template.jinja
//	if err != nil { ... }
//	conv := chat.Conversation{Messages: []chat.Message{
//		{Role: "system", Content: "Be brief."},
//		{Role: "user", Content: "Hello!"},
//	}}
//	prompt, err := tpl.Render(conv, chat.Options{AddGenerationPrompt: true})
//	if err != nil { ... } // a *RaisedError: the template refused the conversation
//	// encode prompt with the model's tokenizer; stop at tpl.Stops()
//
// # Templates
//
// A model's template is Jinja source, found (Find) in chat_template.jinja
// beside the model, else in the chat_template of its
// tokenizer_config.json, else of its tokenizer.json. chat_template may be
// a string or a list of named templates ([{"name": "default", "template":
// ...}, {"name": "tool_use", ...}]); Render picks as transformers does:
// Options.Name, else "tool_use" when the conversation has tools, else
// "default". The special tokens bos_token, eos_token, ... are read from
// the same file, as strings or AddedToken objects (ParseConfig).
//
// Models that ship no template get a built-in format (Builtin): llama3,
// llama2, chatml (Qwen) and mistral, written here in Jinja; GuessBuiltin
// picks one from a tokenizer's special tokens.
//
// # The environment
//
// A template runs as in transformers' chat_template_utils: trim_blocks and
// lstrip_blocks on, one trailing newline of the source dropped, loop
// controls ({% break %}, {% continue %}), {% generation %} blocks
// rendered as they are, and these variables: messages, tools and
// documents (None when the conversation has none), add_generation_prompt,
// the special tokens (an empty one is undefined, as a null one is in
// transformers), Options.Vars over them (enable_thinking, date_string,
// ...), raise_exception(message) (a *RaisedError carrying the message),
// strftime_now(format) (formatting Options.Now, or the time of the
// render, as Python's strftime does in the C locale), and a tojson filter
// that is json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys): non-ASCII kept, no HTML
// escaping, keys in their order, Python's float repr (1.0, 1e-05). As in
// Jinja's sandbox, range() makes at most 100000 items; macro calls nest
// at most 200 deep (Python stops a runaway recursion with RecursionError).
// JSON values reach the template as Python's json.loads gives them:
// objects keep their key order, 1 is an int and 1.0 a float.
//
// A Template is safe for concurrent use: a server compiles a model's
// template once and renders every request with it. An OpenAI request
// carries a tool call's arguments as JSON text, where transformers'
// templates expect an object (Llama 3.1's writes arguments|tojson): a
// server parses them into the message's JSON before rendering, as vLLM
// does.
//
// # Stop tokens
//
// Stops lists the texts a reply ends with: the token the template writes
// after an assistant's message (found by rendering a probe conversation:
// <|eot_id|>, <|im_end|>, <end_of_turn>, <|end|>, ...), the known
// end-of-turn tokens its source writes (Llama 3.1's <|eom_id|>), and
// eos_token. Map them to ids with the model's tokenizer.
//
// # The Jinja implementation
//
// Templates run on github.com/ardanlabs/jinja (v1.8.0, the newest that
// builds with Go 1.26), a Jinja engine written for LLM chat templates: its
// dicts keep their insertion order, it has namespace(), loop.previtem and
// nextitem, slicing with steps, macros, Python's string and dict methods,
// and the tests and filters real templates use. With this package's
// adapters it renders the test suite's real templates (Llama 3.1 and 3.2,
// Qwen 2.5 and 3, Mistral Nemo and Small 3.2, Gemma 2, Phi-3.5, DeepSeek
// R1 distill and V3.1, Hermes 3's tool_use; from llama.cpp's
// models/templates) on 12 conversations, with and without the generation
// prompt (272 cases), byte for byte as Python's jinja2 set up as
// transformers sets it up (testdata/render_expected.py), but for 20 cases
// where Python fails and the engine is lenient (below).
// github.com/nikolalohinski/gonja/v2 (v2.9.1), run on the same cases, got
// 68 of the other 252 wrong: it holds a template's data as Go maps, so
// tool schemas lose their key order in tojson and in items() (which no
// replacement filter can restore), its tojson writes compact separators,
// dict equality (Mistral Nemo's message == user_messages[-1]) does not
// hold, and split with maxsplit (DeepSeek V3.1) fails.
//
// The adapters, which change no template's meaning: the source of each
// {{ }} and {% %} tag is rewritten (tags, comments, string literals and
// raw blocks told apart, nothing of the expressions parsed) so that the
// tojson, trim and string filters are this package's (the engine looks
// its own filters up first), each {{ }} prints its value as Python's
// str() does (None, True, 1.0, {'k': 'v'}; the engine prints None as
// empty and 1.0 as 1), and each macro counts its depth;
// raise_exception, strftime_now and range are template variables, which
// shadow the engine's; \r\n and a final newline are handled as Jinja's
// lexer does; a panic of the engine is an error.
//
// What still differs from Python's jinja2 (each pinned by a case in
// testdata/snippets.json, so that a change shows): ~ concatenates None as
// empty and 1.0 as "1"; the string methods .lstrip() and .rstrip() strip
// ASCII whitespace alone and .split() ignores maxsplit; 2 ** 3 is 8.0 and
// -7 // 2 is -3; there is no format filter; a {% raw %} block loses the
// spaces between its tags; the {%+ and +%} whitespace marks are not
// understood; dict(a=1, b=2) and namespace(...) keyword arguments come
// in no fixed order (printing such a dict may order its keys differently
// from one render to the next). Where Python fails the engine is lenient:
// it iterates None as an empty list, concatenates a string and None or a
// dict, and reads an attribute of an undefined value as undefined, so a
// template that Python would refuse on such data renders instead (the
// golden cases list each: Hermes 3's tool_use template without tools,
// DeepSeek's with tool-call arguments given as an object).
package chat

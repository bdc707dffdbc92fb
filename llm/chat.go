package llm

import (
	"strings"
	"unicode"
)

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	// Role is who speaks: "system", "user" or "assistant" (or another
	// role the model was trained with).
	Role string
	// Content is the message's text.
	Content string
}

// Llama3ChatPrompt formats messages the way Llama 3 instruct models were
// trained (the chat template of Meta-Llama-3-8B-Instruct's
// tokenizer_config.json), ending with the assistant's header so that the
// model writes the reply:
//
//	<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n
//
// Each message's content is trimmed of leading and trailing whitespace
// (as Python's str.strip, the template's trim filter, does). Encode the
// prompt with bos false: it starts with <|begin_of_text|> already (unless
// messages is empty, where the template writes the assistant's header
// alone). A reply ends with <|eot_id|>, one of Llama 3's StopTokens.
//
// The special tokens are written as text, so Encode recognises them,
// including any a message's content holds; to keep a user from injecting
// them, reject or escape such content first (Tiktoken.EncodeOrdinary
// encodes text without recognising them).
func Llama3ChatPrompt(messages []ChatMessage) string {
	var b strings.Builder
	for i, m := range messages {
		if i == 0 {
			b.WriteString("<|begin_of_text|>")
		}
		b.WriteString("<|start_header_id|>")
		b.WriteString(m.Role)
		b.WriteString("<|end_header_id|>\n\n")
		b.WriteString(strings.TrimFunc(m.Content, isPythonSpace))
		b.WriteString("<|eot_id|>")
	}
	b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	return b.String()
}

// isPythonSpace is Python's str.isspace for one character: Go's
// unicode.IsSpace and the four ASCII information separators 0x1C..0x1F.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || 0x1c <= r && r <= 0x1f
}

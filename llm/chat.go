package llm

import (
	"fmt"
	"sync"

	"github.com/wgdelegate/wgdelegate/llm/chat"
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
// It renders the built-in llama3 format of package chat
// (chat.Builtin("llama3")) with add_generation_prompt; package chat
// renders a model's own template (chat.Find) and the other formats. Each
// message's content is trimmed of leading and trailing whitespace (as
// Python's str.strip, the template's trim filter, does). Encode the
// prompt with bos false: it starts with <|begin_of_text|> already (unless
// messages is empty, where the template writes the assistant's header
// alone). A reply ends with <|eot_id|>, one of Llama 3's StopTokens.
//
// The special tokens are written as text, so Encode recognises them,
// including any a message's content holds; to keep a user from injecting
// them, reject or escape such content first (Tiktoken.EncodeOrdinary
// encodes text without recognising them).
func Llama3ChatPrompt(messages []ChatMessage) string {
	msgs := make([]chat.Message, len(messages))
	for i, m := range messages {
		msgs[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	out, err := llama3Template().Render(chat.Conversation{Messages: msgs}, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		// The built-in template raises nothing and reads only role and
		// content: a failure is a bug here.
		panic(fmt.Sprintf("llm: the built-in Llama 3 template: %v", err))
	}
	return out
}

// llama3Template is chat's built-in llama3 format, compiled once.
var llama3Template = sync.OnceValue(func() *chat.Template {
	t, err := chat.Builtin("llama3")
	if err != nil {
		panic(fmt.Sprintf("llm: the built-in Llama 3 template: %v", err))
	}
	return t
})

package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// A model's template (here ChatML, as Qwen's tokenizer_config.json
// carries it) renders a conversation to the text to tokenize, and says
// where the reply ends.
func ExampleTemplate_Render() {
	const src = `{%- for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
	tpl, err := chat.New("tokenizer_config.json", src, chat.Tokens{EOS: "<|endoftext|>"})
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, err := tpl.Render(chat.Conversation{Messages: []chat.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Grüße!"},
	}}, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", prompt)
	fmt.Println(tpl.Stops())
	// Output:
	// "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nGrüße!<|im_end|>\n<|im_start|>assistant\n"
	// [<|im_end|> <|endoftext|>]
}

// An OpenAI chat request's messages and tools decode into a Conversation;
// every field of a message (tool_calls, tool_call_id, ...) reaches the
// template, and a template's raise_exception is a *RaisedError.
func ExampleConversation() {
	body := `{"messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hello?"}],
	          "tools": [{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]}`
	var c chat.Conversation
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		fmt.Println(err)
		return
	}
	tpl, err := chat.Builtin("mistral")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = tpl.Render(c, chat.Options{AddGenerationPrompt: true})
	var r *chat.RaisedError
	if errors.As(err, &r) {
		fmt.Println("refused:", r.Message)
	}
	// Output:
	// refused: After the optional system message, conversation roles must alternate user/assistant/user/assistant/...
}

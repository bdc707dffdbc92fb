package llm_test

import (
	"encoding/base64"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/wgdelegate/wgdelegate/llm"
)

// exampleTiktoken writes a tiny tiktoken file: the 256 bytes, then
// "ab" (rank 256) and " ab" (257). Llama 3's tokenizer.model has the
// same layout, with 128000 ranks.
func exampleTiktoken() []byte {
	var b strings.Builder
	for c := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(c)}), c)
	}
	fmt.Fprintf(&b, "%s 256\n%s 257\n", base64.StdEncoding.EncodeToString([]byte("ab")), base64.StdEncoding.EncodeToString([]byte(" ab")))
	return []byte(b.String())
}

// Encode with a tiktoken tokenizer.model: Llama 3's special tokens get
// the ids after the ranks (here 258 on; 128000 on in Llama 3), and are
// recognised in text.
func ExampleParseTiktoken() {
	tk, err := llm.ParseTiktoken(exampleTiktoken())
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tk.Encode("ab ab<|eot_id|>", true)
	if err != nil {
		log.Fatal(err)
	}
	var text strings.Builder
	for _, id := range ids {
		text.WriteString(tk.Decode(-1, id))
	}
	fmt.Println(ids, tk.VocabSize(), llm.StopTokens(tk))
	fmt.Printf("%q\n", text.String())
	// Output:
	// [258 256 257 267] 514 [259 266 267]
	// "<|begin_of_text|>ab ab<|eot_id|>"
}

// Encode with a Hugging Face tokenizer.json: a BPE over byte-level
// characters (Ġ is the space), merged by the order of "merges"; the
// TemplateProcessing post-processor puts <s> first when bos is set.
func ExampleParseHFTokenizer() {
	const tokenizerJSON = `{
  "added_tokens": [{"id": 4, "content": "<s>", "special": true}],
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
  "decoder": {"type": "ByteLevel"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
    "special_tokens": {"<s>": {"ids": [4]}}},
  "model": {"type": "BPE", "vocab": {"h": 0, "i": 1, "hi": 2, "Ġ": 3, "Ġhi": 5},
    "merges": ["h i", "Ġ hi"]}
}`
	tk, err := llm.ParseHFTokenizer([]byte(tokenizerJSON))
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tk.Encode("hi hi", true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids, tk.BOS())
	fmt.Printf("%q\n", tk.Decode(-1, ids[2]))
	// Output:
	// [4 2 5] 4
	// " hi"
}

// LoadTokenizer reads any of the formats, told apart by their bytes.
func ExampleLoadTokenizer() {
	dir, err := os.MkdirTemp("", "llm-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tokenizer.model")
	if err := os.WriteFile(path, exampleTiktoken(), 0o644); err != nil {
		log.Fatal(err)
	}
	tk, err := llm.LoadTokenizer(path)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Printf("%v: %T, BOS %d, EOS %d\n", llm.DetectTokenizer(b), tk, tk.BOS(), tk.EOS())
	// Output: tiktoken BPE ranks: *llm.Tiktoken, BOS 258, EOS 259
}

// Format a conversation for a Llama 3 instruct model; encode it without
// adding BOS, which the prompt starts with. Generation should stop at
// <|eot_id|>, among llm.StopTokens(tk).
func ExampleLlama3ChatPrompt() {
	prompt := llm.Llama3ChatPrompt([]llm.ChatMessage{
		{Role: "system", Content: "Answer in one word."},
		{Role: "user", Content: "What colour is the sky?"},
	})
	fmt.Printf("%q\n", prompt)

	tk, err := llm.ParseTiktoken(exampleTiktoken())
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tk.Encode(prompt, false)
	if err != nil {
		log.Fatal(err)
	}
	eot, _ := tk.SpecialTokenID("<|eot_id|>")
	fmt.Println(ids[0] == tk.BOS(), eot)
	// Output:
	// "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nAnswer in one word.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat colour is the sky?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	// true 267
}

// ExampleTokenID maps a chat template's stop texts to the token ids a
// generation stops at (GenerateOptions.StopTokens).
func ExampleTokenID() {
	tok, err := llm.LoadTokenizer("tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	var stops []int32
	for _, s := range []string{"<|eot_id|>", "<|end_of_text|>"} {
		if id, ok := llm.TokenID(tok, s); ok {
			stops = append(stops, id)
		}
	}
	fmt.Println(stops)
}

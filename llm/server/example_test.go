package server_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/server"
)

// Serve a model over OpenAI's API: /health is 503 until the model is
// set, then any OpenAI client talks to it (here the official Go SDK).
func ExampleServer() {
	f, err := buildFixture() // a small random-weight Llama, a Qwen-style tokenizer, ChatML
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	srv := server.New(server.Options{APIKey: "sk-local", Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(srv) // wgdelegate serve: an http.Server on --addr
	defer hs.Close()
	health := func() int {
		resp, err := http.Get(hs.URL + "/health")
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println("loading:", health())

	m, err := wgdelegate.Load(ctx, f.pte)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	pool, err := llm.NewPool(m, f.info, llm.SessionOptions{MaxSessions: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	defer srv.Close()
	if err := srv.SetModel(server.Model{ID: "tiny", Pool: pool, Tokenizer: f.tok, Template: f.tpl, StopTokens: llm.StopTokens(f.tok)}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("ready:", health())

	client := openai.NewClient(option.WithBaseURL(hs.URL+"/v1/"), option.WithAPIKey("sk-local"))
	params := openai.ChatCompletionNewParams{
		Model:       "tiny",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage(stopMessage)},
		Temperature: openai.Float(0),
	}
	reply, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("finish_reason %s, %d completion tokens\n", reply.Choices[0].FinishReason, reply.Usage.CompletionTokens)
	// Output:
	// loading: 503
	// ready: 200
	// finish_reason stop, 2 completion tokens
}

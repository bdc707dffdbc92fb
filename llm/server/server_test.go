package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
	"github.com/wgdelegate/wgdelegate/llm/server"
)

// greedyChat asks for a greedy chat completion of msgs.
func greedyChat(msgs []chat.Message, maxTokens int) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: modelID, Temperature: openai.Float(0), MaxTokens: openai.Int(int64(maxTokens))}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case "assistant":
			p.Messages = append(p.Messages, openai.AssistantMessage(m.Content))
		default:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		}
	}
	return p
}

// TestChat: greedy chat completions through the OpenAI Go SDK give llm's
// tokens; the template's stop token ends the reply (finish_reason stop);
// the conversation's second turn reuses the session's cache (usage's
// cached_tokens) and still gives a fresh sequence's reply; streamed, the
// same text arrives in deltas with the usage last.
func TestChat(t *testing.T) {
	ctx := context.Background()
	f := getFixture(t)
	ref := newReference(t, f)
	sv := serve(t, f, server.Options{APIKey: "secret"}, 2)

	msgs := []chat.Message{{Role: "user", Content: stopMessage}}
	prompt, want, wantRes := ref.chatReply(t, msgs, 20)
	if wantRes.Stop != imEnd || len(wantRes.Tokens) != stopAfter {
		t.Fatalf("the reference reply %v stopped at %d, want %d tokens then <|im_end|>", wantRes.Tokens, wantRes.Stop, stopAfter)
	}
	got, err := sv.client.Chat.Completions.New(ctx, greedyChat(msgs, 20))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != want || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("reply %+v, want %q with finish_reason stop", got.Choices, want)
	}
	if u := got.Usage; u.PromptTokens != int64(len(prompt)) || u.CompletionTokens != int64(stopAfter) || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("usage %+v, want %d prompt and %d completion tokens, none cached", u, len(prompt), stopAfter)
	}
	if got.Model != modelID || got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") {
		t.Errorf("response %s %s %s", got.ID, got.Object, got.Model)
	}

	// The second turn: the whole conversation again.
	msgs2 := append(slices.Clone(msgs), chat.Message{Role: "assistant", Content: want}, chat.Message{Role: "user", Content: "And then?"})
	prompt2, want2, res2 := ref.chatReply(t, msgs2, 12)
	held := append(slices.Clone(prompt), wantRes.Tokens...) // the session's cache: the reply ended at a stop, all fed
	cached := min(lcpOf(held, prompt2), len(prompt2)-1)
	if cached < len(prompt) {
		t.Fatalf("the second turn's prompt does not start with the first's")
	}
	got2, err := sv.client.Chat.Completions.New(ctx, greedyChat(msgs2, 12))
	if err != nil {
		t.Fatal(err)
	}
	if got2.Choices[0].Message.Content != want2 {
		t.Errorf("second turn: %q, want %q", got2.Choices[0].Message.Content, want2)
	}
	if u := got2.Usage; u.PromptTokens != int64(len(prompt2)) || u.PromptTokensDetails.CachedTokens != int64(cached) || u.CompletionTokens != int64(len(res2.Tokens)) {
		t.Errorf("second turn usage %+v, want %d prompt tokens of which %d cached, %d completion", u, len(prompt2), cached, len(res2.Tokens))
	}
	t.Logf("second turn: %d prompt tokens, %d reused from the session's cache, %d prefilled (first turn: %d prompt tokens, %d generated)",
		len(prompt2), got2.Usage.PromptTokensDetails.CachedTokens, int64(len(prompt2))-got2.Usage.PromptTokensDetails.CachedTokens, len(prompt), stopAfter)
	wantFinish := "length"
	if res2.Stop >= 0 {
		wantFinish = "stop"
	}
	if got2.Choices[0].FinishReason != wantFinish {
		t.Errorf("second turn: finish_reason %q, want %q", got2.Choices[0].FinishReason, wantFinish)
	}

	// Streamed, with the usage.
	p := greedyChat(msgs2, 12)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := sv.client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	var text strings.Builder
	chunks := 0
	for st.Next() {
		c := st.Current()
		acc.AddChunk(c)
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != want2 || acc.Choices[0].FinishReason != wantFinish {
		t.Errorf("streamed: %q finishing %q, want %q finishing %q", text.String(), acc.Choices[0].FinishReason, want2, wantFinish)
	}
	if acc.Usage.CompletionTokens != int64(len(res2.Tokens)) || acc.Usage.PromptTokens != int64(len(prompt2)) {
		t.Errorf("streamed usage %+v", acc.Usage)
	}
	if chunks < 3 {
		t.Errorf("%d chunks: want the role, deltas, the finish and the usage", chunks)
	}
}

// wire is s as it arrives in JSON: each invalid UTF-8 byte is U+FFFD.
func wire(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}

func lcpOf(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// TestCompletions: /v1/completions with a text prompt (after BOS, when the
// tokenizer has one), a token-id prompt, streamed and not; max_tokens ends
// with finish_reason length; a stop string cuts the text before it, also
// across a stream's deltas.
func TestCompletions(t *testing.T) {
	ctx := context.Background()
	f := getFixture(t)
	ref := newReference(t, f)
	sv := serve(t, f, server.Options{}, 2)
	prompt := "Once upon a time"
	ids, err := f.tok.Encode(prompt, f.tok.BOS() >= 0)
	if err != nil {
		t.Fatal(err)
	}
	res := ref.generate(t, ids, llm.GenerateOptions{MaxNewTokens: 10, StopTokens: stopIDs(f)})
	want := decode(f.tok, ids[len(ids)-1], res.Tokens)
	if len(res.Tokens) != 10 {
		t.Fatalf("reference: %d tokens, want 10 (no stop)", len(res.Tokens))
	}
	params := openai.CompletionNewParams{Model: modelID, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(10), Temperature: openai.Float(0)}
	got, err := sv.client.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	want = wire(want) // invalid UTF-8 (a random model's) is U+FFFD in JSON
	if got.Choices[0].Text != want || got.Choices[0].FinishReason != "length" || got.Usage.CompletionTokens != 10 || got.Usage.PromptTokens != int64(len(ids)) {
		t.Errorf("completion %q (%s, %+v), want %q (length, 10 tokens)", got.Choices[0].Text, got.Choices[0].FinishReason, got.Usage, want)
	}
	// Token ids.
	idParams := params
	idParams.Prompt = openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: toInt64(ids)}
	got, err = sv.client.Completions.New(ctx, idParams)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Text != want || got.Usage.PromptTokensDetails.CachedTokens != int64(len(ids)-1) {
		t.Errorf("token-id prompt: %q (%+v), want %q with %d cached", got.Choices[0].Text, got.Usage, want, len(ids)-1)
	}
	// A stop string in the middle of the reply, across tokens.
	cut := len(decode(f.tok, ids[len(ids)-1], res.Tokens[:3]))
	stop := want[cut-1 : cut+1]
	wantCut := want[:strings.Index(want, stop)]
	if !utf8.ValidString(stop) {
		t.Fatalf("stop %q is not UTF-8", stop)
	}
	sp := params
	sp.Stop = openai.CompletionNewParamsStopUnion{OfStringArray: []string{"never in it", stop}}
	got, err = sv.client.Completions.New(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Text != wantCut || got.Choices[0].FinishReason != "stop" {
		t.Errorf("stop %q: %q (%s), want %q (stop)", stop, got.Choices[0].Text, got.Choices[0].FinishReason, wantCut)
	}
	st := sv.client.Completions.NewStreaming(ctx, sp)
	var text strings.Builder
	finish := ""
	for st.Next() {
		c := st.Current()
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Text)
			if c.Choices[0].FinishReason != "" {
				finish = string(c.Choices[0].FinishReason)
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != wantCut || finish != "stop" {
		t.Errorf("streamed with stop %q: %q (%s), want %q (stop)", stop, text.String(), finish, wantCut)
	}
}

// stopIDs are the stop tokens the server gives a completion: the
// tokenizer's EOS.
func stopIDs(f fixture) []int32 {
	if e := f.tok.EOS(); e >= 0 {
		return []int32{e}
	}
	return nil
}

func toInt64(ids []int32) []int64 {
	out := make([]int64, len(ids))
	for i, v := range ids {
		out[i] = int64(v)
	}
	return out
}

// rawPost posts body to path and returns the status and the decoded
// error object.
func rawPost(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		t.Fatalf("%s: status %d, body %q is not an error object", url, resp.StatusCode, b)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e.Error[k]; !ok {
			t.Errorf("%s: error %v has no %q", url, e.Error, k)
		}
	}
	return resp.StatusCode, e.Error
}

// TestErrors: every refusal is OpenAI's error object with the right
// status, through the SDK and raw HTTP.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	f := getFixture(t)
	sv := serve(t, f, server.Options{APIKey: "secret", MaxBodyBytes: 4096}, 1)
	chatURL := sv.http.URL + "/v1/chat/completions"

	_, err := sv.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if ae := apiError(t, err); ae.StatusCode != http.StatusNotFound || ae.Code != "model_not_found" {
		t.Errorf("unknown model: %d %q", ae.StatusCode, ae.Code)
	}
	if _, err := sv.client.Models.Get(ctx, "gpt-4o"); apiError(t, err).StatusCode != http.StatusNotFound {
		t.Errorf("GET an unknown model: %v", err)
	}
	list, err := sv.client.Models.List(ctx)
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != modelID {
		t.Errorf("models: %+v, %v", list, err)
	}
	if m, err := sv.client.Models.Get(ctx, modelID); err != nil || m.ID != modelID {
		t.Errorf("GET the model: %+v, %v", m, err)
	}
	wrongKey := openai.NewClient(option.WithBaseURL(sv.http.URL+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	if _, err := wrongKey.Models.List(ctx); apiError(t, err).StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong key: %v", err)
	}
	long := strings.Repeat("word ", 200)
	_, err = sv.client.Chat.Completions.New(ctx, greedyChat([]chat.Message{{Role: "user", Content: long[:1000]}}, 4))
	if ae := apiError(t, err); ae.StatusCode != http.StatusBadRequest || ae.Code != "context_length_exceeded" {
		t.Errorf("a prompt past the context: %d %q %s", ae.StatusCode, ae.Code, ae.Message)
	}
	_, err = sv.client.Chat.Completions.New(ctx, greedyChat([]chat.Message{{Role: "user", Content: "hi"}}, 90))
	if ae := apiError(t, err); ae.StatusCode != http.StatusBadRequest || ae.Code != "context_length_exceeded" {
		t.Errorf("max_tokens past the context: %d %q", ae.StatusCode, ae.Code)
	}
	for _, c := range []struct {
		name, key, body string
		status          int
	}{
		{"no key", "", `{"model":"tiny-qwen","messages":[{"role":"user","content":"hi"}]}`, 401},
		{"malformed", "secret", `{"model":"tiny-qwen","messages":[`, 400},
		{"not an object", "secret", `[1,2]`, 400},
		{"trailing data", "secret", `{"model":"tiny-qwen","messages":[{"role":"user","content":"hi"}]} {}`, 400},
		{"wrong type", "secret", `{"model":"tiny-qwen","messages":"hi"}`, 400},
		{"no model", "secret", `{"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"no messages", "secret", `{"model":"tiny-qwen","messages":[]}`, 400},
		{"no role", "secret", `{"model":"tiny-qwen","messages":[{"content":"hi"}]}`, 400},
		{"image part", "secret", `{"model":"tiny-qwen","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400},
		{"bad tool arguments", "secret", `{"model":"tiny-qwen","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{nope"}}]}]}`, 400},
		{"n=2", "secret", `{"model":"tiny-qwen","n":2,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"logprobs", "secret", `{"model":"tiny-qwen","logprobs":true,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"temperature", "secret", `{"model":"tiny-qwen","temperature":-1,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"top_p", "secret", `{"model":"tiny-qwen","top_p":1.5,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"max_tokens", "secret", `{"model":"tiny-qwen","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"stop", "secret", `{"model":"tiny-qwen","stop":5,"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"json format", "secret", `{"model":"tiny-qwen","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"too large", "secret", `{"model":"tiny-qwen","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413},
		{"unknown model", "secret", `{"model":"other","messages":[{"role":"user","content":"hi"}]}`, 404},
	} {
		if status, e := rawPost(t, chatURL, c.key, c.body); status != c.status {
			t.Errorf("%s: status %d (%v), want %d", c.name, status, e, c.status)
		}
	}
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"echo", `{"model":"tiny-qwen","prompt":"a","echo":true}`, 400},
		{"two prompts", `{"model":"tiny-qwen","prompt":["a","b"]}`, 400},
		{"token past the vocabulary", `{"model":"tiny-qwen","prompt":[1,99999]}`, 400},
		{"empty prompt", `{"model":"tiny-qwen","prompt":""}`, 400},
		{"no prompt", `{"model":"tiny-qwen"}`, 400},
	} {
		if status, e := rawPost(t, sv.http.URL+"/v1/completions", "secret", c.body); status != c.status {
			t.Errorf("completions, %s: status %d (%v), want %d", c.name, status, e, c.status)
		}
	}
	if status, _ := rawPost(t, sv.http.URL+"/v1/embeddings", "secret", `{}`); status != http.StatusNotFound {
		t.Errorf("an unknown path: %d", status)
	}
}

// TestHealthAndDrain: /health is 503 until the model is set, 200 then,
// and 503 again once the server drains, when requests are refused with a
// 503; /metrics counts requests by status.
func TestHealthAndDrain(t *testing.T) {
	f := getFixture(t)
	sv := serve(t, f, server.Options{}, 1)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(sv.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/health"); code != http.StatusOK {
		t.Errorf("/health with the model set: %d", code)
	}
	if code, _ := get("/live"); code != http.StatusOK {
		t.Errorf("/live: %d", code)
	}
	// A server without its model yet.
	fresh := server.New(server.Options{})
	rec := func(method, path, body string) int {
		w := &recorder{header: http.Header{}}
		req, _ := http.NewRequest(method, path, strings.NewReader(body))
		fresh.ServeHTTP(w, req)
		return w.code
	}
	if code := rec("GET", "/health", ""); code != http.StatusServiceUnavailable {
		t.Errorf("/health while loading: %d", code)
	}
	if code := rec("POST", "/v1/completions", `{"model":"tiny-qwen","prompt":"a"}`); code != http.StatusServiceUnavailable {
		t.Errorf("a request while loading: %d", code)
	}
	if code := rec("GET", "/metrics", ""); code != http.StatusOK {
		t.Errorf("/metrics while loading: %d", code)
	}
	for _, bad := range []server.Model{
		{ID: modelID, Tokenizer: f.tok},
		{ID: modelID, Pool: sv.pool},
		{Pool: sv.pool, Tokenizer: f.tok},
		{ID: modelID, Pool: sv.pool, Tokenizer: f.tok, StopTokens: []int32{-1}},
		{ID: modelID, Pool: sv.pool, Tokenizer: f.tok, StopTokens: []int32{int32(testCfg.Vocab)}},
	} {
		if err := fresh.SetModel(bad); err == nil {
			t.Errorf("SetModel(%+v) succeeded", bad)
		}
	}
	if code := rec("GET", "/health", ""); code != http.StatusServiceUnavailable {
		t.Errorf("/health after refused models: %d", code)
	}
	if err := sv.srv.SetModel(server.Model{ID: "again", Pool: sv.pool, Tokenizer: f.tok}); err == nil {
		t.Errorf("a second SetModel succeeded")
	}

	if _, err := sv.client.Completions.New(context.Background(), openai.CompletionNewParams{Model: modelID,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")}, MaxTokens: openai.Int(2)}); err != nil {
		t.Fatal(err)
	}
	sv.srv.Drain()
	if code, _ := get("/health"); code != http.StatusServiceUnavailable {
		t.Errorf("/health while draining: %d", code)
	}
	if status, _ := rawPost(t, sv.http.URL+"/v1/completions", "", `{"model":"tiny-qwen","prompt":"a"}`); status != http.StatusServiceUnavailable {
		t.Errorf("a request while draining: %d", status)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`wgdelegate_requests_total{code="200",endpoint="completions"} 1`,
		`wgdelegate_requests_total{code="503",endpoint="completions"} 1`,
		`wgdelegate_ready 0`,
		`wgdelegate_time_to_first_token_seconds_count 1`,
		`wgdelegate_tokens_total{kind="completion"} 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

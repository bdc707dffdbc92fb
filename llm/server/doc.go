// Package server answers OpenAI's API (the chat-completions and
// completions endpoints that ollama, llama.cpp's llama-server and vLLM
// speak) with one decoder on a WebGPU device: `wgdelegate serve` is this
// package behind an http.Server.
//
//	srv := server.New(server.Options{APIKey: key})
//	hs := &http.Server{Handler: srv}
//	go hs.Serve(ln)                         // /health is 503 while loading
//	pool, err := llm.NewPool(m, info, llm.SessionOptions{MaxSessions: 8})
//	if err != nil { ... }
//	if err := srv.SetModel(server.Model{ID: "stories", Pool: pool, Tokenizer: tok, Template: tpl}); err != nil { ... }
//	...
//	srv.Drain()                             // on SIGTERM: new requests 503, /health 503
//	if hs.Shutdown(deadline) != nil {       // wait for those in flight,
//		srv.Abort()                         // then cancel what still runs
//	}
//	srv.Close()
//
// # Endpoints
//
//   - POST /v1/chat/completions: messages rendered with the model's chat
//     template (llm/chat) with the generation prompt; a content list of
//     text parts is joined with newlines, a tool call's arguments (JSON
//     text in a request) are parsed into the object templates expect,
//     tools are given to the template. The template's stop tokens
//     (<|eot_id|>, <|im_end|>, ...) end the reply as the model's EOS does.
//     Tool calls in the model's output are not parsed: the reply is text.
//   - POST /v1/completions: prompt as a string (encoded after BOS), a
//     list of one string, or a list of token ids.
//   - both: stream (server-sent events, "data: [DONE]" last) or not;
//     max_tokens or max_completion_tokens (default: until a stop or the
//     end of the context); temperature (default 1), top_p, top_k and
//     min_p (vLLM's extensions), frequency_penalty, presence_penalty and
//     repetition_penalty (over the last 64 tokens, llm's default); stop (up
//     to 16 strings: the text ends before the first, found across token
//     boundaries; streamed text holds back a tail that may start one);
//     seed (the same seed, prompt and options give the same reply; none
//     draws one); stream_options.include_usage; usage with
//     prompt_tokens_details.cached_tokens (the prompt tokens a session's
//     cache already held); finish_reason "stop" (a stop token or string)
//     or "length". n, logprobs, echo, suffix and response formats other
//     than text are refused with a 400.
//   - GET /v1/models, GET /v1/models/{id}: the one model.
//   - GET /health: 200 once the model is loaded, 503 while it loads and
//     while draining (a readiness probe); GET /live: 200 while the
//     process runs (a liveness probe).
//   - GET /metrics: Prometheus text (client_golang): requests by endpoint
//     and status, requests in flight, queue depth, sessions open,
//     generations waiting for the device, time to first token and
//     per-token latency histograms, tokens by kind (prompt prefilled,
//     prompt reused, completion), readiness, and the Go runtime's and
//     process's metrics.
//
// Errors are answered in OpenAI's shape, {"error": {"message", "type",
// "param", "code"}}: 400 for a malformed body, a bad parameter or a
// prompt (with max_tokens) past the context (code
// context_length_exceeded); 401 without the API key (Options.APIKey) on
// /v1; 404 for another model (model_not_found) or path; 413 for a body
// past Options.MaxBodyBytes; 429 when the queue is full (queue_full);
// 503 while the model loads or the server drains. A streamed request
// that fails after its first event gets an event with the error, then
// [DONE].
//
// # Sessions and scheduling
//
// Each request runs on a session of the model's llm.Pool, which keeps
// its KV cache when the request ends: the server picks the idle session
// whose cache holds the longest start of the prompt (the conversation
// the request continues: a chat's second turn prefills only its new
// tokens), else opens one while fewer than the pool's MaxSessions are
// open, else takes the idle session sharing the most (its conversation is
// dropped). With every session busy a request waits in a first-come
// queue of Options.MaxQueue, past which it gets a 429. The sessions
// generating take turns on the device step by step (llm.Pool). A client
// that disconnects cancels its generation (its request context); so do
// Options.RequestTimeout and Abort.
//
// A generation's tokens reach the handler through a queue that never
// blocks, so a slow client does not hold the device.
//
// # Replicas
//
// One process serves one model on one device. For more users than one
// GPU serves, run replicas behind a load balancer: /health as the
// readiness probe (it turns 503 while a replica drains on SIGTERM, so
// the balancer stops sending before the process exits), /live as the
// liveness probe, /metrics as the scrape target. Prefix reuse works per
// replica: a balancer that keeps a conversation on one replica (session
// affinity on a conversation or user key) keeps its reuse.
package server

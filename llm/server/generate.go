package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// request is a parsed generation request of either endpoint.
type request struct {
	prompt       []int32
	opts         llm.GenerateOptions
	stops        []string // stop strings
	stream       bool
	includeUsage bool
	chat         bool
}

// generationOptions checks the sampling parameters and turns them into
// GenerateOptions (stop tokens and the token budget are set later).
func generationOptions(p *samplingParams) (llm.GenerateOptions, error) {
	o := llm.GenerateOptions{Temperature: 1, TopP: 1} // OpenAI's defaults
	if p.N != nil && *p.N != 1 {
		return o, badRequest("n", "n = %d: one choice per request is supported", *p.N)
	}
	if p.Logprobs != nil && *p.Logprobs {
		return o, badRequest("logprobs", "logprobs are not supported")
	}
	if v := p.Temperature; v != nil {
		if *v < 0 || *v > 2 || math.IsNaN(*v) {
			return o, badRequest("temperature", "temperature %v: want 0 to 2", *v)
		}
		o.Temperature = *v
	}
	if v := p.TopP; v != nil {
		if *v <= 0 || *v > 1 || math.IsNaN(*v) {
			return o, badRequest("top_p", "top_p %v: want above 0, at most 1", *v)
		}
		o.TopP = *v
	}
	if v := p.TopK; v != nil {
		if *v < -1 {
			return o, badRequest("top_k", "top_k %d: want -1 or 0 (off) or more", *v)
		}
		o.TopK = max(*v, 0)
	}
	if v := p.MinP; v != nil {
		if *v < 0 || *v > 1 || math.IsNaN(*v) {
			return o, badRequest("min_p", "min_p %v: want 0 to 1", *v)
		}
		o.MinP = *v
	}
	for _, c := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"frequency_penalty", p.FrequencyPenalty, &o.FrequencyPenalty}, {"presence_penalty", p.PresencePenalty, &o.PresencePenalty}} {
		if c.v == nil {
			continue
		}
		if *c.v < -2 || *c.v > 2 || math.IsNaN(*c.v) {
			return o, badRequest(c.name, "%s %v: want -2 to 2", c.name, *c.v)
		}
		*c.dst = *c.v
	}
	if v := p.RepetitionPenalty; v != nil {
		if *v <= 0 || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return o, badRequest("repetition_penalty", "repetition_penalty %v: want above 0 (1 is off)", *v)
		}
		o.RepeatPenalty = *v
	}
	if p.Seed != nil {
		o.Seed = uint64(*p.Seed)
	} else {
		o.Seed = mrand.Uint64()
	}
	if err := o.Validate(); err != nil {
		return o, badRequest("", "%v", err)
	}
	return o, nil
}

// maxTokens is the request's token budget: max_completion_tokens, else
// max_tokens, else 0 (until a stop or the end of the context).
func maxTokens(p *samplingParams) (int, error) {
	v := p.MaxCompletionTokens
	name := "max_completion_tokens"
	if v == nil {
		v, name = p.MaxTokens, "max_tokens"
	}
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, badRequest(name, "%s %d: want 1 or more", name, *v)
	}
	return *v, nil
}

// checkContext answers a prompt (and token budget) past the model's
// context with the 400 OpenAI gives.
func checkContext(m *served, prompt []int32, budget int) error {
	ctxLen := m.conv.MaxSeqLen
	n := int64(len(prompt))
	if n == 0 {
		return badRequest("", "the prompt is empty")
	}
	if n >= ctxLen || (budget > 0 && n+int64(budget) > ctxLen) {
		return &APIError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: "context_length_exceeded",
			Message: fmt.Sprintf("this model's maximum context length is %d tokens: the prompt has %d and %d more were asked for", ctxLen, n, budget)}
	}
	return nil
}

// parseCommon reads what both endpoints share.
func parseCommon(m *served, p *samplingParams) (request, int, error) {
	var rq request
	if err := checkModel(m, p.Model); err != nil {
		return rq, 0, err
	}
	o, err := generationOptions(p)
	if err != nil {
		return rq, 0, err
	}
	budget, err := maxTokens(p)
	if err != nil {
		return rq, 0, err
	}
	if rq.stops, err = stopStrings(p.Stop); err != nil {
		return rq, 0, err
	}
	rq.opts = o
	rq.stream = p.Stream
	rq.includeUsage = p.Stream && p.StreamOptions != nil && p.StreamOptions.IncludeUsage
	return rq, budget, nil
}

// encode encodes text for the model, failing with a 400.
func encode(m *served, text string, bos bool) ([]int32, error) {
	ids, err := m.Tokenizer.Encode(text, bos)
	if err != nil {
		return nil, badRequest("", "the prompt cannot be encoded: %v", err)
	}
	return ids, nil
}

// parseChat reads a chat completion request and renders its prompt.
func parseChat(m *served, cr *chatRequest) (request, error) {
	rq, budget, err := parseCommon(m, &cr.samplingParams)
	if err != nil {
		return rq, err
	}
	if cr.TopLogprobs != nil && *cr.TopLogprobs > 0 {
		return rq, badRequest("top_logprobs", "logprobs are not supported")
	}
	if rf := cr.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return rq, badRequest("response_format", "response_format %q: only text is supported", rf.Type)
	}
	if m.Template == nil {
		return rq, badRequest("", "this server has no chat template for its model: use /v1/completions")
	}
	if len(cr.Messages) == 0 {
		return rq, badRequest("messages", "messages must not be empty")
	}
	conv := chat.Conversation{Tools: cr.Tools}
	for i, raw := range cr.Messages {
		msg, err := chatMessageJSON(raw, i)
		if err != nil {
			return rq, err
		}
		conv.Messages = append(conv.Messages, msg)
	}
	var vars map[string]any
	for k, v := range cr.ChatTemplateKwargs {
		if vars == nil {
			vars = map[string]any{}
		}
		vars[k] = v
	}
	text, err := m.Template.Render(conv, chat.Options{AddGenerationPrompt: true, Vars: vars})
	if err != nil {
		if errors.Is(err, chat.ErrTemplate) {
			return rq, badRequest("messages", "the chat template refused the conversation: %v", err)
		}
		return rq, badRequest("messages", "%v", err)
	}
	bos := false
	if m.bosText != "" && strings.HasPrefix(text, m.bosText) {
		text, bos = text[len(m.bosText):], true
	}
	if rq.prompt, err = encode(m, text, bos); err != nil {
		return rq, err
	}
	rq.chat = true
	rq.opts.StopTokens = slices.Clone(m.chatStops)
	rq.stops = append(rq.stops, m.chatStopTexts...)
	if err := checkContext(m, rq.prompt, budget); err != nil {
		return rq, err
	}
	rq.opts.MaxNewTokens = budget
	return rq, nil
}

// chatMessageJSON checks one message (an object with a role) and gives
// it to the template as OpenAI sent it, but for text parts joined into
// text and tool-call arguments parsed from their JSON text.
func chatMessageJSON(raw json.RawMessage, i int) (chat.Message, error) {
	members, err := parseObject(raw)
	if err != nil {
		return chat.Message{}, badRequest(fmt.Sprintf("messages[%d]", i), "message %d is not a JSON object", i)
	}
	role := ""
	for k, mb := range members {
		switch mb.Key {
		case "role":
			if json.Unmarshal(mb.Value, &role) != nil || role == "" {
				return chat.Message{}, badRequest(fmt.Sprintf("messages[%d].role", i), "message %d: role must be a non-empty string", i)
			}
		case "content":
			v, err := textContent(mb.Value, i)
			if err != nil {
				return chat.Message{}, err
			}
			members[k].Value = v
		case "tool_calls":
			v, err := toolCallArguments(mb.Value, i)
			if err != nil {
				return chat.Message{}, err
			}
			members[k].Value = v
		}
	}
	if role == "" {
		return chat.Message{}, badRequest(fmt.Sprintf("messages[%d].role", i), "message %d has no role", i)
	}
	var msg chat.Message
	if err := json.Unmarshal(writeObject(members), &msg); err != nil {
		return chat.Message{}, badRequest(fmt.Sprintf("messages[%d]", i), "message %d: %v", i, err)
	}
	return msg, nil
}

// parseCompletion reads a completion request: its prompt is a string,
// a list of one string, or a list of token ids.
func parseCompletion(m *served, cr *completionRequest) (request, error) {
	rq, budget, err := parseCommon(m, &cr.samplingParams)
	if err != nil {
		return rq, err
	}
	if cr.Echo {
		return rq, badRequest("echo", "echo is not supported")
	}
	if cr.Suffix != nil && *cr.Suffix != "" {
		return rq, badRequest("suffix", "suffix is not supported")
	}
	if cr.BestOf != nil && *cr.BestOf != 1 {
		return rq, badRequest("best_of", "best_of = %d: one choice per request is supported", *cr.BestOf)
	}
	var text string
	var texts []string
	var ids []int64
	switch {
	case json.Unmarshal(cr.Prompt, &text) == nil:
		rq.prompt, err = encode(m, text, m.Tokenizer.BOS() >= 0)
	case json.Unmarshal(cr.Prompt, &texts) == nil && len(texts) == 1:
		rq.prompt, err = encode(m, texts[0], m.Tokenizer.BOS() >= 0)
	case json.Unmarshal(cr.Prompt, &ids) == nil && len(ids) > 0:
		vocab := m.conv.Vocab
		for _, id := range ids {
			if id < 0 || id >= vocab {
				return rq, badRequest("prompt", "token id %d is outside the model's vocabulary of %d", id, vocab)
			}
			rq.prompt = append(rq.prompt, int32(id))
		}
	default:
		return rq, badRequest("prompt", "prompt must be a string, a list of one string, or a list of token ids")
	}
	if err != nil {
		return rq, err
	}
	rq.opts.StopTokens = slices.Clone(m.StopTokens)
	if err := checkContext(m, rq.prompt, budget); err != nil {
		return rq, err
	}
	rq.opts.MaxNewTokens = budget
	return rq, nil
}

// newID returns a response id with prefix.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// textStream turns generated tokens into text: it decodes them, finds the
// stop strings (the text stops before one) and holds back what is not yet
// safe to send: a trailing partial UTF-8 character, or a tail that may be
// the start of a stop string.
type textStream struct {
	tok      llm.Tokenizer
	stops    []string
	prev     int32
	text     strings.Builder
	sent     int  // bytes of text handed out
	stopped  bool // a stop string was found: text ends before it
	stopAt   int
	maxStop  int
	finished bool
}

func newTextStream(tok llm.Tokenizer, prev int32, stops []string) *textStream {
	t := &textStream{tok: tok, stops: stops, prev: prev}
	for _, s := range stops {
		t.maxStop = max(t.maxStop, len(s))
	}
	return t
}

// add appends token's text and returns the text now safe to send; stop
// reports a stop string found.
func (t *textStream) add(token int32) (delta string, stop bool) {
	t.text.WriteString(t.tok.Decode(t.prev, token))
	t.prev = token
	all := t.text.String()
	if len(t.stops) > 0 {
		from := max(0, t.sent-t.maxStop)
		first := -1
		for _, s := range t.stops {
			if i := strings.Index(all[from:], s); i >= 0 && (first < 0 || from+i < first) {
				first = from + i
			}
		}
		if first >= 0 {
			t.stopped, t.stopAt = true, first
			d := ""
			if first > t.sent {
				d = all[t.sent:first]
			}
			t.sent = max(t.sent, first)
			return d, true
		}
	}
	end := len(all) - t.holdBack(all)
	end = completeUTF8(all, t.sent, end)
	if end <= t.sent {
		return "", false
	}
	d := all[t.sent:end]
	t.sent = end
	return d, false
}

// holdBack is how many bytes at the end of all may begin a stop string.
func (t *textStream) holdBack(all string) int {
	hold := 0
	for _, s := range t.stops {
		for n := min(len(s)-1, len(all)); n > hold; n-- {
			if strings.HasSuffix(all, s[:n]) {
				hold = n
				break
			}
		}
	}
	return hold
}

// completeUTF8 moves end back past an incomplete UTF-8 character that
// starts at or after from.
func completeUTF8(s string, from, end int) int {
	for i := end - 1; i >= from && i >= end-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:end]) {
				return i
			}
			break
		}
	}
	return end
}

// rest returns what is left to send once the generation has ended.
func (t *textStream) rest() string {
	all := t.text.String()
	end := len(all)
	if t.stopped {
		end = t.stopAt
	}
	if end <= t.sent {
		return ""
	}
	d := all[t.sent:end]
	t.sent = end
	return d
}

// final is the whole text of the reply.
func (t *textStream) final() string {
	all := t.text.String()
	if t.stopped {
		return all[:t.stopAt]
	}
	return all
}

// errStopString ends a generation at a stop string.
var errStopString = errors.New("server: stop string")

// outcome is what a generation produced.
type outcome struct {
	res    llm.Result
	text   string
	finish string
	err    error
}

// chunkQueue passes text deltas from the generation, which must not wait
// on the client (it holds the device), to the handler writing them.
type chunkQueue struct {
	mu     sync.Mutex
	deltas []string
	wake   chan struct{}
}

func (q *chunkQueue) push(d string) {
	if d == "" {
		return
	}
	q.mu.Lock()
	q.deltas = append(q.deltas, d)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *chunkQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	d := q.deltas
	q.deltas = nil
	return d
}

// run generates for rq on a session, calling emit (from the generating
// goroutine, which holds the device: it must not block) with each piece
// of text safe to send.
func (s *Server) run(ctx context.Context, m *served, rq request, emit func(string)) outcome {
	t0 := time.Now()
	sess, err := m.sessions.get(ctx, rq.prompt)
	if err != nil {
		return outcome{err: err}
	}
	defer m.sessions.put(sess)
	ts := newTextStream(m.Tokenizer, rq.prompt[len(rq.prompt)-1], rq.stops)
	o := rq.opts
	var last time.Time
	o.OnToken = func(tok int32) error {
		now := time.Now()
		if last.IsZero() {
			s.metrics.ttft.Observe(now.Sub(t0).Seconds())
		} else {
			s.metrics.tokenLatency.Observe(now.Sub(last).Seconds())
		}
		last = now
		d, stop := ts.add(tok)
		emit(d)
		if s.tokenHook != nil {
			s.tokenHook(ctx)
		}
		if stop {
			return errStopString
		}
		return nil
	}
	res, err := sess.Generate(ctx, rq.prompt, o)
	st := res.Stats
	s.metrics.tokens.WithLabelValues("prompt").Add(float64(st.PromptTokens))
	s.metrics.tokens.WithLabelValues("reused").Add(float64(st.ReusedTokens))
	s.metrics.tokens.WithLabelValues("completion").Add(float64(len(res.Tokens)))
	out := outcome{res: res}
	switch {
	case errors.Is(err, errStopString):
		out.finish = "stop"
	case err != nil:
		out.err = generationError(ctx, err)
		return out
	case res.Stop >= 0:
		out.finish = "stop"
	default:
		out.finish = "length"
	}
	emit(ts.rest())
	out.text = ts.final()
	return out
}

// generationError answers a failed generation: a request past the cache
// is a 400 (checked before, so a race), a cancelled one (the client gone,
// the request timeout, a shutdown) a 503 no one may read, else a 500.
func generationError(ctx context.Context, err error) error {
	var ce *llm.CacheError
	switch {
	case errors.As(err, &ce):
		return &APIError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: "context_length_exceeded", Message: err.Error()}
	case errors.Is(err, llm.ErrOption), errors.Is(err, llm.ErrTokenRange):
		return badRequest("", "%v", err)
	case ctx.Err() != nil:
		return &APIError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "the request was cancelled: " + ctx.Err().Error()}
	}
	return &APIError{Status: http.StatusInternalServerError, Type: typeServer, Message: err.Error()}
}

// usageOf counts a generation's tokens.
func usageOf(rq request, out outcome) *usage {
	u := &usage{PromptTokens: len(rq.prompt), CompletionTokens: len(out.res.Tokens)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = out.res.Stats.ReusedTokens
	return u
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, m *served) error {
	var cr chatRequest
	if err := decodeBody(r, &cr); err != nil {
		return err
	}
	rq, err := parseChat(m, &cr)
	if err != nil {
		return err
	}
	h := newHead("chatcmpl-", m.ID)
	if !rq.stream {
		out := s.run(r.Context(), m, rq, func(string) {})
		if out.err != nil {
			return out.err
		}
		writeJSON(w, http.StatusOK, chatResponse{head: h.as("chat.completion"),
			Choices: []chatChoice{{Message: chatMessage{Role: "assistant", Content: out.text}, FinishReason: out.finish}}, Usage: usageOf(rq, out)})
		return nil
	}
	chunk := func(d chatDelta, finish *string) any {
		return chatChunk{head: h.as("chat.completion.chunk"), Choices: []chatChunkChoice{{Delta: d, FinishReason: finish}}}
	}
	empty := ""
	return s.stream(w, r, m, rq, chunk(chatDelta{Role: "assistant", Content: &empty}, nil),
		func(d string) any { return chunk(chatDelta{Content: &d}, nil) },
		func(finish string) any { return chunk(chatDelta{}, &finish) },
		func(u *usage) any {
			return chatChunk{head: h.as("chat.completion.chunk"), Choices: []chatChunkChoice{}, Usage: u}
		})
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request, m *served) error {
	var cr completionRequest
	if err := decodeBody(r, &cr); err != nil {
		return err
	}
	rq, err := parseCompletion(m, &cr)
	if err != nil {
		return err
	}
	h := newHead("cmpl-", m.ID)
	if !rq.stream {
		out := s.run(r.Context(), m, rq, func(string) {})
		if out.err != nil {
			return out.err
		}
		writeJSON(w, http.StatusOK, completionResponse{head: h.as("text_completion"),
			Choices: []completionChoice{{Text: out.text, FinishReason: &out.finish}}, Usage: usageOf(rq, out)})
		return nil
	}
	chunk := func(text string, finish *string) any {
		return completionResponse{head: h.as("text_completion"), Choices: []completionChoice{{Text: text, FinishReason: finish}}}
	}
	return s.stream(w, r, m, rq, nil,
		func(d string) any { return chunk(d, nil) },
		func(finish string) any { return chunk("", &finish) },
		func(u *usage) any {
			return completionResponse{head: h.as("text_completion"), Choices: []completionChoice{}, Usage: u}
		})
}

// fingerprint is the system_fingerprint of every response.
const fingerprint = "wgdelegate"

// newHead starts the head of the responses to one request: a fresh id
// with prefix, the time now, and the model's id.
func newHead(prefix, model string) head {
	return head{ID: newID(prefix), Created: time.Now().Unix(), Model: model, SystemFingerprint: fingerprint}
}

// as is h for objects of the kind object.
func (h head) as(object string) head {
	h.Object = object
	return h
}

// stream answers rq as server-sent events: first (when non-nil), one
// event per text delta, the finish reason, the usage when asked for, and
// "data: [DONE]". The generation runs on its own goroutine; a client
// that goes away (or a failed write) cancels it. Until the first event
// an error is answered as a JSON error; after it, as an event holding
// the error, then [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, m *served, rq request, first any,
	delta func(string) any, finish func(string) any, usageChunk func(*usage) any) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	q := &chunkQueue{wake: make(chan struct{}, 1)}
	done := make(chan outcome, 1)
	go func() { done <- s.run(ctx, m, rq, q.push) }()

	rc := http.NewResponseController(w)
	started := false
	start := func() error {
		if started {
			return nil
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if first != nil {
			return writeEvent(w, first)
		}
		return nil
	}
	send := func(ds []string) error {
		if len(ds) == 0 {
			return nil
		}
		if err := start(); err != nil {
			return err
		}
		for _, d := range ds {
			if err := writeEvent(w, delta(d)); err != nil {
				return err
			}
		}
		return rc.Flush()
	}
	for {
		select {
		case <-q.wake:
			if err := send(q.take()); err != nil {
				cancel() // the client is gone: stop generating
				<-done
				return err
			}
			continue
		case out := <-done:
			if err := send(q.take()); err != nil {
				return err
			}
			if out.err != nil {
				if !started {
					return out.err
				}
				ae := &APIError{Status: http.StatusInternalServerError, Type: typeServer, Message: out.err.Error()}
				errors.As(out.err, &ae)
				writeEvent(w, struct {
					Error *APIError `json:"error"`
				}{ae})
				writeString(w, "data: [DONE]\n\n")
				rc.Flush()
				return out.err
			}
			if err := start(); err != nil {
				return err
			}
			writeEvent(w, finish(out.finish))
			if rq.includeUsage {
				writeEvent(w, usageChunk(usageOf(rq, out)))
			}
			writeString(w, "data: [DONE]\n\n")
			return rc.Flush()
		}
	}
}

// writeEvent writes v as one server-sent event.
func writeEvent(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeString(w, "data: "+string(b)+"\n\n")
}

func writeString(w http.ResponseWriter, s string) error {
	_, err := w.Write([]byte(s))
	return err
}

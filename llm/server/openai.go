package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The request and response bodies of OpenAI's API, as much of them as
// the server reads and writes (field names are the API's).

// samplingParams are the parameters both endpoints take. The pointers
// tell a parameter left out from one given as zero.
type samplingParams struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"` // vLLM's and llama.cpp's extension
	MinP                *float64        `json:"min_p"` // likewise
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	RepetitionPenalty   *float64        `json:"repetition_penalty"` // vLLM's extension
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"` // a string or a list of strings
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N        *int   `json:"n"`
	Logprobs *bool  `json:"logprobs"`
	User     string `json:"user"`
}

// chatRequest is POST /v1/chat/completions's body.
type chatRequest struct {
	samplingParams
	Messages       []json.RawMessage `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	TopLogprobs    *int              `json:"top_logprobs"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	// ChatTemplateKwargs are more template variables (vLLM's extension:
	// enable_thinking, ...).
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
}

// completionRequest is POST /v1/completions's body.
type completionRequest struct {
	samplingParams
	Prompt json.RawMessage `json:"prompt"` // a string, a one-string list, or token ids
	Echo   bool            `json:"echo"`
	Suffix *string         `json:"suffix"`
	BestOf *int            `json:"best_of"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

// head is the fields every completion response and stream chunk starts
// with.
type head struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
}

type chatResponse struct {
	head
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatChunk struct {
	head
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type completionResponse struct {
	head
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

// APIError is an error answered in OpenAI's shape, {"error": {...}},
// with its HTTP status.
type APIError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("server: %d %s: %s", e.Status, e.Type, e.Message)
}

// The error types the server answers with.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typeNotFound       = "not_found_error"
	typeRateLimit      = "rate_limit_exceeded"
	typeUnavailable    = "service_unavailable"
	typeServer         = "server_error"
)

func badRequest(param, format string, args ...any) *APIError {
	e := &APIError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = param
	}
	return e
}

// writeError answers err: an *APIError as it is, anything else as a 500.
func writeError(w http.ResponseWriter, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = &APIError{Status: http.StatusInternalServerError, Type: typeServer, Message: err.Error()}
	}
	writeJSON(w, ae.Status, struct {
		Error *APIError `json:"error"`
	}{ae})
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// decodeBody reads a JSON request body into v: malformed JSON, or a field
// of the wrong type, is a 400 naming where; a body past the limit a 413.
func decodeBody(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	if err := d.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &APIError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: "request_too_large",
				Message: fmt.Sprintf("the request body is larger than %d bytes", mb.Limit)}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest(te.Field, "field %q: a JSON %s where %v goes", te.Field, te.Value, te.Type)
		}
		return badRequest("", "the request body is not a JSON object: %v", err)
	}
	if d.More() {
		return badRequest("", "the request body has data after its JSON object")
	}
	return nil
}

// stopStrings reads the stop parameter: null, a string or a list of
// strings.
func stopStrings(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "stop must be a string or a list of strings")
	}
	var out []string
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) > maxStops {
		return nil, badRequest("stop", "%d stop strings, at most %d", len(out), maxStops)
	}
	return out, nil
}

// maxStops caps the stop strings of a request (OpenAI takes 4; more are
// cheap here, but not unbounded).
const maxStops = 16

// jsonObject is a JSON object's members in order.
type jsonMember struct {
	Key   string
	Value json.RawMessage
}

// parseObject reads a JSON object keeping its members' order.
func parseObject(raw json.RawMessage) ([]jsonMember, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []jsonMember
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonMember{k, v})
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

// writeObject writes members as a JSON object, in order.
func writeObject(ms []jsonMember) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// textContent turns a message's content into text: a string as it is, a
// list of text parts joined with newlines (as vLLM does for templates
// that take text); null stays null. Other parts (images, audio) are not
// supported.
func textContent(raw json.RawMessage, i int) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return raw, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "message %d: content must be a string or a list of text parts", i)
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "message %d: a content part of type %q: only text parts are supported", i, p.Type)
		}
		texts = append(texts, *p.Text)
	}
	b, _ := json.Marshal(strings.Join(texts, "\n"))
	return b, nil
}

// toolCallArguments parses each tool call's function.arguments, which an
// OpenAI request carries as JSON text, into the JSON value it holds, as
// vLLM does before rendering (templates write arguments|tojson).
func toolCallArguments(raw json.RawMessage, i int) (json.RawMessage, error) {
	var calls []json.RawMessage
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, badRequest(fmt.Sprintf("messages[%d].tool_calls", i), "message %d: tool_calls must be a list", i)
	}
	for j, c := range calls {
		call, err := parseObject(c)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("messages[%d].tool_calls[%d]", i, j), "message %d: tool call %d is not an object", i, j)
		}
		for k, m := range call {
			if m.Key != "function" {
				continue
			}
			fn, err := parseObject(m.Value)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function", i, j), "message %d: tool call %d: function is not an object", i, j)
			}
			for a, f := range fn {
				var text string
				if f.Key != "arguments" || json.Unmarshal(f.Value, &text) != nil {
					continue // an object already, or not there
				}
				if !json.Valid([]byte(text)) {
					return nil, badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j), "message %d: tool call %d: arguments are not JSON", i, j)
				}
				fn[a].Value = json.RawMessage(text)
			}
			call[k].Value = writeObject(fn)
		}
		calls[j] = writeObject(call)
	}
	b, _ := json.Marshal(calls)
	return b, nil
}

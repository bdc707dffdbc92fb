package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// byteTokenizer is a tokenizer of bytes: id b+1 is byte b, 0 is BOS.
type byteTokenizer struct{}

func (byteTokenizer) Encode(text string, bos bool) ([]int32, error) {
	var ids []int32
	if bos {
		ids = append(ids, 0)
	}
	for i := 0; i < len(text); i++ {
		ids = append(ids, int32(text[i])+1)
	}
	return ids, nil
}

func (byteTokenizer) Decode(prev, tok int32) string {
	if tok <= 0 {
		return ""
	}
	return string([]byte{byte(tok - 1)})
}
func (byteTokenizer) BOS() int32     { return 0 }
func (byteTokenizer) EOS() int32     { return -1 }
func (byteTokenizer) VocabSize() int { return 257 }

// testServed is a model to parse requests for, with no device.
func testServed(t testing.TB) *served {
	t.Helper()
	tpl, err := chat.Builtin("chatml")
	if err != nil {
		t.Fatal(err)
	}
	return &served{Model: Model{ID: "m", Tokenizer: byteTokenizer{}, Template: tpl}, conv: llm.Convention{MaxSeqLen: 200, Vocab: 257}}
}

// TestChatMessageJSON: text parts are joined with newlines, tool-call
// arguments given as JSON text become the value they hold, other members
// and the members' order are kept.
func TestChatMessageJSON(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{`{"role":"user","content":"hi"}`, `{"role":"user","content":"hi"}`},
		{`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"role":"user","name":"x"}`, `{"content":"a\nb","role":"user","name":"x"}`},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"city\": \"Paris\", \"n\": 1}"}}]}`,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":{"city":"Paris","n":1}}}]}`},
		{`{"role":"assistant","tool_calls":[{"function":{"arguments":{"already":"object"},"name":"f"}}]}`,
			`{"role":"assistant","tool_calls":[{"function":{"arguments":{"already":"object"},"name":"f"}}]}`},
		{`{"role":"tool","tool_call_id":"c1","content":"sunny"}`, `{"role":"tool","tool_call_id":"c1","content":"sunny"}`},
	} {
		m, err := chatMessageJSON(json.RawMessage(c.in), 0)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if string(m.JSON) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, m.JSON, c.want)
		}
	}
	for _, bad := range []string{`[]`, `{"content":"x"}`, `{"role":""}`, `{"role":5}`, `{"role":"user","content":[{"type":"image_url"}]}`,
		`{"role":"user","content":[1]}`, `{"role":"assistant","tool_calls":{}}`, `{"role":"assistant","tool_calls":[5]}`,
		`{"role":"assistant","tool_calls":[{"function":"f"}]}`, `{"role":"assistant","tool_calls":[{"function":{"arguments":"{"}}]}`} {
		_, err := chatMessageJSON(json.RawMessage(bad), 3)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "3") {
			t.Errorf("%s: %v, want a 400 naming message 3", bad, err)
		}
	}
}

// TestTextStream: stop strings are found across tokens and cut the text
// before them; a tail that may start a stop string, or an incomplete
// UTF-8 character, is held back until it is known; what is handed out
// adds up to the final text.
func TestTextStream(t *testing.T) {
	enc := func(s string) []int32 { ids, _ := byteTokenizer{}.Encode(s, false); return ids }
	for _, c := range []struct {
		name   string
		text   string
		stops  []string
		want   string
		stop   bool
		deltas []string // with one token a byte
	}{
		{"no stops", "abc", nil, "abc", false, []string{"a", "b", "c"}},
		{"stop across tokens", "hello END rest", []string{"END"}, "hello ", true, []string{"h", "e", "l", "l", "o", " "}},
		{"held back then released", "ab.c", []string{".x"}, "ab.c", false, []string{"a", "b", ".c"}},
		{"first of two", "xyzab", []string{"ab", "yz"}, "x", true, []string{"x"}},
		{"utf-8 whole", "é€", nil, "é€", false, []string{"é", "€"}},
		{"stop at the start", "STOPx", []string{"STOP"}, "", true, nil},
	} {
		ts := newTextStream(byteTokenizer{}, -1, c.stops)
		var deltas []string
		stopped := false
		for _, id := range enc(c.text) {
			d, stop := ts.add(id)
			if d != "" {
				deltas = append(deltas, d)
			}
			if stop {
				stopped = true
				break
			}
		}
		if r := ts.rest(); r != "" {
			deltas = append(deltas, r)
		}
		if got := ts.final(); got != c.want || stopped != c.stop {
			t.Errorf("%s: %q (stop %v), want %q (stop %v)", c.name, got, stopped, c.want, c.stop)
		}
		if strings.Join(deltas, "") != c.want {
			t.Errorf("%s: deltas %q add up to %q, want %q", c.name, deltas, strings.Join(deltas, ""), c.want)
		}
		if c.deltas != nil && strings.Join(deltas, "|") != strings.Join(c.deltas, "|") {
			t.Errorf("%s: deltas %q, want %q", c.name, deltas, c.deltas)
		}
		for _, d := range deltas {
			if !utf8.ValidString(d) && utf8.ValidString(c.text) {
				t.Errorf("%s: delta %q splits a character", c.name, d)
			}
		}
	}
}

// TestParseRequests: the sampling parameters map to GenerateOptions
// (OpenAI's defaults when left out), the chat template's stops join the
// stop tokens, and a prompt past the context is a 400 with OpenAI's code.
func TestParseRequests(t *testing.T) {
	m := testServed(t)
	m.chatStopTexts = []string{"<|im_end|>"}
	var cr chatRequest
	if err := json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.1,
		"frequency_penalty":0.5,"presence_penalty":-0.5,"repetition_penalty":1.1,"seed":7,"max_completion_tokens":9,"max_tokens":3,"stop":"##",
		"stream":true,"stream_options":{"include_usage":true}}`), &cr); err != nil {
		t.Fatal(err)
	}
	rq, err := parseChat(m, &cr)
	if err != nil {
		t.Fatal(err)
	}
	o := rq.opts
	if o.Temperature != 0.5 || o.TopP != 0.9 || o.TopK != 40 || o.MinP != 0.1 || o.FrequencyPenalty != 0.5 || o.PresencePenalty != -0.5 ||
		o.RepeatPenalty != 1.1 || o.Seed != 7 || o.MaxNewTokens != 9 || !rq.stream || !rq.includeUsage || !rq.chat {
		t.Errorf("options %+v, request %+v", o, rq)
	}
	if strings.Join(rq.stops, ",") != "##,<|im_end|>" {
		t.Errorf("stop strings %q", rq.stops)
	}
	if want := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"; string(decodeAll(rq.prompt)) != want {
		t.Errorf("prompt %q, want %q", decodeAll(rq.prompt), want)
	}
	var dflt chatRequest
	json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), &dflt)
	rq, err = parseChat(m, &dflt)
	if err != nil {
		t.Fatal(err)
	}
	if rq.opts.Temperature != 1 || rq.opts.TopP != 1 || rq.opts.MaxNewTokens != 0 || rq.stream {
		t.Errorf("defaults: %+v", rq.opts)
	}
	var long chatRequest
	json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("x", 200)+`"}]}`), &long)
	_, err = parseChat(m, &long)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "context_length_exceeded" {
		t.Errorf("a prompt past the context: %v", err)
	}
	var cp completionRequest
	json.Unmarshal([]byte(`{"model":"m","prompt":"ab"}`), &cp)
	rq, err = parseCompletion(m, &cp)
	if err != nil || len(rq.prompt) != 3 || rq.prompt[0] != 0 {
		t.Errorf("completion prompt %v (BOS first), %v", rq.prompt, err)
	}
}

func decodeAll(ids []int32) []byte {
	var b []byte
	for _, id := range ids {
		if id > 0 {
			b = append(b, byte(id-1))
		}
	}
	return b
}

// FuzzRequest feeds any bytes to the request parsers: each parse gives
// a request that fits the context, or an *APIError with a 4xx status;
// nothing panics.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), false)
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]}],"stop":["x","y"]}`), false)
	f.Add([]byte(`{"model":"m","prompt":[1,2,3],"max_tokens":5,"stream":true}`), true)
	f.Add([]byte(`{"model":"m","prompt":["text"],"temperature":2,"top_p":0.5}`), true)
	m := testServed(f)
	f.Fuzz(func(t *testing.T, body []byte, completion bool) {
		req, _ := http.NewRequest("POST", "/", strings.NewReader(string(body)))
		var rq request
		var err error
		if completion {
			var cr completionRequest
			if err = decodeBody(req, &cr); err == nil {
				rq, err = parseCompletion(m, &cr)
			}
		} else {
			var cr chatRequest
			if err = decodeBody(req, &cr); err == nil {
				rq, err = parseChat(m, &cr)
			}
		}
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
				t.Fatalf("error %v (%T), want an *APIError with a 4xx status", err, err)
			}
			return
		}
		if len(rq.prompt) == 0 || int64(len(rq.prompt))+int64(rq.opts.MaxNewTokens) > m.conv.MaxSeqLen {
			t.Fatalf("a request of %d prompt tokens and %d more passed", len(rq.prompt), rq.opts.MaxNewTokens)
		}
		if err := rq.opts.Validate(); err != nil {
			t.Fatalf("options passed that Generate refuses: %v", err)
		}
	})
}

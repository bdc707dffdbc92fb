package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
	"github.com/wgdelegate/wgdelegate/llm/server"
)

// The tests serve a two-layer Llama with random weights and the
// vocabulary of llm's Qwen 2 test tokenizer (6256 byte-level BPE tokens
// and 5 special ones, llm/testdata/tok/qwen2_6k.json.gz), with the
// built-in ChatML template, whose end of turn is <|im_end|>.
var testCfg = models.LlamaConfig{Dim: 32, Hidden: 48, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 6261,
	MaxSeq: 96, MaxTokens: 8, Eps: 1e-5, RopeTheta: 10000, Seed: 11}

const (
	modelID = "tiny-qwen"
	imEnd   = 6258 // <|im_end|>
)

// stopMessage is the user message whose greedy reply the fixture makes
// end with <|im_end|> after stopAfter tokens.
const (
	stopMessage = "Tell me a story."
	stopAfter   = 2
)

// fixture is what every test shares: the tokenizer, the template, and the
// model's program with its classifier edited so that the reply to
// stopMessage ends with the template's stop token.
type fixture struct {
	tok  llm.Tokenizer
	tpl  *chat.Template
	pte  []byte
	info llm.ProgramInfo
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
)

func getFixture(t testing.TB) fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = buildFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

func buildFixture() (fixture, error) {
	var f fixture
	gz, err := os.ReadFile("../testdata/tok/qwen2_6k.json.gz")
	if err != nil {
		return f, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return f, err
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		return f, err
	}
	if f.tok, err = llm.ParseTokenizer(js); err != nil {
		return f, err
	}
	if f.tpl, err = chat.Builtin("chatml"); err != nil {
		return f, err
	}
	prompt, err := chatPrompt(f.tok, f.tpl, []chat.Message{{Role: "user", Content: stopMessage}})
	if err != nil {
		return f, err
	}
	w := models.RandomLlamaWeights(testCfg)
	build := func() ([]byte, llm.ProgramInfo, []int32, error) {
		l, err := models.NewLlama(testCfg, w)
		if err != nil {
			return nil, llm.ProgramInfo{}, nil, err
		}
		files, err := models.Encode(l.B, false)
		if err != nil {
			return nil, llm.ProgramInfo{}, nil, err
		}
		r, err := llm.Load(context.Background(), files.PTE)
		if err != nil {
			return nil, llm.ProgramInfo{}, nil, err
		}
		defer r.Close()
		res, err := r.Generate(context.Background(), prompt, llm.GenerateOptions{MaxNewTokens: 6, StopTokens: []int32{imEnd}})
		if err != nil {
			return nil, llm.ProgramInfo{}, nil, err
		}
		info, err := llm.InspectProgram(files.PTE)
		return files.PTE, info, append(res.Tokens, res.Stop), err
	}
	_, _, reply, err := build()
	if err != nil {
		return f, err
	}
	// <|im_end|>'s classifier row becomes a slightly longer copy of the
	// row of the reply's token stopAfter: where the model picked that
	// token it now picks <|im_end|> (when its logit is positive).
	t := reply[stopAfter]
	if slices.Contains(reply[:stopAfter], t) {
		return f, fmt.Errorf("fixture: the reply %v repeats its token %d", reply, t)
	}
	d := testCfg.Dim
	for i := range d {
		w.Output[imEnd*d+i] = 1.001 * w.Output[int64(t)*d+i]
	}
	var got []int32
	if f.pte, f.info, got, err = build(); err != nil {
		return f, err
	}
	if want := append(slices.Clone(reply[:stopAfter]), imEnd); !slices.Equal(got[:len(want)], want) {
		return f, fmt.Errorf("fixture: the edited model replies %v, want %v", got, want)
	}
	return f, nil
}

// chatPrompt renders messages with the generation prompt and encodes
// them, as the server does.
func chatPrompt(tok llm.Tokenizer, tpl *chat.Template, msgs []chat.Message) ([]int32, error) {
	text, err := tpl.Render(chat.Conversation{Messages: msgs}, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		return nil, err
	}
	return tok.Encode(text, false)
}

// reference is a runner on a load of the fixture's model of its own: it
// gives the tokens a request must get.
type reference struct {
	f fixture
	r *llm.Runner
}

func newReference(t testing.TB, f fixture) *reference {
	t.Helper()
	r, err := llm.Load(context.Background(), f.pte)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &reference{f: f, r: r}
}

// generate runs a fresh sequence on prompt.
func (ref *reference) generate(t testing.TB, prompt []int32, o llm.GenerateOptions) llm.Result {
	t.Helper()
	ref.r.Reset()
	res, err := ref.r.Generate(context.Background(), prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// chatReply is the greedy reply to msgs, its text and tokens and whether
// a stop token ended it.
func (ref *reference) chatReply(t testing.TB, msgs []chat.Message, maxTokens int) (prompt []int32, text string, res llm.Result) {
	t.Helper()
	prompt, err := chatPrompt(ref.f.tok, ref.f.tpl, msgs)
	if err != nil {
		t.Fatal(err)
	}
	res = ref.generate(t, prompt, llm.GenerateOptions{MaxNewTokens: maxTokens, StopTokens: []int32{imEnd, 6256}})
	return prompt, decode(ref.f.tok, prompt[len(prompt)-1], res.Tokens), res
}

// decode is the text of tokens after prev.
func decode(tok llm.Tokenizer, prev int32, tokens []int32) string {
	var b bytes.Buffer
	for _, t := range tokens {
		b.WriteString(tok.Decode(prev, t))
		prev = t
	}
	return b.String()
}

// served is a running server on the fixture's model.
type served struct {
	srv    *server.Server
	http   *httptest.Server
	client openai.Client
	model  *wgdelegate.Model
	pool   *llm.Pool
}

// serve loads the fixture's model and serves it with o on 127.0.0.1;
// sessions bounds the pool. Everything is closed at the test's end.
func serve(t testing.TB, f fixture, o server.Options, sessions int) *served {
	t.Helper()
	return serveWith(t, f, o, sessions, nil)
}

// serveWith is serve with a hook run after each generated token
// (server.SetTokenHook).
func serveWith(t testing.TB, f fixture, o server.Options, sessions int, hook func(context.Context)) *served {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := wgdelegate.Load(context.Background(), f.pte)
	if err != nil {
		t.Fatal(err)
	}
	p, err := llm.NewPool(m, f.info, llm.SessionOptions{MaxSessions: sessions})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(o)
	if hook != nil {
		server.SetTokenHook(s, hook)
	}
	hs := httptest.NewServer(s)
	if err := s.SetModel(server.Model{ID: modelID, Pool: p, Tokenizer: f.tok, Template: f.tpl, StopTokens: []int32{f.tok.EOS()}}); err != nil {
		t.Fatal(err)
	}
	sv := &served{srv: s, http: hs, model: m, pool: p}
	sv.client = openai.NewClient(option.WithBaseURL(hs.URL+"/v1/"), option.WithAPIKey(o.APIKey), option.WithMaxRetries(0),
		option.WithRequestTimeout(time.Minute))
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		p.Close()
		m.Close()
	})
	return sv
}

// apiError returns err's *openai.Error, failing the test without one.
func apiError(t testing.TB, err error) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want an *openai.Error", err, err)
	}
	return ae
}

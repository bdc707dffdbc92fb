package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes   = 2 << 20
	DefaultMaxQueue       = 64
	DefaultRequestTimeout = 5 * time.Minute
)

// Options configure a Server.
type Options struct {
	// APIKey, when set, is the bearer token every /v1 request must carry
	// (Authorization: Bearer KEY); others get a 401.
	APIKey string
	// MaxBodyBytes caps a request body (0: DefaultMaxBodyBytes); a larger
	// one is a 413.
	MaxBodyBytes int64
	// MaxQueue caps the requests waiting for a session while every
	// session serves one (0: DefaultMaxQueue); past it a request is a 429.
	MaxQueue int
	// RequestTimeout bounds a request from its arrival, waiting included
	// (0: DefaultRequestTimeout); a generation still running then ends
	// as if its client had gone.
	RequestTimeout time.Duration
	// Logger gets a line per request at debug level and the errors
	// (nil: slog.Default()).
	Logger *slog.Logger
}

// Model is what the server serves: a pool of sessions on a loaded
// decoder, its tokenizer and chat template.
type Model struct {
	// ID is the model's name in requests and in GET /v1/models; a request
	// for another is a 404.
	ID string
	// Pool runs the generations; the server opens up to its MaxSessions
	// sessions and keeps them, idle, for the conversations they hold.
	Pool *llm.Pool
	// Tokenizer encodes prompts and decodes generated tokens.
	Tokenizer llm.Tokenizer
	// Template renders chat requests; nil answers them with a 400.
	Template *chat.Template
	// StopTokens end every generation (EOS, end-of-turn tokens); the
	// chat template's stops (Template.Stops, mapped to ids with the
	// tokenizer) join them for chat requests.
	StopTokens []int32
	// Created is the time GET /v1/models reports (zero: the SetModel
	// call's).
	Created time.Time
}

// Server answers OpenAI's chat-completions and completions API with one
// model (see the package documentation). It is an http.Handler; make it
// with New, give it its model with SetModel once loaded (until then every
// request but /metrics is a 503, /health included), and Drain it before
// shutting its http.Server down.
type Server struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics

	model atomic.Pointer[served]
	// draining: new requests are refused (503) and /health says so.
	draining atomic.Bool
	// base is cancelled by Abort: it ends every generation in flight.
	base  context.Context
	abort context.CancelFunc
	// inflight counts the requests being answered; idle is signalled
	// when it drops to 0.
	mu       sync.Mutex
	inflight int
	idle     *sync.Cond

	// tokenHook, when set (by tests), runs after each generated token, on
	// the generating goroutine, with the request's context.
	tokenHook func(ctx context.Context)
}

// served is the model with what the server derives from it.
type served struct {
	Model
	chatStops     []int32  // StopTokens and the template's stop tokens
	chatStopTexts []string // template stops that are no single token
	bosText       string   // the template's bos_token, when it is the tokenizer's BOS
	conv          llm.Convention
	sessions      *sessions
}

// New makes a server with no model yet.
func New(o Options) *Server {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{opts: o, log: o.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.base, s.abort = context.WithCancel(context.Background())
	s.idle = sync.NewCond(&s.mu)
	s.metrics = newMetrics(s)
	s.mux.HandleFunc("POST /v1/chat/completions", s.api("chat", s.chatCompletions))
	s.mux.HandleFunc("POST /v1/completions", s.api("completions", s.completions))
	s.mux.HandleFunc("GET /v1/models", s.api("models", s.listModels))
	s.mux.HandleFunc("GET /v1/models/{model...}", s.api("models", s.getModel))
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /live", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.mux.HandleFunc("/", s.api("other", func(w http.ResponseWriter, r *http.Request, _ *served) error {
		return &APIError{Status: http.StatusNotFound, Type: typeNotFound, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)}
	}))
	return s
}

// SetModel makes the server serve m: /health turns 200. It fails if m
// lacks a pool or tokenizer, or a model was set already.
func (s *Server) SetModel(m Model) error {
	if m.Pool == nil || m.Tokenizer == nil || m.ID == "" {
		return errors.New("server: a model needs an ID, a Pool and a Tokenizer")
	}
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	sv := &served{Model: m, chatStops: slices.Clone(m.StopTokens), conv: m.Pool.Convention()}
	for _, id := range m.StopTokens {
		if id < 0 || int64(id) >= sv.conv.Vocab {
			return fmt.Errorf("server: stop token %d is outside the model's vocabulary of %d", id, sv.conv.Vocab)
		}
	}
	if m.Template != nil {
		for _, st := range m.Template.Stops() {
			if id, ok := llm.TokenID(m.Tokenizer, st); ok && int64(id) < sv.conv.Vocab {
				if !slices.Contains(sv.chatStops, id) {
					sv.chatStops = append(sv.chatStops, id)
				}
			} else {
				sv.chatStopTexts = append(sv.chatStopTexts, st)
			}
		}
		if b := m.Template.Tokens().BOS; llm.IsBOSText(m.Tokenizer, b) {
			sv.bosText = b
		}
	}
	sv.sessions = newSessions(m.Pool, s.opts.MaxQueue, s.metrics)
	if !s.model.CompareAndSwap(nil, sv) {
		return errors.New("server: the model is set already")
	}
	s.log.Info("server: ready", "model", m.ID, "sessions", m.Pool.Stats().MaxSessions)
	return nil
}

// Drain stops taking requests: from now on they are refused with a 503,
// and /health answers 503 so that load balancers send no more. Requests
// in flight go on; shut the http.Server down (http.Server.Shutdown) to
// wait for them, and Abort those still running at a deadline.
func (s *Server) Drain() { s.draining.Store(true) }

// Abort ends every generation in flight, as if its client had gone.
func (s *Server) Abort() { s.abort() }

// InFlight is how many requests are being answered.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// enter and leave count a request being answered.
func (s *Server) enter() {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
}

func (s *Server) leave() {
	s.mu.Lock()
	if s.inflight--; s.inflight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// Close drains the server, aborts what still runs, waits for the
// requests' handlers to finish with the model and closes the sessions the
// server opened (not the Pool, which is the caller's). Call it after the
// http.Server's Shutdown or Close.
func (s *Server) Close() error {
	s.Drain()
	s.Abort()
	s.mu.Lock()
	for s.inflight > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
	if sv := s.model.Load(); sv != nil {
		sv.sessions.close()
	}
	return nil
}

// ServeHTTP answers a request: every one gets a response or, for a
// client gone, is cancelled.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// health is GET /health: 200 with the model loaded, 503 before and while
// draining.
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	case s.model.Load() == nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// statusWriter records the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the response (streaming).
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// apiHandler is one /v1 endpoint's handler: an error it returns is
// answered in OpenAI's shape (when nothing was written yet).
type apiHandler func(w http.ResponseWriter, r *http.Request, m *served) error

// api wraps an endpoint: the API key, draining and readiness checks, the
// body limit, the request timeout, panics answered as 500s, and the
// request counter by status.
func (s *Server) api(endpoint string, h apiHandler) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		s.enter()
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("server: handler panic", "endpoint", endpoint, "panic", p, "stack", string(debug.Stack()))
				if w.status == 0 {
					writeError(w, &APIError{Status: http.StatusInternalServerError, Type: typeServer, Message: "internal error"})
				}
			}
			if w.status == 0 {
				w.WriteHeader(http.StatusOK)
			}
			s.metrics.request(endpoint, w.status)
			s.log.Debug("server: request", "method", r.Method, "path", r.URL.Path, "status", w.status, "elapsed", time.Since(start))
			s.leave()
		}()
		if err := s.admit(r); err != nil {
			writeError(w, err)
			return
		}
		m := s.model.Load()
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
		defer cancel()
		stop := context.AfterFunc(s.base, cancel)
		defer stop()
		if err := h(w, r.WithContext(ctx), m); err != nil {
			if w.status == 0 {
				writeError(w, err)
			} else {
				s.log.Debug("server: error after the response began", "endpoint", endpoint, "err", err)
			}
		}
	}
}

// admit checks the API key, draining and readiness.
func (s *Server) admit(r *http.Request) error {
	if k := s.opts.APIKey; k != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(k)) != 1 {
			return &APIError{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
				Message: "a valid API key is required: Authorization: Bearer KEY"}
		}
	}
	if s.draining.Load() {
		return &APIError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "the server is shutting down"}
	}
	if s.model.Load() == nil {
		return &APIError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "the model is loading"}
	}
	return nil
}

// checkModel answers a request for another model than the one served.
func checkModel(m *served, name string) error {
	if name == "" {
		return badRequest("model", "the model parameter is required (this server serves %q)", m.ID)
	}
	if name != m.ID {
		return &APIError{Status: http.StatusNotFound, Type: typeNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist: this server serves %q", name, m.ID)}
	}
	return nil
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request, m *served) error {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelObject{m.object()}})
	return nil
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request, m *served) error {
	if err := checkModel(m, r.PathValue("model")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m.object())
	return nil
}

func (m *served) object() modelObject {
	return modelObject{ID: m.ID, Object: "model", Created: m.Created.Unix(), OwnedBy: "wgdelegate"}
}

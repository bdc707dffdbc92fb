package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/llm"
	"github.com/wgdelegate/wgdelegate/llm/chat"
	"github.com/wgdelegate/wgdelegate/llm/server"
	"github.com/wgdelegate/wgdelegate/serialization"
)

const serveUsage = `Usage:
  wgdelegate serve [flags] MODEL

Serves MODEL, a Llama-style decoder export, over HTTP with OpenAI's API
(package llm/server): POST /v1/chat/completions and /v1/completions,
streamed or not, GET /v1/models; GET /health (503 while the model loads
and after SIGTERM, then 200), GET /live and GET /metrics (Prometheus).
Any OpenAI client works with the base URL http://ADDR/v1. Requests run on
sessions of the one loaded model, which keep their conversations' KV
caches between requests (a chat's next turn prefills only its new
tokens) and take turns on the device step by step. SIGTERM or Ctrl-C
stops taking requests, lets those in flight finish within
--shutdown-timeout, then exits 0.

Flags:
  --tokenizer FILE     the model's tokenizer (required; as generate takes)
  --chat-template FILE the chat template: a Jinja file, a
                       tokenizer_config.json, or llama3, llama2, chatml,
                       mistral; default: the one beside the tokenizer, else
                       a built-in format its special tokens fit, else none
                       (chat requests are refused; completions work)
  --data FILE          a .ptd file holding named constants (repeatable)
  --addr HOST:PORT     where to listen (default 127.0.0.1:8080: this host
                       only; 0.0.0.0:8080 for every interface)
  --model-name NAME    the model's name in requests (default: MODEL's file
                       name without its extension)
  --api-key KEY        require "Authorization: Bearer KEY" on /v1 (default:
                       $WGDELEGATE_API_KEY; none when unset)
  --sessions N         conversations kept and generating at once (default 8)
  --queue N            requests waiting for a session past which a request
                       is refused with 429 (default 64)
  --max-body BYTES     the largest request body (default 2097152)
  --timeout D          the longest a request may take, queueing included
                       (default 5m)
  --shutdown-timeout D how long SIGTERM waits for requests in flight before
                       cancelling them (default 30s)
  --cpu-threads N      compute threads of a CPU adapter (see 'wgdelegate
                       help run')
  --kernels F          kernel family: auto, cpu or gpu (see 'wgdelegate help
                       run')
  --f16-kv-cache       hold the KV caches as halves: half the memory per
                       session
  --verify             check every weight against its SHA-256 key while
                       loading
  -v, --verbose        debug logs on stderr (a line per request)
  -h, --help           print this help

Examples:
  wgdelegate serve --tokenizer stories/tokenizer.bin --data stories/model.ptd stories/model.pte
  wgdelegate serve --addr 0.0.0.0:8080 --api-key "$KEY" --tokenizer qwen/tokenizer.json qwen.pte
  curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \
    -d '{"model": "model", "prompt": "Once upon a time", "max_tokens": 32}'
`

// serveOptions are the parsed arguments of "wgdelegate serve".
type serveOptions struct {
	model, tokenizer, chatTemplate string
	data                           []string
	addr, name, apiKey             string
	sessions, queue                int
	maxBody                        int64
	timeout, shutdownTimeout       time.Duration
	cpuThreads                     int
	kernels                        wgdelegate.KernelFamily
	f16KV, verify, verbose         bool
}

func parseServeArgs(args []string, getenv func(string) string) (serveOptions, error) {
	o := serveOptions{addr: "127.0.0.1:8080", sessions: llm.DefaultMaxSessions, queue: server.DefaultMaxQueue,
		maxBody: server.DefaultMaxBodyBytes, timeout: server.DefaultRequestTimeout, shutdownTimeout: 30 * time.Second,
		apiKey: getenv("WGDELEGATE_API_KEY")}
	positive := func(dst *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a count of 1 or more", v)
			}
			*dst = n
			return nil
		}
	}
	duration := func(dst *time.Duration) func(string) error {
		return func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%q is not a positive duration such as 30s or 5m", v)
			}
			*dst = d
			return nil
		}
	}
	specs := []flagSpec{
		{names: []string{"tokenizer"}, value: true, set: func(v string) error { o.tokenizer = v; return nil }},
		{names: []string{"chat-template"}, value: true, set: func(v string) error { o.chatTemplate = v; return nil }},
		{names: []string{"data"}, value: true, set: appendFlag(&o.data)},
		{names: []string{"addr"}, value: true, set: func(v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("%q is not HOST:PORT", v)
			}
			o.addr = v
			return nil
		}},
		{names: []string{"model-name"}, value: true, set: func(v string) error { o.name = v; return nil }},
		{names: []string{"api-key"}, value: true, set: func(v string) error { o.apiKey = v; return nil }},
		{names: []string{"sessions"}, value: true, set: positive(&o.sessions)},
		{names: []string{"queue"}, value: true, set: positive(&o.queue)},
		{names: []string{"max-body"}, value: true, set: func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a byte count of 1 or more", v)
			}
			o.maxBody = n
			return nil
		}},
		{names: []string{"timeout"}, value: true, set: duration(&o.timeout)},
		{names: []string{"shutdown-timeout"}, value: true, set: duration(&o.shutdownTimeout)},
		{names: []string{"cpu-threads"}, value: true, set: cpuThreadsFlag(&o.cpuThreads)},
		{names: []string{"kernels"}, value: true, set: kernelsFlag(&o.kernels)},
		{names: []string{"f16-kv-cache"}, set: func(string) error { o.f16KV = true; return nil }},
		{names: []string{"verify"}, set: func(string) error { o.verify = true; return nil }},
		{names: []string{"verbose", "v"}, set: func(string) error { o.verbose = true; return nil }},
	}
	pos, err := parseArgs("serve", args, specs)
	if err != nil {
		return o, err
	}
	if o.model, err = oneModel("serve", pos); err != nil {
		return o, err
	}
	if o.tokenizer == "" {
		return o, errors.New("serve: --tokenizer is required (the server speaks text)")
	}
	if o.name == "" {
		o.name = strings.TrimSuffix(filepath.Base(o.model), filepath.Ext(o.model))
	}
	return o, nil
}

func serveCommand(args []string, stderr io.Writer) error {
	o, err := parseServeArgs(args, os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, o, stderr, nil)
}

// serve listens, loads the model (answering /health with 503 meanwhile),
// serves it until ctx ends, then drains: new requests are refused, those
// in flight get o.shutdownTimeout to finish, then are cancelled. ready,
// when set, gets the address listened on once the model is served.
func serve(ctx context.Context, o serveOptions, stderr io.Writer, ready func(addr string)) error {
	if err := checkModelFile(o.model); err != nil {
		return err
	}
	tok, err := loadTokenizer(o.tokenizer)
	if err != nil {
		return err
	}
	tpl, err := findChatTemplate(o.tokenizer, o.chatTemplate, tok, "serve: --chat-template", "serve: chat template")
	if errors.Is(err, chat.ErrNoTemplate) && o.chatTemplate == "" {
		fmt.Fprintf(stderr, "wgdelegate serve: no chat template for %s: /v1/chat/completions is refused (give --chat-template)\n", o.tokenizer)
		tpl, err = nil, nil
	}
	if err != nil {
		return err
	}
	log := newLogger(stderr, o.verbose)
	srv := server.New(server.Options{APIKey: o.apiKey, MaxBodyBytes: o.maxBody, MaxQueue: o.queue, RequestTimeout: o.timeout, Logger: log})
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	fmt.Fprintf(stderr, "wgdelegate serve: listening on http://%s (loading %s)\n", addr, o.model)

	closeHTTP := func() { hs.Close(); <-served }
	pool, m, closeAll, err := loadServed(ctx, o, log)
	if err != nil {
		closeHTTP()
		return err
	}
	defer closeAll()
	if err := srv.SetModel(server.Model{ID: o.name, Pool: pool, Tokenizer: tok, Template: tpl, StopTokens: llm.StopTokens(tok)}); err != nil {
		closeHTTP()
		return err
	}
	fmt.Fprintf(stderr, "wgdelegate serve: serving %q on http://%s/v1 (%d sessions, %s of device memory, %s more per session)\n",
		o.name, addr, o.sessions, mib(m.MemoryStats().TotalBytes()), mib(m.StateBytes()))
	if ready != nil {
		ready(addr)
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "wgdelegate serve: shutting down: %d requests in flight\n", srv.InFlight())
	srv.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "wgdelegate serve: cancelling the %d requests still running after %v\n", srv.InFlight(), o.shutdownTimeout)
		srv.Abort()
		hs.Close()
	}
	<-served
	return srv.Close()
}

// loadServed loads the model and makes its pool of sessions; closeAll
// closes them and the device.
func loadServed(ctx context.Context, o serveOptions, log *slog.Logger) (pool *llm.Pool, m *wgdelegate.Model, closeAll func(), err error) {
	mf, err := serialization.MapFile(o.model)
	if err != nil {
		return nil, nil, nil, err
	}
	info, err := llm.InspectProgram(mf.Bytes())
	mf.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", o.model, err)
	}
	dev, release, err := openDevice(ctx, wgdelegate.DeviceOptions{Logger: log, CPUThreads: o.cpuThreads})
	if err != nil {
		return nil, nil, nil, err
	}
	m, err = wgdelegate.Open(ctx, o.model, append([]wgdelegate.Option{wgdelegate.WithDevice(dev), wgdelegate.WithDataFiles(o.data...),
		wgdelegate.WithLogger(log), wgdelegate.WithKernels(wgdelegate.KernelConfig{Family: o.kernels, HalfKVCache: o.f16KV})}, verifyOption(o.verify)...)...)
	if err != nil {
		release()
		return nil, nil, nil, withDataHint(err, o.model, o.data)
	}
	pool, err = llm.NewPool(m, info, llm.SessionOptions{MaxSessions: o.sessions})
	if err != nil {
		m.Close()
		release()
		return nil, nil, nil, fmt.Errorf("%s: %w", o.model, err)
	}
	return pool, m, func() { pool.Close(); m.Close(); release() }, nil
}

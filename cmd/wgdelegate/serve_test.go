package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeArgs: flag defaults and errors, and the API key from the
// environment.
func TestServeArgs(t *testing.T) {
	env := func(k string) string {
		if k == "WGDELEGATE_API_KEY" {
			return "from-env"
		}
		return ""
	}
	o, err := parseServeArgs([]string{"--tokenizer", "tok.bin", "dir/stories.pte"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:8080" || o.name != "stories" || o.apiKey != "from-env" || o.sessions != 8 || o.queue != 64 ||
		o.maxBody != 2<<20 || o.timeout != 5*time.Minute || o.shutdownTimeout != 30*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parseServeArgs([]string{"--api-key", "k", "--addr", "0.0.0.0:9", "--sessions", "2", "--queue", "3", "--max-body", "100",
		"--timeout", "1m", "--shutdown-timeout", "2s", "--model-name", "m", "--tokenizer", "t", "x.pte"}, env)
	if err != nil || o.apiKey != "k" || o.addr != "0.0.0.0:9" || o.sessions != 2 || o.queue != 3 || o.maxBody != 100 ||
		o.timeout != time.Minute || o.shutdownTimeout != 2*time.Second || o.name != "m" {
		t.Errorf("flags: %+v, %v", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"m.pte"}, "--tokenizer is required"},
		{[]string{"--tokenizer", "t"}, "MODEL"},
		{[]string{"--tokenizer", "t", "--addr", "8080", "m.pte"}, "HOST:PORT"},
		{[]string{"--tokenizer", "t", "--sessions", "0", "m.pte"}, "--sessions"},
		{[]string{"--tokenizer", "t", "--timeout", "soon", "m.pte"}, "--timeout"},
		{[]string{"--tokenizer", "t", "--max-body", "-1", "m.pte"}, "--max-body"},
		{[]string{"--tokenizer", "t", "--frob", "m.pte"}, "unknown flag"},
	} {
		if _, err := parseServeArgs(c.args, env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
	if code, stdout, _ := invoke(t, "serve", "-h"); code != 0 || !strings.Contains(stdout, "Usage:") || !hasExamples(stdout) {
		t.Errorf("serve -h: exit %d, %q", code, stdout)
	}
	if code, stdout, _ := invoke(t, "help", "serve"); code != 0 || !strings.Contains(stdout, "wgdelegate serve [flags] MODEL") {
		t.Errorf("help serve: exit %d, %q", code, stdout)
	}
	mustFail(t, []string{"serve", "--tokenizer"}, "serve", "m.pte")
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServe runs the command on a llama2.c-style model and tokenizer
// (which fit no chat template): /health turns 200, a completion is
// answered, a chat request is refused for want of a template, the API
// key is required; cancelling (SIGTERM) shuts it down cleanly.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	pte, _, _ := writeGenModel(t, dir, "stories", 0)
	tok := writeTokenizer(t, dir, "tokenizer.bin", int(genCfg.Vocab))
	o, err := parseServeArgs([]string{"--tokenizer", tok, "--data", strings.TrimSuffix(pte, ".pte") + ".ptd", "--addr", "127.0.0.1:0",
		"--api-key", "k", "--sessions", "2", pte}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, &stderr, func(addr string) { ready <- addr }) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v (stderr %q)", err, stderr.String())
	}
	base := "http://" + addr
	call := func(method, path, key, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		json.Unmarshal(b, &v)
		return resp.StatusCode, v
	}
	if code, _ := call("GET", "/health", "", ""); code != http.StatusOK {
		t.Errorf("/health: %d", code)
	}
	code, v := call("POST", "/v1/completions", "k", `{"model":"stories","prompt":"Once","max_tokens":4,"temperature":0}`)
	if code != http.StatusOK {
		t.Fatalf("completion: %d %v", code, v)
	}
	if u, _ := v["usage"].(map[string]any); u["completion_tokens"] != 4.0 {
		t.Errorf("completion: %v", v)
	}
	if code, v := call("POST", "/v1/chat/completions", "k", `{"model":"stories","messages":[{"role":"user","content":"hi"}]}`); code != http.StatusBadRequest {
		t.Errorf("chat without a template: %d %v", code, v)
	}
	if code, _ := call("GET", "/v1/models", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no key: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, want := range []string{"listening on http://127.0.0.1:", "no chat template", `serving "stories"`, "shutting down"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

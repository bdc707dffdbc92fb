package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm/server"
)

// TestResponseHead: every completion response and stream chunk, chat and
// text, starts with the same head: an id with the endpoint's prefix (one
// id for all the chunks of a stream), the object kind, the creation
// time, the model and the system fingerprint; the usage chunk too.
func TestResponseHead(t *testing.T) {
	sv := serve(t, getFixture(t), server.Options{}, 1)
	chat := `"messages":[{"role":"user","content":"hi"}]`
	text := `"prompt":"hi"`
	for _, c := range []struct {
		name, path, body, prefix, object string
		stream                           bool
	}{
		{"chat", "/v1/chat/completions", chat, "chatcmpl-", "chat.completion", false},
		{"chat stream", "/v1/chat/completions", chat, "chatcmpl-", "chat.completion.chunk", true},
		{"completion", "/v1/completions", text, "cmpl-", "text_completion", false},
		{"completion stream", "/v1/completions", text, "cmpl-", "text_completion", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"model":"` + modelID + `",` + c.body + `,"max_tokens":3`
			if c.stream {
				body += `,"stream":true,"stream_options":{"include_usage":true}`
			}
			resp, err := http.Post(sv.http.URL+c.path, "application/json", strings.NewReader(body+"}"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			var objects []string
			if !c.stream {
				var o map[string]any
				if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
					t.Fatal(err)
				}
				checkHead(t, o, c.prefix, c.object, "")
				return
			}
			id := ""
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var o map[string]any
				if err := json.Unmarshal([]byte(data), &o); err != nil {
					t.Fatalf("chunk %q: %v", data, err)
				}
				id = checkHead(t, o, c.prefix, c.object, id)
				objects = append(objects, data)
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if len(objects) < 2 || !strings.Contains(objects[len(objects)-1], `"usage":{`) {
				t.Errorf("chunks %q: want the tokens' and then a usage chunk", objects)
			}
		})
	}
}

// checkHead checks the head fields of the response or chunk o, whose id
// must be id when that is not empty, and returns its id.
func checkHead(t *testing.T, o map[string]any, prefix, object, id string) string {
	t.Helper()
	got, _ := o["id"].(string)
	if !strings.HasPrefix(got, prefix) || id != "" && got != id {
		t.Errorf("id %q, want the prefix %q (and %q if set)", got, prefix, id)
	}
	if o["object"] != object || o["model"] != modelID || o["system_fingerprint"] != "wgdelegate" {
		t.Errorf("object %v, model %v, system_fingerprint %v; want %s, %s, wgdelegate", o["object"], o["model"], o["system_fingerprint"], object, modelID)
	}
	if created, ok := o["created"].(float64); !ok || created <= 0 {
		t.Errorf("created %v", o["created"])
	}
	return got
}

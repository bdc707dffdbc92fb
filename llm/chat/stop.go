package chat

import (
	"slices"
	"strings"
	"time"
)

// endOfTurnTokens are the end-of-turn and end-of-message tokens of the
// model families whose templates write them literally; a template whose
// source holds one stops there too (Llama 3.1's <|eom_id|>, written only
// with builtin_tools, is found this way).
var endOfTurnTokens = []string{"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<｜end▁of▁sentence｜>"}

// Stops returns the texts a reply ends with under this template, in a
// fixed order: the token the template writes after an assistant's
// message (found by rendering a probe conversation: Llama 3's
// <|eot_id|>, ChatML's <|im_end|>, Gemma's <end_of_turn>, Mistral's
// eos_token), the known end-of-turn tokens its source writes, and
// eos_token. Map them to token ids with the tokenizer; a generation
// should stop at any.
func (t *Template) Stops() []string { return slices.Clone(t.stops) }

func (t *Template) findStops() []string {
	var stops []string
	add := func(s string) {
		if s != "" && !slices.Contains(stops, s) {
			stops = append(stops, s)
		}
	}
	add(t.probeEndOfTurn())
	for _, n := range t.Names() {
		for _, tok := range endOfTurnTokens {
			if strings.Contains(t.sources[n], tok) {
				add(tok)
			}
		}
	}
	add(t.tokens.EOS)
	return stops
}

// Probe messages: text no template writes itself.
const (
	probeUser      = "wgdelegate-probe-user-1"
	probeAssistant = "wgdelegate-probe-assistant"
	probeUser2     = "wgdelegate-probe-user-2"
)

// probeEndOfTurn renders user, assistant, user (then user, assistant,
// when a template refuses the first) and returns the special token that
// follows the assistant's text: after any spaces, a <...> token.
// It returns "" when the template writes none there.
func (t *Template) probeEndOfTurn() string {
	convs := [][]Message{
		{{Role: "user", Content: probeUser}, {Role: "assistant", Content: probeAssistant}, {Role: "user", Content: probeUser2}},
		{{Role: "user", Content: probeUser}, {Role: "assistant", Content: probeAssistant}},
	}
	for _, msgs := range convs {
		// A fixed time: a template that formats the date renders the same.
		out, err := t.Render(Conversation{Messages: msgs}, Options{Now: time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			continue
		}
		_, after, ok := strings.Cut(out, probeAssistant)
		if !ok {
			continue
		}
		if i := strings.Index(after, probeUser2); i >= 0 {
			after = after[:i]
		}
		return leadingToken(strings.TrimLeft(after, " \t"))
	}
	return ""
}

// leadingToken returns the <...> token s starts with (no spaces in it),
// or "".
func leadingToken(s string) string {
	if !strings.HasPrefix(s, "<") {
		return ""
	}
	i := strings.IndexByte(s, '>')
	if i < 0 || strings.ContainsAny(s[:i], " \t\r\n") {
		return ""
	}
	return s[:i+1]
}

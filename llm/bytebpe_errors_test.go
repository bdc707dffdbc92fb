package llm_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/llm"
)

// tinyTiktoken writes a tiktoken file: the 256 single bytes (rank = the
// byte), then tokens in rank order.
func tinyTiktoken(tokens ...string) []byte {
	var b strings.Builder
	for c := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(c)}), c)
	}
	for i, t := range tokens {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(t)), 256+i)
	}
	return []byte(b.String())
}

// tinyHF returns a small tokenizer.json as a map to change: a Llama 3
// style layout over the vocabulary a, b, ab, Ġ (the space), Ġa, Ġab with
// merges "a b", "Ġ a", "Ġ ab", and <s> (6) and </s> (7) as special tokens.
func tinyHF() map[string]any {
	return map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 6, "content": "<s>", "special": true},
			map[string]any{"id": 7, "content": "</s>", "special": true},
		},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t)| ?\p{L}+|\s+(?!\S)|\s+`}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []any{6}, "tokens": []any{"<s>"}}}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model": map[string]any{"type": "BPE", "vocab": map[string]any{"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4, "Ġab": 5},
			"merges": []any{"a b", "Ġ a", "Ġ ab"}},
	}
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTinyTokenizers(t *testing.T) {
	tk, err := llm.ParseTiktoken(tinyTiktoken("ab", " a", " ab"))
	if err != nil {
		t.Fatal(err)
	}
	// 259 ranks: BOS is the first special token after them, <|eot_id|>
	// the tenth.
	if got, want := []int32{259, 256, 258, 259 + 9}, must(tk.Encode("ab ab<|eot_id|>", true)); !eqIDs(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if got, want := llm.StopTokens(tk), []int32{259 + 1, 259 + 8, 259 + 9}; !eqIDs(got, want) {
		t.Errorf("StopTokens = %v, want %v", got, want)
	}
	if id, ok := tk.SpecialTokenID("<|start_header_id|>"); !ok || id != 259+6 {
		t.Errorf("SpecialTokenID(<|start_header_id|>) = %d, %v", id, ok)
	}
	if got := tk.EncodeOrdinary("<|eot_id|>"); len(got) < 3 || slices.Contains(got, 259+9) {
		t.Errorf("EncodeOrdinary(<|eot_id|>) = %v", got)
	}

	// Other special tokens and regex: GPT-2's, with <|endoftext|> as EOS.
	gpt, err := llm.ParseTiktokenWith(tinyTiktoken("ab", " a", " ab"), llm.TiktokenOptions{
		Pattern:       `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
		SpecialTokens: []string{"<|endoftext|>"}, EOS: "<|endoftext|>"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := must(gpt.Encode("ab ab<|endoftext|>", true)), []int32{256, 258, 259}; !eqIDs(got, want) || gpt.BOS() != -1 || !eqIDs(llm.StopTokens(gpt), []int32{259}) || gpt.VocabSize() != 260 {
		t.Errorf("GPT-2 style: Encode %v (want %v), BOS %d, stops %v, vocabulary %d", got, want, gpt.BOS(), llm.StopTokens(gpt), gpt.VocabSize())
	}
	// Llama 3's special tokens with only the stops given: BOS and EOS
	// keep Llama 3's.
	eot, err := llm.ParseTiktokenWith(tinyTiktoken(), llm.TiktokenOptions{Stops: []string{"<|eot_id|>"}})
	if err != nil {
		t.Fatal(err)
	}
	if eot.BOS() != 256 || eot.EOS() != 257 || !eqIDs(eot.StopTokens(), []int32{256 + 9}) {
		t.Errorf("Stops only: BOS %d, EOS %d, stops %v", eot.BOS(), eot.EOS(), eot.StopTokens())
	}

	hf, err := llm.ParseHFTokenizer(marshal(t, tinyHF()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		bos  bool
		want []int32
	}{
		{"ab ab", true, []int32{6, 2, 5}},
		{"ab ab", false, []int32{2, 5}},
		{"  a", false, []int32{3, 4}},
		{"a</s>b", false, []int32{0, 7, 1}},
		{"c", false, nil}, // no token for c and no unk_token: dropped, as in tokenizers
	} {
		if got, _ := hf.Encode(tc.text, tc.bos); !eqIDs(got, tc.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", tc.text, tc.bos, got, tc.want)
		}
	}
	if hf.BOS() != 6 || hf.EOS() != 7 || !eqIDs(llm.StopTokens(hf), []int32{7}) || hf.VocabSize() != 8 {
		t.Errorf("BOS %d, EOS %d, stops %v, vocabulary %d", hf.BOS(), hf.EOS(), llm.StopTokens(hf), hf.VocabSize())
	}
	if got := hf.Decode(-1, 5) + hf.Decode(5, 7) + hf.Decode(7, 8); got != " ab</s>" {
		t.Errorf("Decode = %q", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestTiktokenErrors: every malformed file is an error wrapping
// ErrTokenizer, and an unsupported regex an *UnsupportedError.
func TestTiktokenErrors(t *testing.T) {
	good := string(tinyTiktoken("ab"))
	for _, tc := range []struct {
		name        string
		data        string
		opts        llm.TiktokenOptions
		unsupported bool
	}{
		{name: "empty", data: ""},
		{name: "bad base64", data: good + "!!!! 257\n"},
		{name: "base64 without padding", data: good + "YWI 257\n"},
		{name: "bad rank", data: good + "YWJj x\n"},
		{name: "negative rank", data: good + "YWJj -1\n"},
		{name: "rank past the end", data: good + "YWJj 9999\n"},
		{name: "duplicate rank", data: good + "YWJj 256\n"},
		{name: "duplicate token", data: good + "YWI= 257\n"},
		{name: "no space", data: good + "YWJj257\n"},
		{name: "two spaces", data: good + "YWJj  257\n"},
		{name: "empty token", data: good + " 257\n"},
		{name: "empty line", data: good + "\nYWJj 257\n"},
		{name: "missing byte", data: strings.Replace(good, "AA== 0\n", "YWJj 0\n", 1)},
		{name: "token too long", data: good + base64.StdEncoding.EncodeToString(make([]byte, 1<<16+1)) + " 257\n"},
		{name: "binary", data: "\x1b\x00\x00\x00\x00\x00\x80\x3f"},
		{name: "unknown BOS", data: good, opts: llm.TiktokenOptions{SpecialTokens: []string{"<a>"}, BOS: "<b>"}},
		{name: "unknown stop", data: good, opts: llm.TiktokenOptions{Stops: []string{"<b>"}, SpecialTokens: []string{"<a>"}}},
		{name: "duplicate special", data: good, opts: llm.TiktokenOptions{SpecialTokens: []string{"<a>", "<a>"}}},
		{name: "empty special", data: good, opts: llm.TiktokenOptions{SpecialTokens: []string{""}}},
		{name: "lookbehind", data: good, opts: llm.TiktokenOptions{Pattern: `(?<=a)b|\s+`}, unsupported: true},
		{name: "word boundary", data: good, opts: llm.TiktokenOptions{Pattern: `\bab|\s+`}, unsupported: true},
		{name: "possessive", data: good, opts: llm.TiktokenOptions{Pattern: `\p{L}++|\s+`}, unsupported: true},
		{name: "lookahead elsewhere", data: good, opts: llm.TiktokenOptions{Pattern: `a(?!b)|\s+`}, unsupported: true},
		{name: "lone lookahead", data: good, opts: llm.TiktokenOptions{Pattern: `\p{L}+|\s+(?!\S)`}, unsupported: true},
		{name: "anchor", data: good, opts: llm.TiktokenOptions{Pattern: `^a|\s+`}, unsupported: true},
		{name: "\\S in a class", data: good, opts: llm.TiktokenOptions{Pattern: `[\S]+`}, unsupported: true},
		{name: "unbalanced", data: good, opts: llm.TiktokenOptions{Pattern: `(a|b`}, unsupported: true},
		{name: "RE2 rejects", data: good, opts: llm.TiktokenOptions{Pattern: `a{2,1}`}, unsupported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := llm.ParseTiktokenWith([]byte(tc.data), tc.opts)
			if !errors.Is(err, llm.ErrTokenizer) {
				t.Fatalf("ParseTiktokenWith = %v, %v; want an error wrapping ErrTokenizer", tk, err)
			}
			t.Log(err)
			var u *llm.UnsupportedError
			if errors.As(err, &u) != tc.unsupported {
				t.Errorf("%v: *UnsupportedError %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
		})
	}
	// The same file with those options fixed is fine.
	if _, err := llm.ParseTiktokenWith([]byte(good), llm.TiktokenOptions{Pattern: `\p{L}+|\s+(?!\S)|\s+|.`, SpecialTokens: []string{"<a>"}, BOS: "<a>"}); err != nil {
		t.Fatal(err)
	}
}

// TestHFTokenizerErrors: every malformed tokenizer.json is an error
// wrapping ErrTokenizer; one using what this package does not implement
// is an *UnsupportedError.
func TestHFTokenizerErrors(t *testing.T) {
	good := marshal(t, tinyHF())
	type edit func(f map[string]any)
	model := func(f map[string]any) map[string]any { return f["model"].(map[string]any) }
	pre := func(p any) edit { return func(f map[string]any) { f["pre_tokenizer"] = p } }
	for _, tc := range []struct {
		name        string
		data        []byte // instead of good with edit
		edit        edit
		unsupported bool
	}{
		{name: "truncated", data: good[:len(good)/2]},
		{name: "not an object", data: []byte(`[1, 2]`)},
		{name: "no model", edit: func(f map[string]any) { delete(f, "model") }},
		{name: "WordPiece", edit: func(f map[string]any) { model(f)["type"] = "WordPiece" }, unsupported: true},
		{name: "Unigram", edit: func(f map[string]any) { model(f)["type"] = "Unigram" }, unsupported: true},
		{name: "WordLevel untyped", edit: func(f map[string]any) { delete(model(f), "type"); delete(model(f), "merges") }, unsupported: true},
		{name: "dropout", edit: func(f map[string]any) { model(f)["dropout"] = 0.1 }, unsupported: true},
		{name: "byte_fallback", edit: func(f map[string]any) { model(f)["byte_fallback"] = true }, unsupported: true},
		{name: "subword prefix", edit: func(f map[string]any) { model(f)["continuing_subword_prefix"] = "##" }, unsupported: true},
		{name: "merge of an unknown token", edit: func(f map[string]any) { model(f)["merges"] = []any{"a c"} }},
		{name: "merge making an unknown token", edit: func(f map[string]any) { model(f)["merges"] = []any{"b a"} }},
		{name: "merge of three", edit: func(f map[string]any) { model(f)["merges"] = []any{"a b Ġ"} }},
		{name: "merge pair of one", edit: func(f map[string]any) { model(f)["merges"] = []any{[]any{"a"}} }},
		{name: "merge number", edit: func(f map[string]any) { model(f)["merges"] = []any{7} }},
		{name: "negative id", edit: func(f map[string]any) { model(f)["vocab"].(map[string]any)["a"] = -1 }},
		{name: "huge id", edit: func(f map[string]any) { model(f)["vocab"].(map[string]any)["a"] = 1 << 40 }},
		{name: "duplicate id", edit: func(f map[string]any) { model(f)["vocab"].(map[string]any)["a"] = 1 }},
		{name: "id not a number", edit: func(f map[string]any) { model(f)["vocab"].(map[string]any)["a"] = "x" }},
		{name: "empty vocabulary", edit: func(f map[string]any) {
			model(f)["vocab"] = map[string]any{}
			model(f)["merges"] = []any{}
			f["added_tokens"] = []any{}
			f["post_processor"] = nil
		}},
		{name: "unknown unk_token", edit: func(f map[string]any) { model(f)["unk_token"] = "<unk>" }},
		{name: "added token on a vocabulary id", edit: func(f map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": 1, "content": "<x>", "special": true}}
		}},
		{name: "added token with another id", edit: func(f map[string]any) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 9, "content": "ab", "special": false})
		}},
		{name: "added token twice", edit: func(f map[string]any) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 9, "content": "<s>", "special": true})
		}},
		{name: "empty added token", edit: func(f map[string]any) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": 9, "content": "", "special": true})
		}},
		{name: "negative added id", edit: func(f map[string]any) {
			f["added_tokens"] = append(f["added_tokens"].([]any), map[string]any{"id": -2, "content": "<x>", "special": true})
		}},
		{name: "single_word", edit: func(f map[string]any) {
			f["added_tokens"].([]any)[1].(map[string]any)["single_word"] = true
		}, unsupported: true},
		{name: "Lowercase normalizer", edit: func(f map[string]any) { f["normalizer"] = map[string]any{"type": "Lowercase"} }, unsupported: true},
		{name: "Precompiled normalizer", edit: func(f map[string]any) {
			f["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFC"}, map[string]any{"type": "Precompiled"}}}
		}, unsupported: true},
		{name: "normalizer not an object", edit: func(f map[string]any) { f["normalizer"] = 3 }},
		{name: "no pre-tokenizer", edit: pre(nil), unsupported: true},
		{name: "Metaspace", edit: pre(map[string]any{"type": "Metaspace", "replacement": "▁"}), unsupported: true},
		{name: "Whitespace", edit: pre(map[string]any{"type": "Whitespace"}), unsupported: true},
		{name: "Split alone", edit: pre(map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\s+`}, "behavior": "Isolated"}), unsupported: true},
		{name: "Split Removed", edit: pre(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\s+`}, "behavior": "Removed"},
			map[string]any{"type": "ByteLevel"}}}), unsupported: true},
		{name: "Split without pattern", edit: pre(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "behavior": "Isolated"}, map[string]any{"type": "ByteLevel"}}})},
		{name: "Split after ByteLevel", edit: pre(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "ByteLevel"},
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\s+`}, "behavior": "Isolated"}}}), unsupported: true},
		{name: "Split regex lookbehind", edit: pre(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?<!a)b`}, "behavior": "Isolated"},
			map[string]any{"type": "ByteLevel"}}}), unsupported: true},
		{name: "WordPiece decoder", edit: func(f map[string]any) { f["decoder"] = map[string]any{"type": "WordPiece"} }, unsupported: true},
		{name: "Metaspace decoder in a sequence", edit: func(f map[string]any) {
			f["decoder"] = map[string]any{"type": "Sequence", "decoders": []any{map[string]any{"type": "Metaspace"}}}
		}, unsupported: true},
		{name: "template of an unknown token", edit: func(f map[string]any) {
			f["post_processor"].(map[string]any)["special_tokens"] = map[string]any{}
		}},
		{name: "template token id out of range", edit: func(f map[string]any) {
			f["post_processor"].(map[string]any)["special_tokens"] = map[string]any{"<s>": map[string]any{"ids": []any{99}}}
		}},
		{name: "template without $A", edit: func(f map[string]any) {
			f["post_processor"].(map[string]any)["single"] = []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}}
		}},
		{name: "template with $B", edit: func(f map[string]any) {
			f["post_processor"].(map[string]any)["single"] = []any{map[string]any{"Sequence": map[string]any{"id": "B"}}}
		}, unsupported: true},
		{name: "Roberta without cls", edit: func(f map[string]any) {
			f["post_processor"] = map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 7}}
		}},
		{name: "unknown post-processor", edit: func(f map[string]any) { f["post_processor"] = map[string]any{"type": "Magic"} }, unsupported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			if data == nil {
				f := tinyHF()
				tc.edit(f)
				data = marshal(t, f)
			}
			tk, err := llm.ParseHFTokenizer(data)
			if !errors.Is(err, llm.ErrTokenizer) {
				t.Fatalf("ParseHFTokenizer = %v, %v; want an error wrapping ErrTokenizer", tk, err)
			}
			t.Log(err)
			var u *llm.UnsupportedError
			if errors.As(err, &u) != tc.unsupported {
				t.Errorf("%v: *UnsupportedError %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
		})
	}
}

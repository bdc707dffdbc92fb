package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// HFTokenizer is a Hugging Face tokenizer.json holding a byte-level BPE
// model, as Llama 3, Qwen 2 and GPT-2 style exports ship: a BPE model
// ("merges" as "a b" strings or as pairs, ignore_merges where set), a
// ByteLevel pre-tokenizer alone or after Split regexes (a Sequence), no
// normalizer or a Unicode normalization (NFC, NFD, NFKC, NFKD), added
// tokens, a ByteLevel decoder, and a TemplateProcessing (or Roberta/Bert)
// post-processor for BOS. Encoding follows the tokenizers library: added
// tokens are cut out of the text first, every other part is normalized,
// split, mapped to byte-level characters and merged by merge rank.
//
// A HFTokenizer is safe for concurrent use.
type HFTokenizer struct {
	// vocab maps a byte-level token's bytes (not its printable form) to
	// its id: the whole-piece lookup of ignore_merges.
	vocab   map[string]int32
	byteIDs [256]int32 // the id of each byte's character, -1 if none
	merges  map[uint64]hfMerged
	pieces  []string // id -> the bytes it decodes to
	special []bool   // id -> an added token marked special
	unk     int32
	fuseUnk bool
	ignore  bool

	rawAdded  *specialMatcher // added tokens matched in the raw text
	normAdded *specialMatcher // added tokens matched after normalization
	strip     map[int32][2]bool
	normalize []norm.Form
	steps     []hfPreStep

	prefix, suffix []int32 // the post-processor's single template
	template       bool
	bos, eos       int32
	stops          []int32
	addedIDs       map[string]int32
}

type hfMerged struct{ rank, id int32 }

// hfPreStep is one pre-tokenizer of the sequence: a split by re (nil for
// none) after a space is put in front when prefixSpace is set.
type hfPreStep struct {
	re          *splitRegex
	prefixSpace bool
	byteLevel   bool
}

// LoadHFTokenizer reads a Hugging Face tokenizer.json file.
func LoadHFTokenizer(path string) (*HFTokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseHFTokenizer(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type hfJSON struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         *hfModelJSON    `json:"model"`
}

type hfAddedToken struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfModelJSON struct {
	Type                    string           `json:"type"`
	Vocab                   map[string]int64 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
}

// parseMerges reads a BPE model's "merges": an array of "a b" strings
// or of ["a", "b"] pairs. The model's millions of short strings are
// read here rather than through encoding/json's reflection (several
// times faster for Llama 3's 280,000 merges); a string with escapes
// goes through encoding/json.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	p := jsonScanner{b: raw}
	if p.skipSpace(); p.eof() || isNull(raw) {
		return nil, nil
	}
	if !p.consume('[') {
		return nil, fmt.Errorf("merges is not an array")
	}
	var out [][2]string
	for first := true; ; first = false {
		if p.skipSpace(); p.consume(']') {
			break
		}
		if !first && !p.consume(',') {
			return nil, fmt.Errorf("merge %d: expected , or ]", len(out))
		}
		p.skipSpace()
		var m [2]string
		switch {
		case p.peek('"'):
			s, err := p.str()
			if err != nil {
				return nil, fmt.Errorf("merge %d: %v", len(out), err)
			}
			a, c, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(c, " ") {
				return nil, fmt.Errorf("merge %d: %q is not two tokens separated by a space", len(out), s)
			}
			m = [2]string{a, c}
		case p.consume('['):
			for k := range 2 {
				p.skipSpace()
				if k == 1 && !p.consume(',') {
					return nil, fmt.Errorf("merge %d: a pair of fewer than two tokens", len(out))
				}
				p.skipSpace()
				s, err := p.str()
				if err != nil {
					return nil, fmt.Errorf("merge %d: %v", len(out), err)
				}
				m[k] = s
			}
			if p.skipSpace(); !p.consume(']') {
				return nil, fmt.Errorf("merge %d: a pair of more than two tokens", len(out))
			}
		default:
			return nil, fmt.Errorf("merge %d is neither \"a b\" nor [\"a\", \"b\"]", len(out))
		}
		out = append(out, m)
	}
	if p.skipSpace(); !p.eof() {
		return nil, fmt.Errorf("merges: data after the array")
	}
	return out, nil
}

// jsonScanner reads JSON values already validated by encoding/json.
type jsonScanner struct {
	b   []byte
	pos int
}

func (p *jsonScanner) eof() bool { return p.pos >= len(p.b) }

func (p *jsonScanner) skipSpace() {
	for p.pos < len(p.b) && (p.b[p.pos] == ' ' || p.b[p.pos] == '\t' || p.b[p.pos] == '\n' || p.b[p.pos] == '\r') {
		p.pos++
	}
}

func (p *jsonScanner) peek(c byte) bool { return p.pos < len(p.b) && p.b[p.pos] == c }

func (p *jsonScanner) consume(c byte) bool {
	if p.peek(c) {
		p.pos++
		return true
	}
	return false
}

// str reads a JSON string.
func (p *jsonScanner) str() (string, error) {
	if !p.peek('"') {
		return "", fmt.Errorf("expected a string")
	}
	start := p.pos
	escaped := false
	for i := start + 1; i < len(p.b); i++ {
		switch p.b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			p.pos = i + 1
			if !escaped {
				return string(p.b[start+1 : i]), nil
			}
			var s string
			if err := json.Unmarshal(p.b[start:i+1], &s); err != nil {
				return "", err
			}
			return s, nil
		}
	}
	return "", fmt.Errorf("unterminated string")
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// hfTyped is any component's "type" field.
type hfTyped struct {
	Type string `json:"type"`
}

// hfDecodeErr wraps a JSON error of part.
func hfDecodeErr(part string, err error) error {
	if part == "" {
		return fmt.Errorf("%w: tokenizer.json: %v", ErrTokenizer, err)
	}
	return fmt.Errorf("%w: tokenizer.json %s: %v", ErrTokenizer, part, err)
}

// ParseHFTokenizer reads the bytes of a Hugging Face tokenizer.json. A
// malformed file (bad JSON, merges naming tokens not in the vocabulary,
// duplicate or out-of-range ids, ...) is an error wrapping ErrTokenizer;
// a model, normalizer, pre-tokenizer, post-processor or decoder this
// package does not implement (WordPiece, Unigram, Metaspace, ...) is an
// *UnsupportedError, which wraps it too.
func ParseHFTokenizer(b []byte) (*HFTokenizer, error) {
	var f hfJSON
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a BOM some editors write
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, hfDecodeErr("", err)
	}
	if f.Model == nil {
		return nil, fmt.Errorf("%w: tokenizer.json has no model", ErrTokenizer)
	}
	m := f.Model
	switch {
	case m.Type == "BPE", m.Type == "" && !isNull(m.Merges):
	case m.Type == "":
		return nil, &UnsupportedError{Feature: "a model without merges (not BPE)"}
	default:
		return nil, &UnsupportedError{Feature: fmt.Sprintf("model type %q (only BPE is read)", m.Type)}
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, &UnsupportedError{Feature: "BPE dropout"}
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, &UnsupportedError{Feature: "BPE continuing_subword_prefix or end_of_word_suffix"}
	}
	if m.ByteFallback {
		return nil, &UnsupportedError{Feature: "BPE byte_fallback (SentencePiece-style BPE)"}
	}
	if len(m.Vocab)+len(f.AddedTokens) > maxVocab {
		return nil, fmt.Errorf("%w: tokenizer.json: %d tokens, at most %d", ErrTokenizer, len(m.Vocab)+len(f.AddedTokens), maxVocab)
	}
	t := &HFTokenizer{unk: -1, fuseUnk: m.FuseUnk, ignore: m.IgnoreMerges, bos: -1, eos: -1}

	// Ids: the vocabulary's and the added tokens', below the cap before
	// the id table is sized from the largest.
	var maxID int64 = -1
	for tok, id := range m.Vocab {
		if id < 0 || id >= maxVocab {
			return nil, fmt.Errorf("%w: tokenizer.json: token %q has id %d, outside [0, %d)", ErrTokenizer, tok, id, maxVocab)
		}
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.ID >= maxVocab {
			return nil, fmt.Errorf("%w: tokenizer.json: added token %q has id %d, outside [0, %d)", ErrTokenizer, a.Content, a.ID, maxVocab)
		}
		maxID = max(maxID, a.ID)
	}
	if maxID < 0 {
		return nil, fmt.Errorf("%w: tokenizer.json: an empty vocabulary", ErrTokenizer)
	}
	t.pieces = make([]string, maxID+1)
	t.special = make([]bool, maxID+1)
	have := make([]bool, maxID+1)
	t.vocab = make(map[string]int32, len(m.Vocab))
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	for tok, id := range m.Vocab {
		if have[id] {
			return nil, fmt.Errorf("%w: tokenizer.json: id %d given to %q and %q", ErrTokenizer, id, tok, t.pieces[id])
		}
		have[id] = true
		raw, ok := byteLevelDecode(tok)
		t.pieces[id] = raw
		if !ok {
			// Not made of byte-level characters: no byte-level piece
			// can be this token; it decodes as written.
			continue
		}
		t.vocab[raw] = int32(id)
		if len(raw) == 1 {
			t.byteIDs[raw[0]] = int32(id)
		}
	}
	// Merges: ranks in file order (a later duplicate wins, as in the
	// tokenizers library).
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, hfDecodeErr("model", err)
	}
	t.merges = make(map[uint64]hfMerged, len(merges))
	for i, mg := range merges {
		a, okA := m.Vocab[mg[0]]
		c, okC := m.Vocab[mg[1]]
		if !okA || !okC {
			return nil, fmt.Errorf("%w: tokenizer.json: merge %d (%q %q) names a token not in the vocabulary", ErrTokenizer, i, mg[0], mg[1])
		}
		r, ok := m.Vocab[mg[0]+mg[1]]
		if !ok {
			return nil, fmt.Errorf("%w: tokenizer.json: merge %d (%q %q) makes %q, not in the vocabulary", ErrTokenizer, i, mg[0], mg[1], mg[0]+mg[1])
		}
		if i >= 1<<31-1 {
			return nil, fmt.Errorf("%w: tokenizer.json: too many merges", ErrTokenizer)
		}
		t.merges[uint64(a)<<32|uint64(c)] = hfMerged{int32(i), int32(r)}
	}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("%w: tokenizer.json: unk_token %q is not in the vocabulary", ErrTokenizer, *m.UnkToken)
		}
		t.unk = int32(id)
	}

	if err := t.addedTokens(f.AddedTokens, m.Vocab, have); err != nil {
		return nil, err
	}
	if err := t.parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if err := t.parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if len(t.steps) == 0 || !t.steps[len(t.steps)-1].byteLevel {
		return nil, &UnsupportedError{Feature: "a pre-tokenizer that does not end with ByteLevel (not a byte-level BPE)"}
	}
	if err := t.parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if err := t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	t.pickSpecialIDs()
	return t, nil
}

// addedTokens records the added tokens: their ids, their text for
// decoding and the matchers that find them in text.
func (t *HFTokenizer) addedTokens(added []hfAddedToken, vocab map[string]int64, have []bool) error {
	if len(added) > maxSpecialTokens {
		return fmt.Errorf("%w: tokenizer.json: %d added tokens, at most %d", ErrTokenizer, len(added), maxSpecialTokens)
	}
	raw, normed := map[string]int32{}, map[string]int32{}
	t.addedIDs = map[string]int32{}
	t.strip = map[int32][2]bool{}
	for _, a := range added {
		if a.Content == "" {
			return fmt.Errorf("%w: tokenizer.json: added token %d is empty", ErrTokenizer, a.ID)
		}
		if a.SingleWord {
			return &UnsupportedError{Feature: fmt.Sprintf("added token %q with single_word", a.Content)}
		}
		if v, ok := vocab[a.Content]; ok && v != a.ID {
			return fmt.Errorf("%w: tokenizer.json: added token %q has id %d, the vocabulary %d", ErrTokenizer, a.Content, a.ID, v)
		}
		if _, dup := t.addedIDs[a.Content]; dup {
			return fmt.Errorf("%w: tokenizer.json: added token %q given twice", ErrTokenizer, a.Content)
		}
		id := int32(a.ID)
		if have[id] {
			if _, inVocab := vocab[a.Content]; !inVocab {
				return fmt.Errorf("%w: tokenizer.json: id %d given to added token %q and to %q", ErrTokenizer, id, a.Content, t.pieces[id])
			}
		}
		have[id] = true
		t.addedIDs[a.Content] = id
		// The decoder reads added tokens like any other: byte-level
		// characters turn back into their bytes.
		t.pieces[id], _ = byteLevelDecode(a.Content)
		t.special[id] = a.Special
		if a.Normalized && !a.Special {
			normed[a.Content] = id
		} else {
			raw[a.Content] = id
		}
		if a.LStrip || a.RStrip {
			t.strip[id] = [2]bool{a.LStrip, a.RStrip}
		}
	}
	t.rawAdded = newSpecialMatcher(raw)
	if len(normed) > 0 {
		t.normAdded = newSpecialMatcher(normed)
	}
	return nil
}

func (t *HFTokenizer) parseNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var n struct {
		hfTyped
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return hfDecodeErr("normalizer", err)
	}
	switch n.Type {
	case "NFC":
		t.normalize = append(t.normalize, norm.NFC)
	case "NFD":
		t.normalize = append(t.normalize, norm.NFD)
	case "NFKC":
		t.normalize = append(t.normalize, norm.NFKC)
	case "NFKD":
		t.normalize = append(t.normalize, norm.NFKD)
	case "Sequence":
		for _, s := range n.Normalizers {
			if err := t.parseNormalizer(s); err != nil {
				return err
			}
		}
	default:
		return &UnsupportedError{Feature: fmt.Sprintf("normalizer %q", n.Type)}
	}
	return nil
}

func (t *HFTokenizer) parsePreTokenizer(raw json.RawMessage) error {
	if isNull(raw) {
		return &UnsupportedError{Feature: "no pre-tokenizer (a byte-level BPE needs a ByteLevel one)"}
	}
	var p struct {
		hfTyped
		AddPrefixSpace bool              `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		Pattern        *struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		} `json:"pattern"`
		Behavior string `json:"behavior"`
		Invert   bool   `json:"invert"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return hfDecodeErr("pre_tokenizer", err)
	}
	if len(t.steps) > 0 && t.steps[len(t.steps)-1].byteLevel {
		return &UnsupportedError{Feature: fmt.Sprintf("pre-tokenizer %q after ByteLevel", p.Type)}
	}
	switch p.Type {
	case "Sequence":
		if len(p.Pretokenizers) > 64 {
			return fmt.Errorf("%w: tokenizer.json: %d pre-tokenizers in a sequence", ErrTokenizer, len(p.Pretokenizers))
		}
		for _, s := range p.Pretokenizers {
			if err := t.parsePreTokenizer(s); err != nil {
				return err
			}
		}
	case "ByteLevel":
		st := hfPreStep{prefixSpace: p.AddPrefixSpace, byteLevel: true}
		if p.UseRegex == nil || *p.UseRegex {
			re, err := compileSplitRegex(gpt2Pattern)
			if err != nil {
				return err
			}
			st.re = re
		}
		t.steps = append(t.steps, st)
	case "Split":
		if p.Behavior != "Isolated" || p.Invert {
			return &UnsupportedError{Feature: fmt.Sprintf("Split pre-tokenizer with behavior %q, invert %v", p.Behavior, p.Invert)}
		}
		var pattern string
		switch {
		case p.Pattern != nil && p.Pattern.Regex != nil:
			pattern = *p.Pattern.Regex
		case p.Pattern != nil && p.Pattern.String != nil:
			pattern = regexpQuote(*p.Pattern.String)
		default:
			return fmt.Errorf("%w: tokenizer.json: a Split pre-tokenizer without a pattern", ErrTokenizer)
		}
		re, err := compileSplitRegex(pattern)
		if err != nil {
			return err
		}
		t.steps = append(t.steps, hfPreStep{re: re})
	default:
		return &UnsupportedError{Feature: fmt.Sprintf("pre-tokenizer %q", p.Type)}
	}
	return nil
}

func (t *HFTokenizer) parseDecoder(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var d struct {
		hfTyped
		Decoders []json.RawMessage `json:"decoders"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return hfDecodeErr("decoder", err)
	}
	switch d.Type {
	case "ByteLevel":
	case "Sequence":
		for _, s := range d.Decoders {
			if err := t.parseDecoder(s); err != nil {
				return err
			}
		}
	default:
		return &UnsupportedError{Feature: fmt.Sprintf("decoder %q (a byte-level BPE decodes with ByteLevel)", d.Type)}
	}
	return nil
}

func (t *HFTokenizer) parsePostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var p struct {
		hfTyped
		Processors []json.RawMessage `json:"processors"`
		Single     []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int64 `json:"ids"`
		} `json:"special_tokens"`
		Sep *[2]json.RawMessage `json:"sep"`
		Cls *[2]json.RawMessage `json:"cls"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return hfDecodeErr("post_processor", err)
	}
	ids := func(names []string) ([]int32, error) {
		var out []int32
		for _, n := range names {
			st, ok := p.SpecialTokens[n]
			if !ok {
				return nil, fmt.Errorf("%w: tokenizer.json: the template names %q, not among its special_tokens", ErrTokenizer, n)
			}
			for _, id := range st.IDs {
				if id < 0 || id >= int64(len(t.pieces)) {
					return nil, fmt.Errorf("%w: tokenizer.json: template token %q has id %d, outside the vocabulary", ErrTokenizer, n, id)
				}
				out = append(out, int32(id))
			}
		}
		return out, nil
	}
	switch p.Type {
	case "ByteLevel":
	case "Sequence":
		for _, s := range p.Processors {
			if err := t.parsePostProcessor(s); err != nil {
				return err
			}
		}
	case "TemplateProcessing":
		var before, after []string
		seen := false
		for _, piece := range p.Single {
			switch {
			case piece.Sequence != nil && piece.Sequence.ID == "A" && !seen:
				seen = true
			case piece.Sequence != nil:
				return &UnsupportedError{Feature: fmt.Sprintf("a single template with sequence %q", piece.Sequence.ID)}
			case piece.SpecialToken != nil && seen:
				after = append(after, piece.SpecialToken.ID)
			case piece.SpecialToken != nil:
				before = append(before, piece.SpecialToken.ID)
			default:
				return fmt.Errorf("%w: tokenizer.json: a template piece that is neither SpecialToken nor Sequence", ErrTokenizer)
			}
		}
		if !seen {
			return fmt.Errorf("%w: tokenizer.json: the single template has no $A", ErrTokenizer)
		}
		pre, err := ids(before)
		if err != nil {
			return err
		}
		post, err := ids(after)
		if err != nil {
			return err
		}
		t.prefix = append(pre, t.prefix...)
		t.suffix = append(t.suffix, post...)
		t.template = true
	case "RobertaProcessing", "BertProcessing":
		tokenID := func(pair *[2]json.RawMessage, name string) (int32, error) {
			var id int64
			if pair == nil || json.Unmarshal(pair[1], &id) != nil || id < 0 || id >= int64(len(t.pieces)) {
				return 0, fmt.Errorf("%w: tokenizer.json: %s post-processor: bad %s", ErrTokenizer, p.Type, name)
			}
			return int32(id), nil
		}
		cls, err := tokenID(p.Cls, "cls")
		if err != nil {
			return err
		}
		sep, err := tokenID(p.Sep, "sep")
		if err != nil {
			return err
		}
		t.prefix = append([]int32{cls}, t.prefix...)
		t.suffix = append(t.suffix, sep)
		t.template = true
	default:
		return &UnsupportedError{Feature: fmt.Sprintf("post-processor %q", p.Type)}
	}
	return nil
}

// pickSpecialIDs sets BOS, EOS and the stop tokens from the template and
// the added tokens' names.
func (t *HFTokenizer) pickSpecialIDs() {
	if len(t.prefix) > 0 {
		t.bos = t.prefix[0]
	} else if id, ok := t.addedIDs["<|begin_of_text|>"]; ok && !t.template {
		// Llama 3's first tokenizer.json had no template: its BOS is
		// still <|begin_of_text|>.
		t.bos = id
	}
	for _, name := range []string{"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>", "<|im_end|>", "<|eot_id|>"} {
		if id, ok := t.addedIDs[name]; ok {
			t.eos = id
			break
		}
	}
	for _, name := range stopNames {
		if id, ok := t.addedIDs[name]; ok && !slices.Contains(t.stops, id) {
			t.stops = append(t.stops, id)
		}
	}
	slices.Sort(t.stops)
}

// stopNames are the added tokens that end a generation or a chat turn in
// the model families read here (Llama 3, Qwen 2, GPT-2, and the usual
// </s> and <eos>).
var stopNames = []string{"<|end_of_text|>", "<|eom_id|>", "<|eot_id|>", "<|endoftext|>", "<|im_end|>", "</s>", "<eos>", "<end_of_turn>", "<|end|>"}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// regexpQuote quotes s for compileSplitRegex.
func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// BOS returns the id the post-processor's template puts first (Llama 3's
// <|begin_of_text|>; also for a Llama 3 tokenizer.json without a
// template), -1 when there is none (GPT-2, Qwen 2).
func (t *HFTokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id: the first added token of
// <|end_of_text|>, <|endoftext|>, </s>, <eos>, <|im_end|>, <|eot_id|>
// (-1 when none is there).
func (t *HFTokenizer) EOS() int32 { return t.eos }

// StopTokens returns the ids of the added tokens that end a generation or
// a chat turn, in id order: <|end_of_text|>, <|eom_id|>, <|eot_id|>,
// <|endoftext|>, <|im_end|>, </s>, <eos>, <end_of_turn>, <|end|>, those
// that the file has.
func (t *HFTokenizer) StopTokens() []int32 { return append([]int32(nil), t.stops...) }

// VocabSize returns the largest id plus one.
func (t *HFTokenizer) VocabSize() int { return len(t.pieces) }

// SpecialTokenID returns the id of an added token by its text, such as
// "<|im_start|>".
func (t *HFTokenizer) SpecialTokenID(text string) (int32, bool) {
	id, ok := t.addedIDs[text]
	return id, ok
}

// Encode returns the ids of text. With bos set they are what the
// tokenizers library's encode gives with add_special_tokens (the
// post-processor's template around them; <|begin_of_text|> first for a
// Llama 3 file without a template), else without. Added tokens written in
// text, such as <|im_start|>, become their ids either way, as there. Text
// that is not valid UTF-8 is encoded byte for byte (its invalid bytes
// split as U+FFFD would). The error is always nil.
func (t *HFTokenizer) Encode(text string, bos bool) ([]int32, error) {
	var ids []int32
	if bos {
		if t.template {
			ids = append(ids, t.prefix...)
		} else if t.bos >= 0 {
			ids = append(ids, t.bos)
		}
	}
	var sc bpeScratch
	var word []int32
	ids = t.cutAdded(text, t.rawAdded, ids, func(seg string, ids []int32) []int32 {
		for _, f := range t.normalize {
			seg = f.String(seg)
		}
		return t.cutAdded(seg, t.normAdded, ids, func(seg string, ids []int32) []int32 {
			t.preTokenize(0, seg, func(p string) {
				ids, word = t.bpe(p, ids, word, &sc)
			})
			return ids
		})
	})
	if bos && t.template {
		ids = append(ids, t.suffix...)
	}
	return ids, nil
}

// cutAdded splits text at the added tokens m finds, appending their ids
// and what between calls to rest.
func (t *HFTokenizer) cutAdded(text string, m *specialMatcher, ids []int32, rest func(string, []int32) []int32) []int32 {
	for text != "" {
		start, n, id := m.find(text)
		if start < 0 {
			break
		}
		before, after := text[:start], text[start+n:]
		if s, ok := t.strip[id]; ok {
			if s[0] {
				before = strings.TrimRightFunc(before, unicode.IsSpace)
			}
			if s[1] {
				after = strings.TrimLeftFunc(after, unicode.IsSpace)
			}
		}
		if before != "" {
			ids = rest(before, ids)
		}
		ids = append(ids, id)
		text = after
	}
	if text != "" {
		ids = rest(text, ids)
	}
	return ids
}

// preTokenize runs steps[i:] on s, calling piece for each non-empty piece
// the last leaves.
func (t *HFTokenizer) preTokenize(i int, s string, piece func(string)) {
	if i == len(t.steps) {
		if s != "" {
			piece(s)
		}
		return
	}
	st := t.steps[i]
	if st.prefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if st.re == nil {
		t.preTokenize(i+1, s, piece)
		return
	}
	st.re.split(s, true, func(p string) { t.preTokenize(i+1, p, piece) })
}

// bpe appends the ids of one pre-tokenized piece (raw bytes).
func (t *HFTokenizer) bpe(p string, ids, word []int32, sc *bpeScratch) ([]int32, []int32) {
	if t.ignore {
		if id, ok := t.vocab[p]; ok {
			return append(ids, id), word
		}
	}
	word = word[:0]
	for i := 0; i < len(p); i++ {
		id := t.byteIDs[p[i]]
		if id < 0 {
			// A character the vocabulary lacks: <unk> (consecutive ones
			// fused when fuse_unk is set), else dropped, as in the
			// tokenizers library.
			if t.unk < 0 || t.fuseUnk && len(word) > 0 && word[len(word)-1] == t.unk {
				continue
			}
			id = t.unk
		}
		word = append(word, id)
	}
	return sc.merge(hfRanker{t}, word, ids), word
}

type hfRanker struct{ t *HFTokenizer }

func (r hfRanker) pairRank(left, right int32) (rank, merged int32, ok bool) {
	m, ok := r.t.merges[uint64(left)<<32|uint64(right)]
	return m.rank, m.id, ok
}

// Decode returns token's bytes as a string (a character split over
// several tokens comes out whole once they are all printed), an added
// token's text, or "" for an id outside the vocabulary. prev is unused.
func (t *HFTokenizer) Decode(prev, token int32) string {
	if token < 0 || int(token) >= len(t.pieces) {
		return ""
	}
	return t.pieces[token]
}

// The byte-level alphabet: GPT-2's map of the 256 bytes to printable
// characters (the printable Latin-1 bytes stand for themselves, the
// others for U+0100 on).
var byteLevelRunes, byteLevelBytes = func() ([256]rune, map[rune]byte) {
	var r [256]rune
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			r[b] = rune(b)
		} else {
			r[b] = rune(256 + n)
			n++
		}
		m[r[b]] = byte(b)
	}
	return r, m
}()

// byteLevelDecode returns the bytes a byte-level token stands for; ok is
// false (and s comes back as is) when s has a character outside the
// alphabet.
func byteLevelDecode(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		c, ok := byteLevelBytes[r]
		if !ok {
			return s, false
		}
		b = append(b, c)
	}
	return string(b), true
}

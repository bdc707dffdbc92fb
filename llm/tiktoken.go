package llm

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
)

// Tiktoken is a tiktoken-style byte-level BPE tokenizer: the
// tokenizer.model of Llama 3 exports (the file ExecuTorch's Llama runner
// reads), a text file of lines "<base64 token bytes> <rank>". A token's id
// is its rank; the special tokens follow the ranks (Llama 3's 256 from id
// 128000 on). Text is split into pieces by a regex (Llama 3's by default)
// and each piece that is not a token itself is merged from its bytes,
// lowest rank first, as tiktoken does. Special tokens written in the text
// are recognised (EncodeOrdinary does not).
//
// A Tiktoken is safe for concurrent use.
type Tiktoken struct {
	ranks   map[string]int32 // token bytes -> rank
	pieces  []string         // id -> token bytes, then the special tokens' text
	nRanks  int
	special map[string]int32
	match   *specialMatcher
	split   *splitRegex
	byteIDs [256]int32
	bos     int32
	eos     int32
	stops   []int32
}

// TiktokenOptions say what a tiktoken file itself does not: the split
// regex and the special tokens. The zero value is Llama 3's.
type TiktokenOptions struct {
	// Pattern is the pre-tokenizer regex, in tiktoken's (Rust regex)
	// syntax; "" is Llama 3's (cl100k_base's).
	Pattern string
	// SpecialTokens get the ids from the number of ranks on, in order;
	// nil is Llama 3's 256, named as ExecuTorch's Llama runner and Meta's
	// Llama 3.1 tokenizer name them: <|begin_of_text|> (128000),
	// <|end_of_text|>, <|reserved_special_token_0|>,
	// <|reserved_special_token_1|>, <|finetune_right_pad_id|>,
	// <|step_id|>, <|start_header_id|> (128006), <|end_header_id|>,
	// <|eom_id|>, <|eot_id|> (128009), <|python_tag|>, then
	// <|reserved_special_token_2|> and on up to 128255.
	SpecialTokens []string
	// BOS and EOS name the begin- and end-of-sequence tokens among the
	// special tokens. "" is none when SpecialTokens is set, and Llama 3's
	// <|begin_of_text|> and <|end_of_text|> when it is nil.
	BOS, EOS string
	// Stops name the tokens that end a generation (StopTokens). nil is
	// EOS alone when SpecialTokens is set, and Llama 3's <|end_of_text|>,
	// <|eom_id|> and <|eot_id|> when it is nil (instruct models end a
	// turn with <|eot_id|>).
	Stops []string
}

// Llama3SpecialTokens returns Llama 3's 256 special tokens in id order
// (TiktokenOptions.SpecialTokens).
func Llama3SpecialTokens() []string {
	s := []string{"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
		"<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"}
	for i := 2; len(s) < 256; i++ {
		s = append(s, "<|reserved_special_token_"+strconv.Itoa(i)+"|>")
	}
	return s
}

// LoadTiktoken reads a tiktoken tokenizer.model file with Llama 3's regex
// and special tokens.
func LoadTiktoken(path string) (*Tiktoken, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTiktoken(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTiktoken reads tiktoken tokenizer.model bytes with Llama 3's regex
// and special tokens (ParseTiktokenWith with the zero options).
func ParseTiktoken(b []byte) (*Tiktoken, error) {
	return ParseTiktokenWith(b, TiktokenOptions{})
}

// ParseTiktokenWith reads tiktoken tokenizer.model bytes: lines of a
// token's bytes in standard base64 (padded), one space and its rank in
// decimal; the ranks must be 0..N-1, each once, and every single byte
// must be a token. A malformed file is an error wrapping ErrTokenizer; a
// pattern this package cannot run exactly is an *UnsupportedError.
func ParseTiktokenWith(b []byte, o TiktokenOptions) (*Tiktoken, error) {
	// Count the lines first: the cap is checked before anything is sized
	// from the file.
	lines := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		lines++
	}
	if lines > maxVocab {
		return nil, fmt.Errorf("%w: tiktoken: %d lines, at most %d tokens", ErrTokenizer, lines, maxVocab)
	}
	type entry struct{ off, end, rank int32 }
	entries := make([]entry, 0, lines)
	var all []byte
	for n, rest := 1, b; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			if len(rest) == 0 {
				break // the final newline
			}
			return nil, fmt.Errorf("%w: tiktoken line %d: empty", ErrTokenizer, n)
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("%w: tiktoken line %d: no space between token and rank", ErrTokenizer, n)
		}
		tok, rankText := line[:sp], line[sp+1:]
		if base64.StdEncoding.DecodedLen(len(tok)) > maxPiece {
			return nil, fmt.Errorf("%w: tiktoken line %d: token longer than %d bytes", ErrTokenizer, n, maxPiece)
		}
		off := len(all)
		var err error
		if all, err = base64.StdEncoding.AppendDecode(all, tok); err != nil {
			return nil, fmt.Errorf("%w: tiktoken line %d: bad base64 %q: %v", ErrTokenizer, n, tok, err)
		}
		if len(all) == off {
			return nil, fmt.Errorf("%w: tiktoken line %d: empty token", ErrTokenizer, n)
		}
		rank, err := strconv.ParseInt(string(rankText), 10, 32)
		if err != nil || rank < 0 || rank >= int64(lines) {
			return nil, fmt.Errorf("%w: tiktoken line %d: rank %q is not a number in [0, %d)", ErrTokenizer, n, rankText, lines)
		}
		entries = append(entries, entry{int32(off), int32(len(all)), int32(rank)})
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: tiktoken: no tokens", ErrTokenizer)
	}
	data := string(all)
	t := &Tiktoken{ranks: make(map[string]int32, len(entries)), nRanks: len(entries), pieces: make([]string, len(entries)),
		bos: -1, eos: -1}
	for i, e := range entries {
		if int(e.rank) >= len(entries) {
			return nil, fmt.Errorf("%w: tiktoken line %d: rank %d, but there are %d tokens (ranks must be 0..%d)", ErrTokenizer, i+1, e.rank, len(entries), len(entries)-1)
		}
		if t.pieces[e.rank] != "" {
			return nil, fmt.Errorf("%w: tiktoken line %d: rank %d given twice", ErrTokenizer, i+1, e.rank)
		}
		tok := data[e.off:e.end]
		if prev, dup := t.ranks[tok]; dup {
			return nil, fmt.Errorf("%w: tiktoken line %d: token %q already has rank %d", ErrTokenizer, i+1, tok, prev)
		}
		t.ranks[tok] = e.rank
		t.pieces[e.rank] = tok
	}
	for c := 0; c < 256; c++ {
		id, ok := t.ranks[string([]byte{byte(c)})]
		if !ok {
			return nil, fmt.Errorf("%w: tiktoken: byte 0x%02x is not a token", ErrTokenizer, c)
		}
		t.byteIDs[c] = id
	}

	pattern, specials, bos, eos, stops := o.Pattern, o.SpecialTokens, o.BOS, o.EOS, o.Stops
	if pattern == "" {
		pattern = llama3Pattern
	}
	if specials == nil {
		// Llama 3's, and its BOS, EOS and stops where not given.
		specials = Llama3SpecialTokens()
		if bos == "" {
			bos = "<|begin_of_text|>"
		}
		if eos == "" {
			eos = "<|end_of_text|>"
		}
		if stops == nil {
			stops = []string{"<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"}
		}
	}
	if len(specials) > maxSpecialTokens || t.nRanks+len(specials) > maxVocab {
		return nil, fmt.Errorf("%w: tiktoken: %d special tokens after %d ranks", ErrTokenizer, len(specials), t.nRanks)
	}
	var err error
	if t.split, err = compileSplitRegex(pattern); err != nil {
		return nil, err
	}
	t.special = make(map[string]int32, len(specials))
	for i, s := range specials {
		if s == "" {
			return nil, fmt.Errorf("%w: tiktoken: special token %d is empty", ErrTokenizer, i)
		}
		if _, dup := t.special[s]; dup {
			return nil, fmt.Errorf("%w: tiktoken: special token %q given twice", ErrTokenizer, s)
		}
		t.special[s] = int32(t.nRanks + i)
		t.pieces = append(t.pieces, s)
	}
	t.match = newSpecialMatcher(t.special)
	lookup := func(name string) (int32, error) {
		if name == "" {
			return -1, nil
		}
		id, ok := t.special[name]
		if !ok {
			return -1, fmt.Errorf("%w: tiktoken: %q is not a special token", ErrTokenizer, name)
		}
		return id, nil
	}
	if t.bos, err = lookup(bos); err != nil {
		return nil, err
	}
	if t.eos, err = lookup(eos); err != nil {
		return nil, err
	}
	if stops == nil && t.eos >= 0 {
		t.stops = []int32{t.eos}
	}
	for _, s := range stops {
		id, err := lookup(s)
		if err != nil {
			return nil, err
		}
		t.stops = append(t.stops, id)
	}
	return t, nil
}

// BOS returns the begin-of-sequence id (<|begin_of_text|>, 128000 in
// Llama 3), -1 when there is none.
func (t *Tiktoken) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id (<|end_of_text|>, 128001 in Llama
// 3), -1 when there is none.
func (t *Tiktoken) EOS() int32 { return t.eos }

// StopTokens returns the ids that end a generation: for Llama 3
// <|end_of_text|>, <|eom_id|> and <|eot_id|> (128001, 128008, 128009).
func (t *Tiktoken) StopTokens() []int32 { return append([]int32(nil), t.stops...) }

// VocabSize returns the number of ranks plus the special tokens.
func (t *Tiktoken) VocabSize() int { return len(t.pieces) }

// SpecialTokenID returns the id of a special token by its text, such as
// "<|eot_id|>".
func (t *Tiktoken) SpecialTokenID(text string) (int32, bool) {
	id, ok := t.special[text]
	return id, ok
}

// Encode returns the ids of text, after BOS when bos is set (and there is
// one). Special tokens written in text, such as <|eot_id|>, become their
// ids (tiktoken's allowed_special="all"); everything else is split by the
// regex and merged. Text that is not valid UTF-8 is encoded byte for byte
// (its invalid bytes split as U+FFFD would). The error is always nil.
func (t *Tiktoken) Encode(text string, bos bool) ([]int32, error) {
	var ids []int32
	if bos && t.bos >= 0 {
		ids = append(ids, t.bos)
	}
	var sc bpeScratch
	for text != "" {
		start, n, id := t.match.find(text)
		if start < 0 {
			return t.encodeOrdinary(text, ids, &sc), nil
		}
		ids = t.encodeOrdinary(text[:start], ids, &sc)
		ids = append(ids, id)
		text = text[start+n:]
	}
	return ids, nil
}

// EncodeOrdinary returns the ids of text with special tokens written in
// it encoded as plain text (tiktoken's encode_ordinary): for text from
// a user that must not inject control tokens.
func (t *Tiktoken) EncodeOrdinary(text string) []int32 {
	var sc bpeScratch
	return t.encodeOrdinary(text, nil, &sc)
}

func (t *Tiktoken) encodeOrdinary(text string, ids []int32, sc *bpeScratch) []int32 {
	r := &tiktokenRanker{t: t}
	var word []int32
	t.split.split(text, false, func(p string) {
		if id, ok := t.ranks[p]; ok {
			ids = append(ids, id)
			return
		}
		word = word[:0]
		for i := 0; i < len(p); i++ {
			word = append(word, t.byteIDs[p[i]])
		}
		ids = sc.merge(r, word, ids)
	})
	return ids
}

// tiktokenRanker ranks a pair by the rank of the two tokens' bytes
// together, as tiktoken merges.
type tiktokenRanker struct {
	t   *Tiktoken
	buf []byte
}

func (r *tiktokenRanker) pairRank(left, right int32) (rank, merged int32, ok bool) {
	r.buf = append(append(r.buf[:0], r.t.pieces[left]...), r.t.pieces[right]...)
	id, ok := r.t.ranks[string(r.buf)]
	return id, id, ok
}

// Decode returns token's bytes as a string (a character split over
// several tokens comes out whole once they are all printed), a special
// token's text, or "" for an id outside the vocabulary. prev is unused:
// byte-level tokens read the same anywhere.
func (t *Tiktoken) Decode(prev, token int32) string {
	if token < 0 || int(token) >= len(t.pieces) {
		return ""
	}
	return t.pieces[token]
}

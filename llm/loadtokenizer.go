package llm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// TokenizerFormat is the kind of a tokenizer file, as DetectTokenizer
// tells it from the file's bytes.
type TokenizerFormat int

// Tokenizer file formats.
const (
	// FormatUnknownTokenizer: none of the formats below (an empty file,
	// a model, a text file, ...).
	FormatUnknownTokenizer TokenizerFormat = iota
	// FormatLlama2C: llama2.c's tokenizer.bin (ParseLlama2CTokenizer).
	FormatLlama2C
	// FormatSentencePiece: a SentencePiece tokenizer.model, a protobuf
	// (ParseSentencePiece).
	FormatSentencePiece
	// FormatTiktoken: a tiktoken tokenizer.model, lines of base64 and
	// rank (ParseTiktoken).
	FormatTiktoken
	// FormatHFTokenizer: a Hugging Face tokenizer.json
	// (ParseHFTokenizer).
	FormatHFTokenizer
)

// String names the format.
func (f TokenizerFormat) String() string {
	switch f {
	case FormatLlama2C:
		return "llama2.c tokenizer.bin"
	case FormatSentencePiece:
		return "SentencePiece model"
	case FormatTiktoken:
		return "tiktoken BPE ranks"
	case FormatHFTokenizer:
		return "Hugging Face tokenizer.json"
	}
	return "unknown tokenizer format"
}

// DetectTokenizer tells a tokenizer file's format from its first bytes: a
// JSON object is a tokenizer.json; a first line of base64, a space and a
// decimal rank is tiktoken's; a first byte 0x0a (the tag of a
// ModelProto's first piece) not followed by three zero bytes is
// SentencePiece's; llama2.c's tokenizer.bin is a little-endian int32 max
// token length (1..65536) followed by records of a finite float32 score,
// an int32 length within the max and that many bytes, and its first
// records must fit that. Anything else is FormatUnknownTokenizer.
func DetectTokenizer(b []byte) TokenizerFormat {
	if len(b) == 0 {
		return FormatUnknownTokenizer
	}
	// A ModelProto's first piece is a non-empty message, so the length
	// after its 0x0a tag is not 0; a tokenizer.bin whose max token length
	// is 10 starts 0a 00 00 00.
	if b[0] == 0x0a && !(len(b) >= 4 && b[1] == 0 && b[2] == 0 && b[3] == 0) {
		return FormatSentencePiece
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) > 1 && trimmed[0] == '{' {
		if rest := bytes.TrimLeft(trimmed[1:], " \t\r\n"); len(rest) > 0 && (rest[0] == '"' || rest[0] == '}') {
			return FormatHFTokenizer
		}
	}
	if isTiktokenLine(b) {
		return FormatTiktoken
	}
	if isLlama2CHeader(b) {
		return FormatLlama2C
	}
	return FormatUnknownTokenizer
}

// isLlama2CHeader reports whether b starts like llama2.c's tokenizer.bin:
// a max token length in 1..maxPiece, then (up to) three records of a
// finite score and a length in 0..max whose bytes are in b.
func isLlama2CHeader(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	maxLen := int64(int32(binary.LittleEndian.Uint32(b)))
	if maxLen <= 0 || maxLen > maxPiece {
		return false
	}
	off := 4
	for range 3 {
		if off == len(b) {
			break
		}
		if len(b)-off < 8 {
			return false
		}
		score := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[off:])))
		n := int64(int32(binary.LittleEndian.Uint32(b[off+4:])))
		if math.IsNaN(score) || math.IsInf(score, 0) || n < 0 || n > maxLen || n > int64(len(b)-off-8) {
			return false
		}
		off += 8 + int(n)
	}
	return true
}

// isTiktokenLine reports whether b starts with a line of base64, one
// space and digits.
func isTiktokenLine(b []byte) bool {
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line = b[:i]
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	tok, rank, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(tok) == 0 || len(rank) == 0 {
		return false
	}
	for _, c := range tok {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	for _, c := range rank {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// The tokenizers of this package.
var (
	_ Tokenizer = (*Llama2CTokenizer)(nil)
	_ Tokenizer = (*SentencePiece)(nil)
	_ Tokenizer = (*Tiktoken)(nil)
	_ Tokenizer = (*HFTokenizer)(nil)
)

// ParseTokenizer reads a tokenizer file of any format this package
// reads, chosen by DetectTokenizer: llama2.c's tokenizer.bin, a
// SentencePiece or a tiktoken tokenizer.model (Llama 3's regex and
// special tokens), or a Hugging Face tokenizer.json. A file of none of
// these formats is an error wrapping ErrUnknownTokenizer (and so
// ErrTokenizer).
func ParseTokenizer(b []byte) (Tokenizer, error) {
	switch f := DetectTokenizer(b); f {
	case FormatSentencePiece:
		return ParseSentencePiece(b)
	case FormatTiktoken:
		return ParseTiktoken(b)
	case FormatHFTokenizer:
		return ParseHFTokenizer(b)
	case FormatLlama2C:
		return ParseLlama2CTokenizer(b)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrUnknownTokenizer)
	}
	return nil, fmt.Errorf("%w: not llama2.c's tokenizer.bin, a SentencePiece or tiktoken tokenizer.model, or a Hugging Face tokenizer.json (%d bytes, starting % x)",
		ErrUnknownTokenizer, len(b), b[:min(len(b), 8)])
}

// LoadTokenizer reads the tokenizer file at path (ParseTokenizer).
func LoadTokenizer(path string) (Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokenizer(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// StopTokens returns the ids that should end a generation with t: its
// StopTokens method's when it has one (Tiktoken, HFTokenizer: EOS and the
// end-of-turn tokens of instruct models, such as Llama 3's <|eot_id|>),
// else its EOS alone, or none when EOS is -1.
func StopTokens(t Tokenizer) []int32 {
	if s, ok := t.(interface{ StopTokens() []int32 }); ok {
		return s.StopTokens()
	}
	if eos := t.EOS(); eos >= 0 {
		return []int32{eos}
	}
	return nil
}

// SpecialTokenID returns the id of the special token s when t names its
// special tokens (named: Tiktoken, HFTokenizer); ok says whether s is
// one of them.
func SpecialTokenID(t Tokenizer, s string) (id int32, ok, named bool) {
	sp, named := t.(interface{ SpecialTokenID(string) (int32, bool) })
	if !named {
		return -1, false, false
	}
	id, ok = sp.SpecialTokenID(s)
	return id, ok, true
}

// TokenID maps a text, such as one of a chat template's stop texts
// (chat.Template.Stops), to one token id of t: the special token's id,
// else the one id the text encodes to. It reports false for a text that
// is neither (one that encodes to several tokens).
func TokenID(t Tokenizer, s string) (int32, bool) {
	if id, ok, _ := SpecialTokenID(t, s); ok {
		return id, true
	}
	if e, err := t.Encode(s, false); err == nil && len(e) == 1 {
		return e[0], true
	}
	return -1, false
}

// IsBOSText reports whether s, a chat template's bos_token text, stands
// for t's BOS token: t has a BOS, and s is the special token with that id
// (or t names no special tokens, so the text is taken at its word). A
// prompt rendered with s in front is then encoded without s and with t's
// BOS id, as the model was trained.
func IsBOSText(t Tokenizer, s string) bool {
	if s == "" || t.BOS() < 0 {
		return false
	}
	id, ok, named := SpecialTokenID(t, s)
	return !named || ok && id == t.BOS()
}

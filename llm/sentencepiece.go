package llm

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/eliben/go-sentencepiece"
	"google.golang.org/protobuf/encoding/protowire"
)

// SentencePiece is a SentencePiece BPE tokenizer.model (what Llama 2
// exports ship), encoded and decoded by github.com/eliben/go-sentencepiece.
// That library takes no normalizer options, so the model's
// add_dummy_prefix (a space before the text, Llama 2's setting) and
// remove_extra_whitespaces (trim, and collapse runs of spaces) are applied
// here before it encodes.
type SentencePiece struct {
	p           *sentencepiece.Processor
	bos, eos    int32
	n           int
	dummyPrefix bool
	trimSpaces  bool
	// kind and piece per id: for decoding one token at a time.
	kind  []int32
	bytes []int16 // the byte of a BYTE piece, -1 otherwise
}

// SentencePiece piece types (sentencepiece_model.proto).
const (
	spNormal  = 1
	spControl = 3
	spByte    = 6
)

// LoadSentencePiece reads a tokenizer.model file.
func LoadSentencePiece(path string) (*SentencePiece, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseSentencePiece(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseSentencePiece reads a serialized SentencePiece ModelProto. Only BPE
// models load (not unigram ones); errors wrap ErrTokenizer.
func ParseSentencePiece(b []byte) (t *SentencePiece, err error) {
	t = &SentencePiece{dummyPrefix: true, trimSpaces: true, bos: 1, eos: 2}
	rewritten, err := t.scan(b)
	if err != nil {
		return nil, err
	}
	defer func() {
		// The library dereferences optional fields; a proto it does not
		// expect must not crash the caller.
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w: sentencepiece: %v", ErrTokenizer, r)
		}
	}()
	p, err := sentencepiece.NewProcessor(bytes.NewReader(rewritten))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenizer, err)
	}
	info := p.ModelInfo()
	t.p, t.n = p, info.VocabularySize
	// The library looks for Gemma's <bos> and <eos> pieces; Llama's are
	// the trainer spec's bos_id and eos_id (<s> and </s>).
	if info.BeginningOfSentenceID >= 0 {
		t.bos = int32(info.BeginningOfSentenceID)
	}
	if info.EndOfSentenceID >= 0 {
		t.eos = int32(info.EndOfSentenceID)
	}
	if t.n != len(t.kind) {
		return nil, fmt.Errorf("%w: %d pieces read, the library has %d", ErrTokenizer, len(t.kind), t.n)
	}
	for _, id := range []*int32{&t.bos, &t.eos} {
		if *id >= int32(t.n) || (*id >= 0 && t.kind[*id] != spControl) {
			*id = -1 // not a control piece of this model
		}
	}
	return t, nil
}

// scan reads the pieces' types and the normalizer options, and returns
// the model with add_dummy_prefix and remove_extra_whitespaces set to
// false (the library applies neither; Encode does).
func (t *SentencePiece) scan(b []byte) ([]byte, error) {
	var out []byte
	sawNorm := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: bad protobuf tag: %v", ErrTokenizer, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, fmt.Errorf("%w: bad protobuf field %d: %v", ErrTokenizer, num, protowire.ParseError(m))
		}
		field, val := b[:n+m], b[n:n+m]
		b = b[n+m:]
		switch {
		case num == 2 && typ == protowire.BytesType: // trainer_spec
			msg, _ := protowire.ConsumeBytes(val)
			t.trainer(msg)
		case num == 1 && typ == protowire.BytesType: // pieces
			msg, _ := protowire.ConsumeBytes(val)
			if err := t.piece(msg); err != nil {
				return nil, err
			}
		case num == 3 && typ == protowire.BytesType: // normalizer_spec
			msg, _ := protowire.ConsumeBytes(val)
			spec, err := t.normalizer(msg)
			if err != nil {
				return nil, err
			}
			sawNorm = true
			out = protowire.AppendTag(out, 3, protowire.BytesType)
			out = protowire.AppendBytes(out, spec)
			continue
		}
		out = append(out, field...)
	}
	if !sawNorm {
		spec, _ := t.normalizer(nil)
		out = protowire.AppendTag(out, 3, protowire.BytesType)
		out = protowire.AppendBytes(out, spec)
	}
	return out, nil
}

// trainer reads a TrainerSpec's bos_id and eos_id (1 and 2 by default).
func (t *SentencePiece) trainer(msg []byte) {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return
		}
		if (num == 41 || num == 42) && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(msg[n:])
			if num == 41 {
				t.bos = int32(v)
			} else {
				t.eos = int32(v)
			}
		}
		msg = msg[n+m:]
	}
}

// piece records one SentencePiece message's type and byte value.
func (t *SentencePiece) piece(msg []byte) error {
	kind, text := int32(spNormal), ""
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("%w: bad piece %d", ErrTokenizer, len(t.kind))
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return fmt.Errorf("%w: bad piece %d", ErrTokenizer, len(t.kind))
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(msg[n:])
			text = string(v)
		case num == 3 && typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(msg[n:])
			kind = int32(v)
		}
		msg = msg[n+m:]
	}
	by := int16(-1)
	if kind == spByte && len(text) == 6 && strings.HasPrefix(text, "<0x") && text[5] == '>' {
		if v, err := strconv.ParseUint(text[3:5], 16, 8); err == nil {
			by = int16(v)
		}
	}
	t.kind = append(t.kind, kind)
	t.bytes = append(t.bytes, by)
	return nil
}

// normalizer reads a NormalizerSpec's add_dummy_prefix and
// remove_extra_whitespaces (both true by default) and returns the spec
// with both set to false.
func (t *SentencePiece) normalizer(msg []byte) ([]byte, error) {
	var out []byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, fmt.Errorf("%w: bad normalizer spec", ErrTokenizer)
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return nil, fmt.Errorf("%w: bad normalizer spec", ErrTokenizer)
		}
		if (num == 3 || num == 4) && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(msg[n:])
			if num == 3 {
				t.dummyPrefix = v != 0
			} else {
				t.trimSpaces = v != 0
			}
		} else {
			out = append(out, msg[:n+m]...)
		}
		msg = msg[n+m:]
	}
	for _, num := range []protowire.Number{3, 4} {
		out = protowire.AppendTag(out, num, protowire.VarintType)
		out = protowire.AppendVarint(out, 0)
	}
	return out, nil
}

// BOS returns the <s> id (-1 when the model has none).
func (t *SentencePiece) BOS() int32 { return t.bos }

// EOS returns the </s> id (-1 when the model has none).
func (t *SentencePiece) EOS() int32 { return t.eos }

// VocabSize returns the number of pieces.
func (t *SentencePiece) VocabSize() int { return t.n }

// Encode tokenizes text, after the model's normalizer options, and puts
// BOS first when bos is set (and the model has one). go-sentencepiece
// v0.6.0 panics when two adjacent symbols are together longer than the
// model's longest piece; that comes back as an error wrapping
// ErrTokenizer.
func (t *SentencePiece) Encode(text string, bos bool) (ids []int32, err error) {
	defer func() {
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("%w: go-sentencepiece failed on %q: %v", ErrTokenizer, text, r)
		}
	}()
	if t.trimSpaces {
		text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r == ' ' }), " ")
	}
	if t.dummyPrefix && text != "" {
		text = " " + text
	}
	if bos && t.bos >= 0 {
		ids = append(ids, t.bos)
	}
	for _, tok := range t.p.Encode(text) {
		ids = append(ids, int32(tok.ID))
	}
	return ids, nil
}

// Decode returns token's text: a byte piece as its byte (so that a
// character split over byte pieces comes out whole once they are all
// printed), a control piece as "", "▁" as a space, without the dummy
// prefix's space at the start of a sequence (prev BOS or -1).
func (t *SentencePiece) Decode(prev, token int32) string {
	if token < 0 || int(token) >= t.n {
		return ""
	}
	if b := t.bytes[token]; b >= 0 {
		return string([]byte{byte(b)})
	}
	if t.kind[token] == spControl {
		return ""
	}
	s := t.p.Decode([]int{int(token)})
	if t.dummyPrefix && (prev < 0 || prev == t.bos) {
		s = strings.TrimPrefix(s, " ")
	}
	return s
}

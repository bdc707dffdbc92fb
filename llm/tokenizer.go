package llm

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
)

// Tokenizer turns text into token ids and ids back into text.
type Tokenizer interface {
	// Encode returns the ids of text, after the BOS id when bos is set.
	Encode(text string, bos bool) ([]int32, error)
	// Decode returns the text of token following prev (-1 at the start):
	// some tokenizers print a token differently after BOS.
	Decode(prev, token int32) string
	// BOS and EOS are the begin- and end-of-sequence ids.
	BOS() int32
	EOS() int32
	// VocabSize is the number of ids.
	VocabSize() int
}

// Llama2CTokenizer is llama2.c's tokenizer.bin: a vocabulary of pieces
// with merge scores. Ids 0, 1, 2 are <unk>, BOS and EOS, and ids 3..258
// the byte-fallback pieces <0x00>..<0xFF>, as in Llama 2's vocabulary.
type Llama2CTokenizer struct {
	pieces [][]byte
	scores []float32
	ids    map[string]int32
	maxLen int
}

// LoadLlama2CTokenizer reads a tokenizer.bin file.
func LoadLlama2CTokenizer(path string) (*Llama2CTokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseLlama2CTokenizer(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// maxPiece caps the length of one piece ParseLlama2CTokenizer accepts.
const maxPiece = 1 << 16

// ParseLlama2CTokenizer reads tokenizer.bin bytes: an int32 max token
// length, then for every token a float32 score, an int32 length and the
// piece's bytes, until the end of the data. A malformed file is an error
// wrapping ErrTokenizer.
func ParseLlama2CTokenizer(b []byte) (*Llama2CTokenizer, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, no header", ErrTokenizer, len(b))
	}
	t := &Llama2CTokenizer{ids: map[string]int32{}, maxLen: int(int32(binary.LittleEndian.Uint32(b)))}
	if t.maxLen <= 0 || t.maxLen > maxPiece {
		return nil, fmt.Errorf("%w: max token length %d", ErrTokenizer, t.maxLen)
	}
	for off := 4; off < len(b); {
		if len(b)-off < 8 {
			return nil, fmt.Errorf("%w: token %d: truncated at byte %d", ErrTokenizer, len(t.pieces), off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
		n := int(int32(binary.LittleEndian.Uint32(b[off+4:])))
		off += 8
		if n < 0 || n > t.maxLen || n > len(b)-off {
			return nil, fmt.Errorf("%w: token %d: length %d (max %d, %d bytes left)", ErrTokenizer, len(t.pieces), n, t.maxLen, len(b)-off)
		}
		p := b[off : off+n : off+n]
		off += n
		if _, dup := t.ids[string(p)]; !dup {
			t.ids[string(p)] = int32(len(t.pieces))
		}
		t.pieces = append(t.pieces, p)
		t.scores = append(t.scores, score)
		if len(t.pieces) > math.MaxInt32 {
			return nil, fmt.Errorf("%w: too many tokens", ErrTokenizer)
		}
	}
	if len(t.pieces) < 3 {
		return nil, fmt.Errorf("%w: %d tokens, want at least <unk>, BOS and EOS", ErrTokenizer, len(t.pieces))
	}
	return t, nil
}

// BOS returns 1.
func (t *Llama2CTokenizer) BOS() int32 { return 1 }

// EOS returns 2.
func (t *Llama2CTokenizer) EOS() int32 { return 2 }

// VocabSize returns the number of pieces.
func (t *Llama2CTokenizer) VocabSize() int { return len(t.pieces) }

// Encode tokenizes text as run.c does: a " " piece first (the dummy
// prefix) when text is not empty, each UTF-8 character as its piece or,
// when it has none, as byte-fallback ids (byte + 3), then repeatedly the
// adjacent pair whose concatenation is a piece with the highest score
// (the first of equals) is merged. Text needing a byte fallback a
// vocabulary of fewer than 259 pieces lacks is an error wrapping
// ErrTokenizer.
func (t *Llama2CTokenizer) Encode(text string, bos bool) ([]int32, error) {
	var ids []int32
	if bos {
		ids = append(ids, t.BOS())
	}
	if text == "" {
		return ids, nil
	}
	var toks []int32
	if id, ok := t.ids[" "]; ok {
		toks = append(toks, id)
	}
	for i := 0; i < len(text); {
		// One UTF-8 character: a lead byte and its continuation bytes
		// (at most 4 bytes in all, as run.c groups them).
		j := i + 1
		for j < len(text) && text[j]&0xC0 == 0x80 && j-i < 4 {
			j++
		}
		if id, ok := t.ids[text[i:j]]; ok {
			toks = append(toks, id)
		} else {
			for k := i; k < j; k++ {
				id := int32(text[k]) + 3
				if int(id) >= len(t.pieces) {
					return nil, fmt.Errorf("%w: byte 0x%02x of %q has no piece and no byte fallback", ErrTokenizer, text[k], text)
				}
				toks = append(toks, id)
			}
		}
		i = j
	}
	buf := make([]byte, 0, 2*t.maxLen)
	for {
		best, bestID, bestScore := -1, int32(0), float32(-1e10) // run.c's floor
		for i := 0; i+1 < len(toks); i++ {
			buf = append(append(buf[:0], t.pieces[toks[i]]...), t.pieces[toks[i+1]]...)
			if id, ok := t.ids[string(buf)]; ok && t.scores[id] > bestScore {
				best, bestID, bestScore = i, id, t.scores[id]
			}
		}
		if best < 0 {
			break
		}
		toks[best] = bestID
		toks = append(toks[:best+1], toks[best+2:]...)
	}
	return append(ids, toks...), nil
}

// Decode returns token's piece: without its leading space right after
// BOS, and a byte-fallback piece <0xHH> as that byte. An id outside the
// vocabulary decodes to "".
func (t *Llama2CTokenizer) Decode(prev, token int32) string {
	if token < 0 || int(token) >= len(t.pieces) {
		return ""
	}
	p := t.pieces[token]
	if prev == t.BOS() && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	if len(p) == 6 && string(p[:3]) == "<0x" && p[5] == '>' {
		if v, err := strconv.ParseUint(string(p[3:5]), 16, 8); err == nil {
			return string([]byte{byte(v)})
		}
	}
	return string(p)
}

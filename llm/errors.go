package llm

import (
	"errors"
	"fmt"

	"github.com/wgdelegate/wgdelegate"
)

// Errors the runner wraps; test for them with errors.Is.
var (
	// ErrNotDecoder: the model does not have a Llama-style decoder's
	// calling convention (a *NotDecoderError says why).
	ErrNotDecoder = errors.New("llm: not a Llama-style decoder")
	// ErrPromptTooLong: the prompt does not fit in the KV cache from the
	// current position (a *CacheError).
	ErrPromptTooLong = errors.New("llm: prompt longer than the cache")
	// ErrPositionPastEnd: a step would write past the last position of
	// the KV cache (a *CacheError).
	ErrPositionPastEnd = errors.New("llm: position past the end of the cache")
	// ErrTokenRange: a token id is outside the vocabulary (a
	// *TokenError).
	ErrTokenRange = errors.New("llm: token id outside the vocabulary")
	// ErrOption: a bad Generate option, such as a negative temperature
	// or a top-p outside (0, 1].
	ErrOption = errors.New("llm: bad option")
	// ErrTokenizer: a tokenizer file that cannot be read, or text it
	// cannot encode.
	ErrTokenizer = errors.New("llm: bad tokenizer")
	// ErrUnknownTokenizer: a tokenizer file in none of the formats
	// DetectTokenizer knows; it also matches ErrTokenizer.
	ErrUnknownTokenizer = fmt.Errorf("%w: format not recognised", ErrTokenizer)
	// ErrCacheOwned: New on a model whose KV cache another Runner holds
	// (until that runner's Close); the error is a
	// *wgdelegate.StateClaimedError. It is wgdelegate.ErrStateClaimed,
	// the very value.
	ErrCacheOwned = wgdelegate.ErrStateClaimed
)

// NotDecoderError says why a model is not a Llama-style decoder.
type NotDecoderError struct {
	Reason string
}

func (e *NotDecoderError) Error() string { return "llm: not a Llama-style decoder: " + e.Reason }

// Unwrap returns ErrNotDecoder.
func (e *NotDecoderError) Unwrap() error { return ErrNotDecoder }

// CacheError is a request that does not fit in the KV cache: Tokens tokens
// at position Pos with MaxSeqLen positions in all. Err is
// ErrPromptTooLong or ErrPositionPastEnd.
type CacheError struct {
	Pos, Tokens, MaxSeqLen int64
	Err                    error
}

func (e *CacheError) Error() string {
	if e.Err == ErrPromptTooLong {
		return fmt.Sprintf("%v: %d tokens at position %d, the cache holds %d positions", e.Err, e.Tokens, e.Pos, e.MaxSeqLen)
	}
	return fmt.Sprintf("%v: position %d, the cache holds %d positions", e.Err, e.Pos, e.MaxSeqLen)
}

// Unwrap returns Err.
func (e *CacheError) Unwrap() error { return e.Err }

// TokenError is a token id outside the vocabulary of Vocab tokens.
type TokenError struct {
	Token int32
	Vocab int64
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("%v: token %d, vocabulary of %d", ErrTokenRange, e.Token, e.Vocab)
}

// Unwrap returns ErrTokenRange.
func (e *TokenError) Unwrap() error { return ErrTokenRange }

// UnsupportedError is a tokenizer file that is well formed but uses a
// feature this package does not implement exactly (a WordPiece or Unigram
// model, a Metaspace pre-tokenizer, a regex construct with no RE2
// equivalent, ...). It wraps ErrTokenizer.
type UnsupportedError struct {
	// Feature names what is not supported, as the file spells it.
	Feature string
}

func (e *UnsupportedError) Error() string {
	return "llm: unsupported tokenizer: " + e.Feature
}

// Unwrap returns ErrTokenizer.
func (e *UnsupportedError) Unwrap() error { return ErrTokenizer }

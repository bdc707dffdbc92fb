package server

import "github.com/wgdelegate/wgdelegate/llm"

// specialTokens is a tokenizer that names its special tokens (Tiktoken,
// HFTokenizer).
type specialTokens interface {
	SpecialTokenID(string) (int32, bool)
}

// specialID returns the id of the special token s, when tok names its
// special tokens (named).
func specialID(tok llm.Tokenizer, s string) (id int32, ok, named bool) {
	sp, named := tok.(specialTokens)
	if !named {
		return -1, false, false
	}
	id, ok = sp.SpecialTokenID(s)
	return id, ok, true
}

// tokenID maps a template's stop text to one token id: a special
// token's, else the one id the text encodes to.
func tokenID(tok llm.Tokenizer, s string) (int32, bool) {
	if id, ok, _ := specialID(tok, s); ok {
		return id, true
	}
	if e, err := tok.Encode(s, false); err == nil && len(e) == 1 {
		return e[0], true
	}
	return -1, false
}

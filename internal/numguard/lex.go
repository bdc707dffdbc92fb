package numguard

import (
	"fmt"
	"strings"
)

// tokKind is the class of a token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tPunct
)

// token is one lexeme; pos is its byte offset in the source.
type token struct {
	kind tokKind
	text string
	pos  int
}

// puncts are WGSL's operators and separators, longest first so that the
// lexer takes ">>=" before ">>" before ">".
var puncts = []string{
	">>=", "<<=",
	"->", "++", "--", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"(", ")", "{", "}", "[", "]", "<", ">", ",", ";", ":", ".", "=",
	"+", "-", "*", "/", "%", "&", "|", "^", "!", "~", "@", "_",
}

// lex splits src into tokens, dropping whitespace and comments (line and
// nested block comments, as WGSL has them).
func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			depth := 0
			for i < len(src) {
				if strings.HasPrefix(src[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(src[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			if depth != 0 {
				return nil, fmt.Errorf("offset %d: unterminated block comment", i)
			}
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			kind := tIdent
			if src[i:j] == "_" {
				kind = tPunct
			}
			out = append(out, token{kind, src[i:j], i})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := lexNumber(src, i)
			out = append(out, token{tNum, src[i:j], i})
			i = j
		default:
			p := ""
			for _, q := range puncts {
				if strings.HasPrefix(src[i:], q) {
					p = q
					break
				}
			}
			if p == "" {
				return nil, fmt.Errorf("offset %d: unexpected character %q", i, c)
			}
			out = append(out, token{tPunct, p, i})
			i += len(p)
		}
	}
	return append(out, token{tEOF, "", len(src)}), nil
}

// lexNumber returns the end of the numeric literal at i: decimal or hex,
// integer or float, with an exponent and an i/u/f/h suffix.
func lexNumber(src string, i int) int {
	j := i
	if strings.HasPrefix(src[j:], "0x") || strings.HasPrefix(src[j:], "0X") {
		j += 2
		for j < len(src) && (isHex(src[j]) || src[j] == '.') {
			j++
		}
		if j < len(src) && (src[j] == 'p' || src[j] == 'P') {
			j++
			if j < len(src) && (src[j] == '+' || src[j] == '-') {
				j++
			}
			for j < len(src) && isDigit(src[j]) {
				j++
			}
		}
	} else {
		for j < len(src) && (isDigit(src[j]) || src[j] == '.') {
			j++
		}
		if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
			j++
			if j < len(src) && (src[j] == '+' || src[j] == '-') {
				j++
			}
			for j < len(src) && isDigit(src[j]) {
				j++
			}
		}
	}
	if j < len(src) && strings.IndexByte("iufh", src[j]) >= 0 {
		j++
	}
	return j
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isHex(c byte) bool        { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

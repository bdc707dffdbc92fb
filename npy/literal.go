package npy

import (
	"fmt"
	"math"
	"strings"
)

// The header is a Python literal that NumPy reads with ast.literal_eval. This
// file parses the subset that can appear in one: dicts, tuples, lists,
// strings, ints (with the Python 2 'L' suffix), True, False and None. Floats
// and anything else are errors; nesting is capped so a hostile header cannot
// recurse deeply.

// maxLiteralDepth caps nesting in the header literal. A real header nests 2
// deep (the dict and the shape tuple); structured dtypes a few more.
const maxLiteralDepth = 16

// pyKind tags a parsed literal.
type pyKind int

const (
	pyStr pyKind = iota
	pyInt
	pyBool
	pyNone
	pyTuple
	pyList
	pyDict
)

func (k pyKind) String() string {
	return [...]string{"str", "int", "bool", "None", "tuple", "list", "dict"}[k]
}

// pyValue is a parsed literal. Dict entries keep their order; keys are strings.
type pyValue struct {
	kind  pyKind
	str   string
	num   int64
	bool  bool
	items []pyValue // tuple, list; dict values
	keys  []string  // dict keys, parallel to items
}

// literalParser parses one literal from src. pos is the byte offset within
// src; base is src's offset in the file, for error messages.
type literalParser struct {
	src  string
	pos  int
	base int64
}

func (p *literalParser) errorf(format string, args ...any) error {
	return formatErr(p.base+int64(p.pos), ErrBadHeader, "header: "+format, args...)
}

func (p *literalParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *literalParser) peek() byte {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *literalParser) expect(c byte) error {
	if got := p.peek(); got != c {
		if got == 0 {
			return p.errorf("expected %q, found end of header", c)
		}
		return p.errorf("expected %q, found %q", c, got)
	}
	p.pos++
	return nil
}

// parseHeaderLiteral parses src as exactly one literal followed only by
// whitespace.
func parseHeaderLiteral(src string, base int64) (pyValue, error) {
	p := &literalParser{src: src, base: base}
	v, err := p.value(0)
	if err != nil {
		return pyValue{}, err
	}
	if c := p.peek(); c != 0 {
		return pyValue{}, p.errorf("unexpected %q after the header dict", c)
	}
	return v, nil
}

func (p *literalParser) value(depth int) (pyValue, error) {
	if depth > maxLiteralDepth {
		return pyValue{}, p.errorf("nested deeper than %d", maxLiteralDepth)
	}
	switch c := p.peek(); {
	case c == 0:
		return pyValue{}, p.errorf("unexpected end of header")
	case c == '{':
		return p.dict(depth)
	case c == '(':
		return p.sequence(depth, '(', ')', pyTuple)
	case c == '[':
		return p.sequence(depth, '[', ']', pyList)
	case c == '\'' || c == '"':
		s, err := p.string()
		return pyValue{kind: pyStr, str: s}, err
	case c == '-' || c == '+' || isDigit(c):
		return p.int()
	case isIdentStart(c):
		start := p.pos
		for p.pos < len(p.src) && isIdentPart(p.src[p.pos]) {
			p.pos++
		}
		switch w := p.src[start:p.pos]; w {
		case "True":
			return pyValue{kind: pyBool, bool: true}, nil
		case "False":
			return pyValue{kind: pyBool}, nil
		case "None":
			return pyValue{kind: pyNone}, nil
		default:
			p.pos = start
			return pyValue{}, p.errorf("unexpected name %q", w)
		}
	default:
		return pyValue{}, p.errorf("unexpected %q", c)
	}
}

func (p *literalParser) dict(depth int) (pyValue, error) {
	v := pyValue{kind: pyDict}
	if err := p.expect('{'); err != nil {
		return v, err
	}
	for {
		if p.peek() == '}' {
			p.pos++
			return v, nil
		}
		kpos := p.pos
		if c := p.peek(); c != '\'' && c != '"' {
			return v, p.errorf("dict key must be a string")
		}
		k, err := p.string()
		if err != nil {
			return v, err
		}
		for _, have := range v.keys {
			if have == k {
				p.pos = kpos
				return v, p.errorf("duplicate key %q", k)
			}
		}
		if err := p.expect(':'); err != nil {
			return v, err
		}
		item, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.keys = append(v.keys, k)
		v.items = append(v.items, item)
		if p.peek() == ',' {
			p.pos++
			continue
		}
		if err := p.expect('}'); err != nil {
			return v, err
		}
		return v, nil
	}
}

// sequence parses a tuple or list. As in Python, "(x)" is x itself, not a
// one-element tuple; "(x,)" is the tuple.
func (p *literalParser) sequence(depth int, open, close byte, kind pyKind) (pyValue, error) {
	v := pyValue{kind: kind}
	if err := p.expect(open); err != nil {
		return v, err
	}
	sawComma := false
	for {
		if p.peek() == close {
			p.pos++
			if kind == pyTuple && len(v.items) == 1 && !sawComma {
				return v.items[0], nil
			}
			return v, nil
		}
		item, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		if p.peek() == ',' {
			p.pos++
			sawComma = true
			continue
		}
		if err := p.expect(close); err != nil {
			return v, err
		}
		if kind == pyTuple && len(v.items) == 1 && !sawComma {
			return v.items[0], nil
		}
		return v, nil
	}
}

// string parses a quoted string with the escapes repr() produces for the
// ASCII names and descrs that appear in headers.
func (p *literalParser) string() (string, error) {
	q := p.src[p.pos]
	start := p.pos
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == q:
			p.pos++
			return b.String(), nil
		case c == '\n':
			p.pos = start
			return "", p.errorf("unterminated string")
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				p.pos = start
				return "", p.errorf("unterminated string")
			}
			e := p.src[p.pos+1]
			switch e {
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return "", p.errorf("unsupported escape \\%c in string", e)
			}
			p.pos += 2
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	p.pos = start
	return "", p.errorf("unterminated string")
}

// int parses a decimal integer with an optional sign and Python 2 'L'
// suffix, rejecting anything that does not fit an int64.
func (p *literalParser) int() (pyValue, error) {
	start := p.pos
	neg := false
	if c := p.src[p.pos]; c == '-' || c == '+' {
		neg = c == '-'
		p.pos++
	}
	if p.pos >= len(p.src) || !isDigit(p.src[p.pos]) {
		p.pos = start
		return pyValue{}, p.errorf("malformed number")
	}
	var n uint64
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		d := uint64(p.src[p.pos] - '0')
		if n > (math.MaxInt64-d)/10 {
			p.pos = start
			return pyValue{}, p.errorf("integer out of range")
		}
		n = n*10 + d
		p.pos++
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'L' || p.src[p.pos] == 'l') {
		p.pos++
	}
	if p.pos < len(p.src) && (isIdentPart(p.src[p.pos]) || p.src[p.pos] == '.') {
		p.pos = start
		return pyValue{}, p.errorf("malformed number")
	}
	v := int64(n)
	if neg {
		v = -v
	}
	return pyValue{kind: pyInt, num: v}, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// describe names a literal's kind for error messages.
func (v pyValue) describe() string {
	switch v.kind {
	case pyStr:
		return fmt.Sprintf("str %q", v.str)
	case pyInt:
		return fmt.Sprintf("int %d", v.num)
	case pyBool:
		if v.bool {
			return "True"
		}
		return "False"
	}
	return v.kind.String()
}

package chat

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// trim is Jinja's trim filter as Python runs it: str(value).strip(chars),
// where the whitespace stripped without chars is Python's str.isspace
// (the library's trims Go's, which leaves 0x1C..0x1F).
func trim(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("trim: no value")
	}
	chars, ok := kwargs["chars"]
	if len(args) > 1 {
		chars, ok = args[1], true
	}
	s := pyStr(args[0])
	if ok && !chars.IsNone() && !chars.IsUndefined() {
		return jinja.NewString(strings.Trim(s, pyStr(chars))), nil
	}
	return jinja.NewString(strings.TrimFunc(s, isPythonSpace)), nil
}

// stringFilter is Jinja's string filter: Python's str(value).
func stringFilter(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("string: no value")
	}
	return jinja.NewString(pyStr(args[0])), nil
}

// isPythonSpace is Python's str.isspace for one character: Go's
// unicode.IsSpace and the four ASCII information separators 0x1C..0x1F.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || 0x1c <= r && r <= 0x1f
}

// pyStr is Python's str() of a template value: a string as it is, the
// rest as pyRepr writes them (None, True, 1.0, ['a'], {'k': 1}); an
// undefined value is empty, as Jinja prints it.
func pyStr(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsUndefined():
		return ""
	}
	return pyRepr(v)
}

// pyRepr is Python's repr() of a template value.
func pyRepr(v jinja.Value) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v jinja.Value, depth int) {
	if depth > maxJSONDepth {
		b.WriteString("...")
		return
	}
	switch {
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloatRepr(v.AsFloat()))
	case v.IsString():
		writeStrRepr(b, v.AsString())
	case v.IsList():
		b.WriteByte('[')
		for i, it := range v.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it, depth+1)
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.OrderedKeys() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeStrRepr(b, k)
			b.WriteString(": ")
			e, _ := d.Get(k)
			writeRepr(b, e, depth+1)
		}
		b.WriteByte('}')
	case v.IsUndefined():
		b.WriteString("Undefined")
	default:
		b.WriteString(v.String())
	}
}

// writeStrRepr writes Python's repr of a string: single quotes, or double
// quotes when it holds a single quote and no double quote; backslash, the
// quote, \t, \n, \r escaped, other characters that are not printable
// (control, format, separator other than space, private use, unassigned)
// as \xhh, \uhhhh or \Uhhhhhhhh.
func writeStrRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			// Not UTF-8: Python strings cannot hold it; show the byte.
			fmt.Fprintf(b, `\x%02x`, s[i])
			i++
			continue
		}
		switch {
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case isPrintable(r):
			b.WriteString(s[i : i+n])
		case r <= 0xff:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		i += n
	}
	b.WriteByte(q)
}

// isPrintable is Python's str.isprintable for one character: not in the
// categories Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs, but for the space.
func isPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs, unicode.Co, unicode.Zl, unicode.Zp, unicode.Zs) {
		return false
	}
	// Cn, unassigned: in no category.
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

package chat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// tojson is the template's tojson filter as transformers defines it:
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys). It replaces the library's own, which sorts keys and
// escapes <, > and & when indenting. The arguments may be given by
// position or name, in that order after the value.
func tojson(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	opt := map[string]jinja.Value{}
	for i, a := range args[1:] {
		if i >= len(names) {
			return jinja.Undefined(), fmt.Errorf("tojson: %d arguments, at most %d", len(args)-1, len(names))
		}
		opt[names[i]] = a
	}
	for k, v := range kwargs {
		if !slices.Contains(names, k) {
			return jinja.Undefined(), fmt.Errorf("tojson: unexpected argument %q", k)
		}
		if _, dup := opt[k]; dup {
			return jinja.Undefined(), fmt.Errorf("tojson: argument %q given twice", k)
		}
		opt[k] = v
	}
	e := jsonEncoder{item: ", ", key: ": "}
	if v, ok := opt["ensure_ascii"]; ok {
		e.ascii = v.IsTruthy()
	}
	if v, ok := opt["sort_keys"]; ok {
		e.sortKeys = v.IsTruthy()
	}
	if v, ok := opt["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			e.indent = strings.Repeat(" ", int(max(0, min(v.AsInt(), 64))))
		case v.IsString():
			e.indent = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent %s is neither an integer nor a string", v)
		}
		e.indented = true
		e.item = ","
	}
	if v, ok := opt["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators %s is not a pair of strings", v)
		}
		e.item, e.key = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	var b strings.Builder
	if err := e.encode(&b, args[0], 0); err != nil {
		return jinja.Undefined(), fmt.Errorf("tojson: %w", err)
	}
	return jinja.NewString(b.String()), nil
}

// jsonEncoder writes values as Python's json.dumps does.
type jsonEncoder struct {
	item, key string // separators
	indent    string
	indented  bool // indent given (even "" or 0: then newlines alone)
	ascii     bool // ensure_ascii
	sortKeys  bool
}

func (e *jsonEncoder) newline(b *strings.Builder, level int) {
	if !e.indented {
		return
	}
	b.WriteByte('\n')
	for range level {
		b.WriteString(e.indent)
	}
}

func (e *jsonEncoder) encode(b *strings.Builder, v jinja.Value, level int) error {
	if level > maxJSONDepth {
		return fmt.Errorf("value nested more than %d deep", maxJSONDepth)
	}
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(map[bool]string{true: "true", false: "false"}[v.AsBool()])
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloatJSON(v.AsFloat()))
	case v.IsString():
		e.str(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(e.item)
			}
			e.newline(b, level+1)
			if err := e.encode(b, it, level+1); err != nil {
				return err
			}
		}
		e.newline(b, level)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := d.OrderedKeys()
		if e.sortKeys {
			slices.Sort(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(e.item)
			}
			e.newline(b, level+1)
			e.str(b, k)
			b.WriteString(e.key)
			val, _ := d.Get(k)
			if err := e.encode(b, val, level+1); err != nil {
				return err
			}
		}
		e.newline(b, level)
		b.WriteByte('}')
	case v.IsUndefined():
		return errors.New("an undefined value is not JSON serializable")
	default:
		return fmt.Errorf("%s is not JSON serializable", v)
	}
	return nil
}

// str writes s as a JSON string: Python escapes ", \ and the control
// characters below 0x20 (\n, \r, \t, \b, \f by name, others as \u00XX),
// and with ensure_ascii every non-ASCII character as \uXXXX (surrogate
// pairs above U+FFFF).
func (e *jsonEncoder) str(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if c < 0x20 {
					fmt.Fprintf(b, `\u%04x`, c)
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !e.ascii:
			b.WriteString(s[i : i+n])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
		i += n
	}
	b.WriteByte('"')
}

// pyFloatJSON is a float as json.dumps writes it: Python's repr, with
// Infinity, -Infinity and NaN for the values JSON lacks.
func pyFloatJSON(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	return pyFloatRepr(f)
}

// pyFloatRepr is Python's repr of a float: the shortest digits that read
// back the same value, in positional notation with at least one decimal
// ("1.0", "0.0001") when the decimal exponent is in [-4, 16), else in
// scientific notation with a signed exponent of at least two digits
// ("1e+16", "1.5e-05").
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	_, exp, _ := strings.Cut(sci, "e")
	x, _ := strconv.Atoi(exp)
	if x < -4 || x >= 16 {
		// Go writes the same mantissa and an exponent of at least two
		// digits, as Python does.
		return sci
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

package chat

import (
	"strings"
)

// filterPrefix is put before the name of each filter this package
// replaces (filters: tojson as transformers defines it, trim and string
// as Python computes them): the library looks its own filters up before the
// template's variables, so a replacement goes in as a variable under a
// name the library does not define.
const filterPrefix = "wgd_"

// rewriteFilters renames, inside the template's {{ }} and {% %} tags, each
// application of a replaced filter ("| tojson", "|tojson(indent=4)") and a
// {% filter tojson %} block to the replacement's name. Text, comments,
// string literals and {% raw %} blocks are left alone. This is the only
// place the template's source is changed; it knows tags, strings and
// comments, nothing of the expressions.
func rewriteFilters(src string) string {
	var b strings.Builder
	b.Grow(len(src) + 16)
	i := 0
	for i < len(src) {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			b.WriteString(src[i:])
			break
		}
		j += i
		b.WriteString(src[i:j])
		switch src[j+1] {
		case '#':
			end := strings.Index(src[j+2:], "#}")
			if end < 0 {
				b.WriteString(src[j:])
				return b.String()
			}
			end += j + 2 + 2
			b.WriteString(src[j:end])
			i = end
		case '{', '%':
			closer := "}}"
			if src[j+1] == '%' {
				closer = "%}"
			}
			body, end := tagBody(src, j+2, closer)
			if end > len(src) {
				// Unclosed: left for the parser to refuse.
				b.WriteString(src[j:])
				return b.String()
			}
			if src[j+1] == '%' && isRawTag(body) {
				// Copy {% raw %} ... {% endraw %} unchanged.
				k := rawEnd(src, end)
				b.WriteString(src[j:k])
				i = k
				continue
			}
			stmt := src[j+1] == '%'
			if stmt && trimTag(body) == "endmacro" {
				// Leave the macro's depth count just before it ends,
				// with the same whitespace control as the endmacro.
				b.WriteString("{%")
				if body != "" && (body[0] == '-' || body[0] == '+') {
					b.WriteByte(body[0])
				}
				b.WriteString(" set " + filterPrefix + "depth = " + filterPrefix + "leave() %}")
			}
			b.WriteString(src[j : j+2])
			body = renameInTag(body, stmt)
			if src[j+1] == '{' {
				body = printAsPython(body)
			}
			b.WriteString(body)
			b.WriteString(src[end-len(closer) : end])
			if stmt && strings.HasPrefix(trimTag(body), "macro ") {
				// Count the macro's depth as it starts: the tag adds no
				// text, and with the macro tag's whitespace control
				// trim_blocks treats what follows it as it would have
				// after the macro tag.
				b.WriteString("{% set " + filterPrefix + "depth = " + filterPrefix + "enter() ")
				if n := len(body); n > 0 && (body[n-1] == '-' || body[n-1] == '+') {
					b.WriteByte(body[n-1])
				}
				b.WriteString("%}")
			}
			i = end
		default:
			b.WriteByte('{')
			i = j + 1
		}
	}
	return b.String()
}

// tagBody returns the text of a tag from start up to its closer (which is
// looked for outside string literals) and the index after the closer; for
// an unclosed tag, the rest of src and len(src)+1.
func tagBody(src string, start int, closer string) (string, int) {
	var quote byte
	for k := start; k < len(src); k++ {
		c := src[k]
		switch {
		case quote != 0:
			if c == '\\' {
				k++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.HasPrefix(src[k:], closer):
			return src[start:k], k + len(closer)
		}
	}
	return src[start:], len(src) + 1
}

// printAsPython wraps the expression of a {{ }} tag's body in the
// replacement string filter, "{{- x }}" becoming "{{- (x)|wgd_string }}":
// Jinja prints a value as Python's str() writes it (None, 1.0, True,
// {'k': 'v'}), the library as Go formats it ("", 1, ...). The whitespace
// control marks stay where they are; an empty body is left alone.
func printAsPython(body string) string {
	lead, trail := "", ""
	if body != "" && (body[0] == '-' || body[0] == '+') {
		lead, body = body[:1], body[1:]
	}
	if n := len(body); n > 0 && (body[n-1] == '-' || body[n-1] == '+') {
		trail, body = body[n-1:], body[:n-1]
	}
	if strings.TrimSpace(body) == "" {
		return lead + body + trail
	}
	return lead + " (" + body + ")|" + filterPrefix + "string " + trail
}

func trimTag(body string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(body), "-+"))
}

func isRawTag(body string) bool { return trimTag(body) == "raw" }

// rawEnd returns the index after the {% endraw %} that closes a raw block
// whose opening tag ends at from (the end of src when there is none).
func rawEnd(src string, from int) int {
	for k := from; k < len(src); {
		j := strings.Index(src[k:], "{%")
		if j < 0 {
			break
		}
		j += k
		body, end := tagBody(src, j+2, "%}")
		if end > len(src) {
			break
		}
		if trimTag(body) == "endraw" {
			return end
		}
		k = j + 2
	}
	return len(src)
}

// renameInTag renames the replaced filters applied in one tag's body:
// after a '|' (outside strings), and in a statement that opens a filter
// block, after the word "filter".
func renameInTag(body string, stmt bool) string {
	var b strings.Builder
	var quote byte
	afterPipe := false
	if stmt {
		t := strings.TrimLeft(body, "-+ \t\r\n")
		if strings.HasPrefix(t, "filter") && len(t) > 6 && isSpace(t[6]) {
			afterPipe = true
			lead := len(body) - len(t) + 6
			b.WriteString(body[:lead])
			body = body[lead:]
		}
	}
	for k := 0; k < len(body); k++ {
		c := body[k]
		switch {
		case quote != 0:
			if c == '\\' && k+1 < len(body) {
				b.WriteByte(c)
				k++
				c = body[k]
			} else if c == quote {
				quote = 0
			}
			b.WriteByte(c)
			continue
		case c == '\'' || c == '"':
			quote = c
			afterPipe = false
		case c == '|':
			afterPipe = true
			b.WriteByte(c)
			continue
		case isSpace(c):
			b.WriteByte(c)
			continue
		case afterPipe && isIdentStart(c):
			n := k
			for n < len(body) && isIdentPart(body[n]) {
				n++
			}
			name := body[k:n]
			if _, ok := filters[name]; ok {
				name = filterPrefix + name
			}
			b.WriteString(name)
			k = n - 1
			afterPipe = false
			continue
		}
		afterPipe = false
		b.WriteByte(c)
	}
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }

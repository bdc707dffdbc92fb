package shaders

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/template"
)

//go:embed *.wgsl *.tmpl
var files embed.FS

// The files of named templates ({{define}}) shared by the kernels, parsed
// with every .wgsl file: common is the pieces several kernels use,
// unaryFormulas the one table of the elementwise unary formulas.
const (
	common        = "common.tmpl"
	unaryFormulas = "unary_formulas.tmpl"
)

// funcs are the template functions the kernels may call.
var funcs = template.FuncMap{"args": args, "fail": fail, "add": add, "sub": sub, "mul": mul, "div": div, "mod": mod}

// add, sub, mul, div and mod are integer arithmetic for the sizes and
// indices a template derives from its data ({{mul .WG (len .Rows)}}).
func add(a, b int) int { return a + b }
func sub(a, b int) int { return a - b }
func mul(a, b int) int { return a * b }
func div(a, b int) int { return a / b }
func mod(a, b int) int { return a % b }

// fail stops a render with an error, for data a template has no text
// for: {{fail "no formula for op %q" .Op}}.
func fail(format string, a ...any) (string, error) {
	return "", fmt.Errorf(format, a...)
}

// args builds a map from alternating keys and values, the data of a shared
// template that takes several values: {{template "tree" (args "Name" "t" ...)}}.
func args(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("args: odd count %d", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("args: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// Binding is the kind of one binding in a kernel's single bind group. The
// GPU seam (internal/gpu) turns it into the device's buffer binding type
// when it creates the bind group layout; its numeric values are part of a
// pipeline's content key, and so of packed-weight cache seeds: do not
// renumber them.
type Binding uint8

// Binding kinds. Every kernel binds its inputs (ReadOnly), then its outputs
// (ReadWrite), then at most one Uniform params block, at bindings 0, 1, 2...
const (
	ReadOnly Binding = iota
	ReadWrite
	Uniform
)

// String returns the short name of b ("ro", "rw" or "u"), as it appears in
// kernel cache keys.
func (b Binding) String() string {
	switch b {
	case ReadOnly:
		return "ro"
	case ReadWrite:
		return "rw"
	case Uniform:
		return "u"
	}
	return "?"
}

// Kernel is a rendered WGSL compute kernel ready for pipeline creation.
type Kernel struct {
	Name   string // file name plus variant, for labels and errors
	Source string
	Entry  string
	Layout []Binding
	// WorkgroupSize is the invocation count of one workgroup, as rendered.
	WorkgroupSize uint32
}

var (
	tmplMu sync.Mutex
	tmpls  = map[string]*template.Template{}
	cache  = map[string]*Kernel{}
)

// Render renders file (a .wgsl template) with data and returns the kernel.
// data must format deterministically with %v (a struct of scalars); the
// rendered kernel is cached by file and data.
func Render(file string, data any, entry string, layout []Binding, wg uint32) (*Kernel, error) {
	key := fmt.Sprintf("%s|%#v|%s|%v|%d", file, data, entry, layout, wg)
	tmplMu.Lock()
	defer tmplMu.Unlock()
	if k, ok := cache[key]; ok {
		return k, nil
	}
	t, ok := tmpls[file]
	if !ok {
		var err error
		if t, err = parse(file); err != nil {
			return nil, err
		}
		tmpls[file] = t
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("shaders: render %s: %w", file, err)
	}
	k := &Kernel{Name: fmt.Sprintf("%s%+v", file, data), Source: buf.String(), Entry: entry,
		Layout: append([]Binding(nil), layout...), WorkgroupSize: wg}
	cache[key] = k
	return k, nil
}

// parse parses file with the shared templates.
func parse(file string) (*template.Template, error) {
	src, err := files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("shaders: %w", err)
	}
	return parseText(file, string(src))
}

// parseText parses body, named name, with the shared templates.
func parseText(name, body string) (*template.Template, error) {
	t := template.New(name).Funcs(funcs).Option("missingkey=error")
	for _, file := range []string{common, unaryFormulas, name} {
		src := []byte(body)
		if file != name {
			var err error
			if src, err = files.ReadFile(file); err != nil {
				return nil, fmt.Errorf("shaders: %w", err)
			}
		}
		// A shared file goes in as its own template so that its text
		// (only definitions) leaves the body alone.
		into := t
		if file != name {
			into = t.New(file)
		}
		if _, err := into.Parse(string(src)); err != nil {
			return nil, fmt.Errorf("shaders: parse %s: %w", file, err)
		}
	}
	return t, nil
}

// RenderText renders body, WGSL template text that may use the shared
// templates (common.tmpl, unary_formulas.tmpl), with data: for tests and
// tools that run a shared helper on its own.
func RenderText(body string, data any) (string, error) {
	t, err := parseText("inline.wgsl", body)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("shaders: render: %w", err)
	}
	return buf.String(), nil
}

// NumericHelperSources renders each of common.tmpl's numerics helper
// templates on its own ("num" for f32 and for vec4<f32>, "num_div",
// "num_round", "num_trig"): the functions in them are the ones the
// numerics guard (internal/numguard) exempts, with exactly these texts.
func NumericHelperSources() ([]string, error) {
	var out []string
	for _, body := range []string{
		`{{template "num" (args "T" "f32")}}`,
		`{{template "num" (args "T" "vec4<f32>")}}`,
		`{{template "num_div"}}`,
		`{{template "num_round"}}`,
		`{{template "num_trig"}}`,
	} {
		src, err := RenderText(body, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}

// Rendered returns every kernel rendered so far in this process (Render's
// cache), sorted by name: what the numerics guard (internal/numguard)
// checks after the conformance cases have built their graphs.
func Rendered() []*Kernel {
	tmplMu.Lock()
	defer tmplMu.Unlock()
	out := make([]*Kernel, 0, len(cache))
	for _, k := range cache {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Layout builds the standard binding layout: nIn read-only storage buffers,
// nOut read-write storage buffers, then a uniform block if params is true.
func Layout(nIn, nOut int, params bool) []Binding {
	l := make([]Binding, 0, nIn+nOut+1)
	for i := 0; i < nIn; i++ {
		l = append(l, ReadOnly)
	}
	for i := 0; i < nOut; i++ {
		l = append(l, ReadWrite)
	}
	if params {
		l = append(l, Uniform)
	}
	return l
}

// Files lists the embedded .wgsl files.
func Files() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".wgsl") {
			out = append(out, e.Name())
		}
	}
	return out
}

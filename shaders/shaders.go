package shaders

import (
	"bytes"
	"embed"
	"fmt"
	"sync"
	"text/template"

	"github.com/wgdelegate/wgdelegate/internal/gpu"
)

//go:embed *.wgsl
var files embed.FS

// Kernel is a rendered WGSL compute kernel ready for pipeline creation.
type Kernel struct {
	Name   string // file name plus variant, for labels and errors
	Source string
	Entry  string
	Layout []gpu.BindingType
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
func Render(file string, data any, entry string, layout []gpu.BindingType, wg uint32) (*Kernel, error) {
	key := fmt.Sprintf("%s|%#v|%s|%v|%d", file, data, entry, layout, wg)
	tmplMu.Lock()
	defer tmplMu.Unlock()
	if k, ok := cache[key]; ok {
		return k, nil
	}
	t, ok := tmpls[file]
	if !ok {
		src, err := files.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("shaders: %w", err)
		}
		t, err = template.New(file).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("shaders: parse %s: %w", file, err)
		}
		tmpls[file] = t
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("shaders: render %s: %w", file, err)
	}
	k := &Kernel{Name: fmt.Sprintf("%s%+v", file, data), Source: buf.String(), Entry: entry,
		Layout: append([]gpu.BindingType(nil), layout...), WorkgroupSize: wg}
	cache[key] = k
	return k, nil
}

// Layout builds the standard binding layout: nIn read-only storage buffers,
// nOut read-write storage buffers, then a uniform block if params is true.
func Layout(nIn, nOut int, params bool) []gpu.BindingType {
	l := make([]gpu.BindingType, 0, nIn+nOut+1)
	for i := 0; i < nIn; i++ {
		l = append(l, gpu.ReadOnly)
	}
	for i := 0; i < nOut; i++ {
		l = append(l, gpu.ReadWrite)
	}
	if params {
		l = append(l, gpu.Uniform)
	}
	return l
}

// Files lists the embedded .wgsl files.
func Files() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/wgdelegate/wgdelegate/ops"
	"github.com/wgdelegate/wgdelegate/serialization"
)

// graphOptions are the parsed arguments of "wgdelegate graph".
type graphOptions struct {
	model, out string
}

// renderFormats maps the -o extensions graph renders through Graphviz to
// dot's -T format; any other name gets the DOT text.
var renderFormats = map[string]string{
	".svg":  "svg",
	".png":  "png",
	".pdf":  "pdf",
	".jpg":  "jpg",
	".jpeg": "jpg",
	".gif":  "gif",
}

// renderFormat returns dot's -T format for an output name, "" for DOT.
func renderFormat(out string) string {
	return renderFormats[strings.ToLower(filepath.Ext(out))]
}

func graphCommand(args []string, stdout io.Writer) error {
	var o graphOptions
	specs := []flagSpec{
		{names: []string{"o", "output"}, value: true, set: func(v string) error { o.out = v; return nil }},
	}
	pos, err := parseArgs("graph", args, specs)
	if err != nil {
		return err
	}
	if o.model, err = oneModel("graph", pos); err != nil {
		return err
	}
	format := renderFormat(o.out)
	dot := ""
	if format != "" {
		// Before any work: a missing dot is the likeliest failure.
		if dot, err = exec.LookPath("dot"); err != nil {
			return fmt.Errorf("graph: writing %s needs Graphviz's dot, which is not on PATH (install Graphviz, e.g. apt-get install graphviz), or write DOT with -o %s",
				strings.ToUpper(format), strings.TrimSuffix(o.out, filepath.Ext(o.out))+".dot")
		}
	}
	mf, err := mapModel(o.model)
	if err != nil {
		return err
	}
	defer mf.Close()
	var buf bytes.Buffer
	if err := writeDOT(&buf, o.model, mf.Bytes()); err != nil {
		return err
	}
	switch {
	case o.out == "" || o.out == "-":
		_, err = stdout.Write(buf.Bytes())
		return err
	case format != "":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		cmd := exec.CommandContext(ctx, dot, "-T"+format, "-o", o.out)
		cmd.Stdin = &buf
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("graph: dot: %w", ctx.Err())
			}
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return fmt.Errorf("graph: dot -T%s: %s", format, msg)
		}
		return nil
	}
	if err := os.WriteFile(o.out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	return nil
}

// writeDOT writes the op graph of every VulkanBackend delegate in the model
// as Graphviz DOT: ops are rounded boxes labelled with the op name and
// output shape (red when the op is not supported), graph inputs are
// inverted houses, outputs houses, constants cylinders, and each edge is a
// tensor labelled with its dims (and dtype unless float32).
func writeDOT(w io.Writer, path string, data []byte) error {
	m, err := decodeModel(path, data)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n", dotQuote(filepath.Base(path)))
	fmt.Fprintln(bw, "  rankdir=TB;")
	fmt.Fprintln(bw, `  node [fontname="Helvetica", fontsize=10];`)
	fmt.Fprintln(bw, `  edge [fontname="Helvetica", fontsize=9, color="#555555"];`)
	for k, dg := range m.graphs {
		indent := "  "
		if len(m.graphs) > 1 {
			fmt.Fprintf(bw, "  subgraph cluster_%d {\n    label=%s;\n", k, dotQuote(fmt.Sprintf("VulkanBackend delegate %d", dg.delegate)))
			indent = "    "
		}
		dw := &dotWriter{w: bw, indent: indent, prefix: fmt.Sprintf("g%d_", k), g: dg.blob.Graph, producer: map[int32]string{}}
		dw.write()
		if len(m.graphs) > 1 {
			fmt.Fprintln(bw, "  }")
		}
	}
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}

// dotWriter writes one graph's nodes and edges.
type dotWriter struct {
	w        io.Writer
	indent   string
	prefix   string
	g        *serialization.Graph
	producer map[int32]string // tensor value id -> node that provides it
}

func (d *dotWriter) tensor(id int32) *serialization.Tensor {
	if id < 0 || int(id) >= len(d.g.Values) {
		return nil
	}
	v := &d.g.Values[id]
	if v.Kind != serialization.KindTensor {
		return nil
	}
	return v.Tensor
}

// tensorLabel is "[2 3]", with the dtype first unless it is float32.
func tensorLabel(t *serialization.Tensor) string {
	s := list(t.Dims)
	if t.DataType != serialization.Float32 {
		s = t.DataType.String() + " " + s
	}
	return s
}

// isSym reports whether id is a SymInt (drawn like a tensor: sizes flow
// from sym_size.int into views and slices).
func (d *dotWriter) isSym(id int32) bool {
	return id >= 0 && int(id) < len(d.g.Values) && d.g.Values[id].Kind == serialization.KindSymInt
}

// valueLabel labels a tensor by its dims and a SymInt as such.
func (d *dotWriter) valueLabel(id int32) string {
	if t := d.tensor(id); t != nil {
		return tensorLabel(t)
	}
	return "SymInt"
}

// tensorIDs returns the tensor and SymInt ids among id: id itself, or a
// ValueList's tensor and SymInt items.
func (d *dotWriter) tensorIDs(id int32) []int32 {
	if d.tensor(id) != nil || d.isSym(id) {
		return []int32{id}
	}
	if id < 0 || int(id) >= len(d.g.Values) || d.g.Values[id].Kind != serialization.KindValueList {
		return nil
	}
	var out []int32
	for _, it := range d.g.Values[id].IDs {
		if d.tensor(it) != nil || d.isSym(it) {
			out = append(out, it)
		}
	}
	return out
}

func (d *dotWriter) node(name, label, attrs string) {
	fmt.Fprintf(d.w, "%s%s [label=%s, %s];\n", d.indent, name, dotQuote(label), attrs)
}

func (d *dotWriter) edge(from, to string, id int32) {
	fmt.Fprintf(d.w, "%s%s -> %s [label=%s];\n", d.indent, from, to, dotQuote(d.valueLabel(id)))
}

// source returns the node providing tensor id, creating a constant or a
// plain value node the first time one is needed.
func (d *dotWriter) source(id int32) string {
	if n, ok := d.producer[id]; ok {
		return n
	}
	t := d.tensor(id)
	name := fmt.Sprintf("%sv%d", d.prefix, id)
	if t == nil { // a SymInt nothing in the chain sets
		d.node(name, fmt.Sprintf("SymInt value %d", id), `shape=ellipse, style=dashed`)
	} else if t.IsConstant() {
		what := "inline constant"
		if c := t.ConstantID; int(c) < len(d.g.Constants) && d.g.Constants[c].IsNamed() {
			what = d.g.Constants[c].NamedKey
			if len(what) > 16 {
				what = what[:12] + "..." // exporters key weights by SHA-256
			}
		}
		d.node(name, fmt.Sprintf("%s (value %d)\n%s", what, id, tensorLabel(t)), `shape=cylinder, style=filled, fillcolor="#fff2cc"`)
	} else {
		d.node(name, fmt.Sprintf("value %d\n%s", id, tensorLabel(t)), `shape=ellipse`)
	}
	d.producer[id] = name
	return name
}

func (d *dotWriter) write() {
	for i, id := range d.g.InputIDs {
		if d.isSym(int32(id)) {
			name := fmt.Sprintf("%sin%d", d.prefix, i)
			d.node(name, fmt.Sprintf("input %d\nSymInt", i), `shape=invhouse, style=filled, fillcolor="#d5e8d4"`)
			d.producer[int32(id)] = name
		}
		if t := d.tensor(int32(id)); t != nil {
			name := fmt.Sprintf("%sin%d", d.prefix, i)
			d.node(name, fmt.Sprintf("input %d\n%v %s", i, t.DataType, list(t.Dims)), `shape=invhouse, style=filled, fillcolor="#d5e8d4"`)
			d.producer[int32(id)] = name
		}
	}
	for i, op := range d.g.Chain {
		name := fmt.Sprintf("%sop%d", d.prefix, i)
		var ins, outs []int32
		if n := len(op.Args); n > 0 {
			outs = d.tensorIDs(op.Args[n-1])
			for _, a := range op.Args[:n-1] {
				ins = append(ins, d.tensorIDs(a)...)
			}
		}
		shapes := make([]string, len(outs))
		for j, o := range outs {
			if t := d.tensor(o); t != nil {
				shapes[j] = list(t.Dims)
			} else {
				shapes[j] = "SymInt"
			}
		}
		fill := "#dae8fc"
		if _, ok := ops.Lookup(op.Name); !ok {
			fill = "#f8cecc"
		}
		d.node(name, op.Name+"\n"+strings.Join(shapes, ", "), fmt.Sprintf(`shape=box, style="rounded,filled", fillcolor=%q`, fill))
		for _, in := range ins {
			d.edge(d.source(in), name, in)
		}
		for _, o := range outs {
			d.producer[o] = name
		}
	}
	for i, id := range d.g.OutputIDs {
		t := d.tensor(int32(id))
		if t == nil && !d.isSym(int32(id)) {
			continue
		}
		name := fmt.Sprintf("%sout%d", d.prefix, i)
		label := fmt.Sprintf("output %d\nSymInt", i)
		if t != nil {
			label = fmt.Sprintf("output %d\n%v %s", i, t.DataType, list(t.Dims))
		}
		d.node(name, label, `shape=house, style=filled, fillcolor="#e1d5e7"`)
		d.edge(d.source(int32(id)), name, int32(id))
	}
}

// dotQuote returns s as a DOT double-quoted string; newlines become \n
// line breaks.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

package wgdelegate_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// snippet is a Go code example from the README or a doc comment: its
// lines, numbered as in the file.
type snippet struct {
	file  string
	lines []numbered
}

type numbered struct {
	n    int
	text string
}

// markdownSnippets returns the ```go (and unlabelled) code blocks of a
// Markdown file.
func markdownSnippets(file, text string) []snippet {
	var out []snippet
	var cur *snippet
	for i, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && cur == nil:
			if lang := strings.TrimSpace(l[3:]); lang == "go" || lang == "" {
				cur = &snippet{file: file}
			} else {
				cur = &snippet{} // another language: read past it
			}
		case strings.HasPrefix(l, "```"):
			if cur.file != "" {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, numbered{i + 1, l})
		}
	}
	return out
}

// docSnippets returns the indented code blocks ("//\t...") of a Go
// file's comments.
func docSnippets(file, text string) []snippet {
	var out []snippet
	cur := snippet{file: file}
	for i, l := range strings.Split(text, "\n") {
		if code, ok := strings.CutPrefix(l, "//\t"); ok {
			cur.lines = append(cur.lines, numbered{i + 1, code})
			continue
		}
		if len(cur.lines) > 0 {
			out = append(out, cur)
		}
		cur = snippet{file: file}
	}
	return out
}

var (
	assignsErr = regexp.MustCompile(`(^|[ ,])err\s*:?=[^=]`)
	checksErr  = regexp.MustCompile(`err != nil|errors\.(Is|As)\(err`)
)

// ignoredErrors returns the lines of s that assign err without the next
// code line (or the line itself, as in "if err := ...; err != nil")
// checking it.
func ignoredErrors(s snippet) []numbered {
	var code []numbered
	for _, l := range s.lines {
		if t := strings.TrimSpace(l.text); t != "" && !strings.HasPrefix(t, "//") {
			code = append(code, l)
		}
	}
	var bad []numbered
	for k, l := range code {
		if !assignsErr.MatchString(l.text) || checksErr.MatchString(l.text) {
			continue
		}
		if k+1 < len(code) && checksErr.MatchString(code[k+1].text) {
			continue
		}
		bad = append(bad, l)
	}
	return bad
}

// TestSnippetsCheckErrors: no Go snippet in the README or a package's
// doc.go assigns an error it then ignores (copied, an ignored Execute
// error turns a wrong input shape into a panic in the user's code).
func TestSnippetsCheckErrors(t *testing.T) {
	var snippets []snippet
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippets = append(snippets, markdownSnippets("README.md", string(readme))...)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.Name() != "doc.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		snippets = append(snippets, docSnippets(path, string(b))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(snippets) < 5 {
		t.Fatalf("found only %d snippets: the scan is broken", len(snippets))
	}
	for _, s := range snippets {
		for _, l := range ignoredErrors(s) {
			t.Errorf("%s:%d: the error is not checked: %s", s.file, l.n, strings.TrimSpace(l.text))
		}
	}
}

// TestIgnoredErrors: the checker itself.
func TestIgnoredErrors(t *testing.T) {
	lines := func(text ...string) snippet {
		s := snippet{file: "x"}
		for i, l := range text {
			s.lines = append(s.lines, numbered{i + 1, l})
		}
		return s
	}
	for _, tc := range []struct {
		s    snippet
		want int
	}{
		{lines("outs, err := m.Execute(ctx, x)", "y, err := outs[0].Float32s()", "if err != nil { ... }"), 1},
		{lines("outs, err := m.Execute(ctx, x)", "// a comment", "", "if err != nil {", "\treturn err", "}"), 0},
		{lines("if err := npy.WriteFile(p, t); err != nil {"), 0},
		{lines("err = f()"), 1},
		{lines("err = f()", "if errors.Is(err, x) {"), 0},
		{lines("if errs == nil {"), 0},
	} {
		if got := ignoredErrors(tc.s); len(got) != tc.want {
			t.Errorf("%v: %d ignored, want %d", tc.s.lines, len(got), tc.want)
		}
	}
	md := markdownSnippets("r.md", "text\n```go\na, err := f()\n```\n```sh\nerr=1\n```\n")
	if len(md) != 1 || len(md[0].lines) != 1 || md[0].lines[0].n != 3 {
		t.Errorf("markdownSnippets: %+v", md)
	}
	doc := docSnippets("d.go", "// Package p.\n//\n//\tx, err := f()\n//\tuse(x)\n//\n// more\npackage p\n")
	if len(doc) != 1 || len(doc[0].lines) != 2 || len(ignoredErrors(doc[0])) != 1 {
		t.Errorf("docSnippets: %+v", doc)
	}
}

// TestREADMEExamplesClaim: go doc does not print Example functions, so
// the README sends readers to the example files, which exist and hold
// examples, and claims nowhere that go doc shows them.
func TestREADMEExamplesClaim(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "Runnable examples of each are in `example_test.go`") {
		t.Error("the README does not point at example_test.go")
	}
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.Contains(l, "go doc") && strings.Contains(l, "example") && !strings.Contains(l, "does not") {
			t.Errorf("README: %q: go doc does not show examples", l)
		}
	}
	b, err := os.ReadFile("example_test.go")
	if err != nil || !strings.Contains(string(b), "\nfunc Example") {
		t.Errorf("example_test.go has no Example functions (%v)", err)
	}
}

package main

//go:generate go test -run ^TestREADMEOpTable$ -update

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate/ops"
)

var update = flag.Bool("update", false, "rewrite the generated op table in README.md")

// The op table in README.md sits between these markers.
const (
	opTableBegin = "<!-- BEGIN GENERATED OP TABLE (go generate ./cmd/wgdelegate) -->"
	opTableEnd   = "<!-- END GENERATED OP TABLE -->"
)

// opTable renders the registered ops as a Markdown table: the exact
// OperatorCall name a graph uses, then its namespace, op and overload.
func opTable(names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ops are registered.\n\n", len(names))
	b.WriteString("| name in the graph | namespace | op | overload |\n|---|---|---|---|\n")
	for _, n := range names {
		parts := strings.Split(n, ".")
		ns, op, overload := "", n, ""
		switch len(parts) {
		case 2: // sym_size.int
			op, overload = parts[0], parts[1]
		case 3:
			ns, op, overload = parts[0], parts[1], parts[2]
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", n, ns, op, overload)
	}
	return b.String()
}

// withOpTable returns readme with the text between the markers replaced
// by table.
func withOpTable(readme, table string) (string, error) {
	i := strings.Index(readme, opTableBegin)
	j := strings.Index(readme, opTableEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("README.md has no %q ... %q markers", opTableBegin, opTableEnd)
	}
	return readme[:i+len(opTableBegin)] + "\n" + table + readme[j:], nil
}

// TestREADMEOpTable fails when README.md's op table does not list exactly
// the registered ops. Refresh it with
//
//	go generate ./cmd/wgdelegate
//
// (which runs this test with -update).
func TestREADMEOpTable(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := withOpTable(string(data), opTable(ops.Names()))
	if err != nil {
		t.Fatal(err)
	}
	if want == string(data) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md: op table updated")
		return
	}
	t.Errorf("README.md's op table is stale (the registry has %d ops): run 'go generate ./cmd/wgdelegate'", len(ops.Names()))
}

func TestOpTableFormat(t *testing.T) {
	got := opTable([]string{"aten.add.Tensor", "sym_size.int"})
	want := "2 ops are registered.\n\n| name in the graph | namespace | op | overload |\n|---|---|---|---|\n" +
		"| `aten.add.Tensor` | aten | add | Tensor |\n| `sym_size.int` |  | sym_size | int |\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	r, err := withOpTable("a\n"+opTableBegin+"\nold\n"+opTableEnd+"\nb\n", "new\n")
	if err != nil || r != "a\n"+opTableBegin+"\nnew\n"+opTableEnd+"\nb\n" {
		t.Errorf("replaced: %q, %v", r, err)
	}
	if _, err := withOpTable("no markers", "x"); err == nil {
		t.Error("no error without markers")
	}
}

package main

//go:generate go test -run ^TestREADMEOpTable$ -update

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wgdelegate/wgdelegate"
	"github.com/wgdelegate/wgdelegate/internal/models"
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

// readmeSection returns the first ```console block after the heading
// line (e.g. "## Command line") in README.md, as lines.
func readmeSection(t *testing.T, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q heading", heading)
	}
	_, block, ok := strings.Cut(rest, "```console\n")
	if !ok {
		t.Fatalf("README.md's %q section has no console block", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	return strings.Split(strings.TrimSuffix(block, "\n"), "\n")
}

// sessionStep is one "$ command" of a README console block and the lines
// shown after it.
type sessionStep struct {
	cmd  string
	want []string
}

func sessionSteps(lines []string) []sessionStep {
	var steps []sessionStep
	for _, l := range lines {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, sessionStep{cmd: c})
		} else if len(steps) > 0 {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	return steps
}

// shellWords splits a command line as a shell would for the README's
// sessions: words separated by spaces, "..." and '...' quoting, a # comment
// ending the line.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"' || c == '\'':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			i = len(line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// durations matches the timings in the session's -v output.
var durations = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|µs|s)\b`)

// TestREADMECLISession runs the README's "Command line" session word for
// word on the model `go run ./examples/mlp -out /tmp/mlp` writes (in a
// temporary directory): every run and inspect command must print the
// lines shown, timings and the adapter's name aside (the -v memory table
// is compared on a CPU adapter, whose kernels the README shows); the graph
// command runs when Graphviz's dot is installed.
func TestREADMECLISession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/mlp")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`go run ./examples/mlp -out\n/tmp/mlp`") {
		t.Fatal("README.md's session no longer starts from `go run ./examples/mlp -out /tmp/mlp`")
	}
	dir := t.TempDir()
	gen := exec.Command("go", "run", "./examples/mlp", "-out", dir)
	gen.Dir = filepath.Join("..", "..")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("go run ./examples/mlp: %v\n%s", err, out)
	}
	steps := sessionSteps(readmeSection(t, "## Command line"))
	t.Chdir(dir)
	// Each command of the session is a process of its own, with a fresh
	// device: no pipelines cached by the tests before (-v counts them).
	shared := openDevice
	t.Cleanup(func() { openDevice = shared })
	openDevice = func(ctx context.Context, opts wgdelegate.DeviceOptions) (*wgdelegate.Device, func(), error) {
		dev, err := wgdelegate.OpenDevice(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return dev, func() { dev.Close() }, nil
	}
	ran := 0
	for _, st := range steps {
		words, err := shellWords(st.cmd)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(words) == 2 && words[0] == "cd" && words[1] == "/tmp/mlp":
			continue
		case len(words) < 2 || words[0] != "wgdelegate":
			t.Fatalf("README session step %q: not a wgdelegate command this test knows", st.cmd)
		case words[1] == "graph":
			if _, err := exec.LookPath("dot"); err != nil {
				t.Logf("skipped %q: no Graphviz dot", st.cmd)
				continue
			}
		}
		args, jq := words[1:], ""
		if i := slices.Index(args, "|"); i >= 0 {
			args, jq = args[:i], strings.Join(args[i+1:], " ")
		}
		dropStderr := false
		if n := len(args); n > 0 && args[n-1] == "2>/dev/null" {
			args, dropStderr = args[:n-1], true
		}
		code, stdout, stderr := invoke(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", st.cmd, code, stderr)
		}
		ran++
		got := stdout
		switch jq {
		case "":
		case "jq -c .graphs[0].ops[]":
			// jq -c '.graphs[0].ops[]': each op compact, keys in order.
			var v struct {
				Graphs []struct{ Ops []json.RawMessage }
			}
			if err := json.Unmarshal([]byte(stdout), &v); err != nil || len(v.Graphs) == 0 {
				t.Fatalf("%s: %v", st.cmd, err)
			}
			var b strings.Builder
			for _, op := range v.Graphs[0].Ops {
				var c bytes.Buffer
				if err := json.Compact(&c, op); err != nil {
					t.Fatal(err)
				}
				b.WriteString(c.String() + "\n")
			}
			got = b.String()
		default:
			t.Fatalf("%s: a pipe to %q this test cannot replay", st.cmd, jq)
		}
		if !dropStderr {
			got += stderr // a terminal shows it after stdout: run writes it last
		}
		gotLines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		cpu := !strings.HasPrefix(got, "adapter: ") || strings.Contains(gotLines[0], ", cpu kernels")
		if len(gotLines) != len(st.want) && cpu {
			t.Errorf("%s printed %d lines, README.md shows %d:\n%s", st.cmd, len(gotLines), len(st.want), got)
			continue
		}
		for i := range min(len(gotLines), len(st.want)) {
			g, w := durations.ReplaceAllString(gotLines[i], "T"), durations.ReplaceAllString(st.want[i], "T")
			if strings.HasPrefix(w, "adapter: ") && strings.HasPrefix(g, "adapter: ") {
				continue
			}
			if g != w && cpu {
				t.Errorf("%s: line %d is\n\t%s\nREADME.md shows\n\t%s", st.cmd, i+1, gotLines[i], st.want[i])
			}
		}
	}
	if ran < 3 {
		t.Fatalf("ran %d commands of README.md's session, want its two runs and inspect", ran)
	}
}

// TestREADMEGenerateSession runs the README's "Generating with a Llama
// export" session word for word, with stand-ins for the downloads (a
// llama2.c checkpoint of random weights and a tokenizer of its
// vocabulary, under the names the URLs give): import succeeds and suggests
// exactly the README's generate command, which prints text.
func TestREADMEGenerateSession(t *testing.T) {
	steps := sessionSteps(readmeSection(t, "### Generating with a Llama export: `llm` and `generate`"))
	dir := t.TempDir()
	t.Chdir(dir)
	var suggested string
	ran := 0
	for i, st := range steps {
		words, err := shellWords(st.cmd)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(words) == 3 && words[0] == "curl" && words[1] == "-LO":
			name := path.Base(words[2])
			if name == "tokenizer.bin" {
				writeTokenizer(t, dir, name, int(genCfg.Vocab))
			} else {
				writeCheckpoint(t, dir, name, genCfg, models.RandomLlamaWeights(genCfg))
			}
			continue
		case len(words) < 2 || words[0] != "wgdelegate":
			t.Fatalf("README session step %q: not a command this test knows", st.cmd)
		}
		code, stdout, stderr := invoke(t, words[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", st.cmd, code, stderr)
		}
		ran++
		switch words[1] {
		case "import":
			for _, l := range strings.Split(stdout, "\n") {
				if c, ok := strings.CutPrefix(l, "run it: "); ok {
					suggested = c
				}
			}
			if i+1 >= len(steps) || suggested != steps[i+1].cmd {
				t.Errorf("import suggests\n\t%s\nREADME.md goes on with\n\t%v", suggested, steps[i+1:])
			}
		case "generate":
			if len(models.ParseLlama2CPieces(stdout)) == 0 || !strings.Contains(stderr, "decode: ") {
				t.Errorf("%s: stdout %q, stderr %q", st.cmd, stdout, stderr)
			}
		}
	}
	if ran != 2 || suggested == "" {
		t.Fatalf("ran %d wgdelegate commands of README.md's generate session, want import and generate", ran)
	}
}

// Command wgdelegate runs and inspects ExecuTorch Vulkan-delegate models on
// WebGPU.
//
//	wgdelegate run --input x.npy --output-dir out model.pte
//	wgdelegate run --data weights.ptd --input a.npy --input b.npy --output-dir out model.pte
//	wgdelegate inspect model.pte
//
// run loads a .pte program (its VulkanBackend delegate) or a raw VH00
// delegate blob on the default adapter, feeds it .npy inputs in graph input
// order and writes output_0.npy, output_1.npy, ... in output order. inspect
// decodes a model without touching a GPU and prints its header, values, ops,
// constants (and which are deferred), inputs, outputs and memory plan.
//
// Every failure exits with status 1 and exactly one line on stderr,
// "wgdelegate: <message>"; -h and --help print usage and exit 0.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  wgdelegate run [flags] MODEL     run a model on .npy inputs
  wgdelegate inspect MODEL         print a model's structure (no GPU needed)
  wgdelegate version               print the version
  wgdelegate help [COMMAND]        print this help, or a command's

MODEL is an ExecuTorch .pte program holding a VulkanBackend delegate, or a
raw VH00 delegate blob; the format is detected from the file's bytes.

Every error exits with status 1 and one line on stderr.
`

const runUsage = `Usage:
  wgdelegate run [flags] MODEL

Runs MODEL once on the default WebGPU adapter and writes its outputs as
output_0.npy, output_1.npy, ... in graph output order. Flags may come before
or after MODEL; "--" ends the flags.

Flags:
  --data FILE        a .ptd file holding named constants (repeatable)
  --input FILE       a .npy file for the next graph input, in input order
                     (repeatable; the count must match the graph's inputs)
  --output-dir DIR   where the outputs go (created if missing; required)
  -q, --quiet        print nothing on success
  -v, --verbose      also print the adapter and memory statistics
  -h, --help         print this help

Input dtypes must match the graph's, except that int64 data may feed an
int32 input and float64 data a float32 input: it is narrowed, and an int64
value that does not fit is an error. Shapes must match exactly.
`

const inspectUsage = `Usage:
  wgdelegate inspect MODEL

Decodes MODEL (a .pte program or a raw VH00 blob) and prints, as aligned
text: the program and its delegates (for a .pte), the VH00 header, every
value, op and constant, the graph inputs and outputs, and the memory plan.
A constant is deferred when its only uses are as the source of
et_vk.prepack.default: it then gets no buffer of its own. No GPU is used.
`

// errHelp is returned by argument parsers when -h or --help was given.
var errHelp = errors.New("help requested")

// run is the whole command: it parses args, runs the command and returns the
// exit status. It never panics: a panic anywhere below becomes the one-line
// error and status 1.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			code = fail(stderr, fmt.Errorf("internal error: %v", r))
		}
	}()
	if len(args) == 0 {
		return fail(stderr, errors.New("no command given (try 'wgdelegate help')"))
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = runCommand(rest, stdout)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, runUsage)
			return 0
		}
	case "inspect":
		err = inspectCommand(rest, stdout)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, inspectUsage)
			return 0
		}
	case "version", "-version", "--version":
		if len(rest) > 0 {
			return fail(stderr, fmt.Errorf("version takes no arguments"))
		}
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "-help", "--help":
		return helpCommand(rest, stdout, stderr)
	default:
		return fail(stderr, fmt.Errorf("unknown command %q (try 'wgdelegate help')", cmd))
	}
	if err != nil {
		return fail(stderr, err)
	}
	return 0
}

// fail writes err as the single stderr line and returns exit status 1.
func fail(stderr io.Writer, err error) int {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	fmt.Fprintf(stderr, "wgdelegate: %s\n", msg)
	return 1
}

func helpCommand(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		io.WriteString(stdout, usage)
	case len(args) > 1:
		return fail(stderr, errors.New("help takes at most one command"))
	case args[0] == "run":
		io.WriteString(stdout, runUsage)
	case args[0] == "inspect":
		io.WriteString(stdout, inspectUsage)
	case args[0] == "version" || args[0] == "help":
		io.WriteString(stdout, usage)
	default:
		return fail(stderr, fmt.Errorf("help: unknown command %q", args[0]))
	}
	return 0
}

// versionString reports the module version and VCS revision the binary was
// built from, when the toolchain recorded them.
func versionString() string {
	version, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	s := "wgdelegate " + version
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		s += " " + rev
	}
	return s + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

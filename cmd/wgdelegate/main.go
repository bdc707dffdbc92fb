package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  wgdelegate run [flags] MODEL       run a model on .npy inputs (or generated ones)
  wgdelegate inspect [flags] MODEL   print a model's structure (no GPU needed)
  wgdelegate graph [-o FILE] MODEL   draw a model's op graph (DOT; SVG, PNG, PDF with Graphviz)
  wgdelegate profile [flags] MODEL   GPU time per op (table, JSON or Chrome trace)
  wgdelegate bench [flags] MODEL     load and execute timings, allocations, memory
  wgdelegate generate [flags] MODEL  generate tokens with a Llama-style decoder
  wgdelegate import llama2c [flags] CHECKPOINT -o DIR
                                     write a llama2.c checkpoint as a .pte and .ptd
  wgdelegate template [flags]        render a conversation with a model's chat template
  wgdelegate serve [flags] MODEL     serve a decoder over HTTP with OpenAI's API
  wgdelegate version                 print the version
  wgdelegate help [COMMAND]          print this help, or a command's

MODEL is an ExecuTorch .pte program whose execution plan calls VulkanBackend
delegates, or a raw VH00 delegate blob; the format is detected from the
file's bytes.

Examples:
  wgdelegate run --data weights.ptd --input x.npy --output-dir out model.pte
  wgdelegate inspect model.pte
  wgdelegate inspect --json model.pte | jq '.graphs[0].ops'
  wgdelegate graph -o model.svg model.pte
  wgdelegate profile --trace trace.json model.pte
  wgdelegate bench --json model.pte
  wgdelegate generate --tokenizer tokenizer.bin --prompt "Once upon a time" llama.pte
  wgdelegate import llama2c --tokenizer tokenizer.bin stories15M.bin -o stories15M

Every error exits with status 1 and one line on stderr; Ctrl-C exits with
status 130 (generate first prints its statistics so far).
`

const runUsage = `Usage:
  wgdelegate run [flags] MODEL

Runs MODEL once on the default WebGPU adapter and writes its outputs as
output_0.npy, output_1.npy, ... in output order; a float16 output is
written as float32 (exactly: every half is a float32), as float inputs may
be given as float32 for a float16 input. Flags may come before or after
MODEL; "--" ends the flags.

Flags:
  --data FILE        a .ptd file holding named constants (repeatable)
  --input FILE       a .npy file for the next model input, in input order
                     (repeatable; the count must match the model's inputs).
                     Without any, inputs are generated as bench does: small
                     random values of each input's dtype and shape (integers
                     1..3, floats in [-1, 1), the same every run), and
                     stderr says so
  --output-dir DIR   where the outputs go (created if missing; required)
  --cpu-threads N    compute threads of a CPU adapter (llvmpipe/lavapipe):
                     "inline" runs every dispatch on the driver's own thread,
                     N (1..64) asks for N workers, "default" (or 0) keeps
                     LP_NUM_THREADS, else one worker per CPU. Inline suits
                     models of many small dispatches (on 2 vCPUs a tiny
                     dispatch costs 2-9 µs instead of 45-85 µs; a 27-dispatch
                     decoder step ran 2.3-2.9 -> 0.8-0.9 ms) but runs big
                     kernels on one core (on a quiet host a 1M-element
                     elementwise chain went 15 -> 21 ms). Other adapters
                     ignore it.
  --kernels F        kernel family: auto (default: cpu for a CPU adapter
                     such as lavapipe, gpu for a GPU), cpu (shaped for
                     llvmpipe) or gpu (shaped for GPUs: many lanes along K,
                     workgroup memory; correct but slow on lavapipe)
  --verify           check every weight against its SHA-256 key while
                     loading: a corrupt .pte or .ptd fails instead of
                     computing something else (hashing costs about 0.5 ms
                     per MB)
  -q, --quiet        print nothing on success
  -v, --verbose      also print the adapter (and whether its float32
                     arithmetic flushes subnormals), timings and memory
                     statistics, and debug logs on stderr
  -h, --help         print this help

Input dtypes must match the model's, except that int64 data may feed an
int32 input and float64 data a float32 input: it is narrowed, and an int64
value that does not fit is an error. A model's input shapes are upper
bounds (dynamic shapes): an input may be smaller in any dim, with the same
rank, and the outputs are written with their live shapes. A SymInt input
takes a one-element int32 or int64 array. A load that takes more than a
second shows its progress on stderr: a bar on a terminal, plain lines on
any other stderr only with --verbose.

Examples:
  # a model whose weights are inside the .pte
  wgdelegate run --input x.npy --output-dir out model.pte
  # generated inputs of the model's shapes: a first try without NumPy
  wgdelegate run --data weights.ptd --output-dir out model.pte
  # weights in a separate .ptd, two inputs, details on what happened
  wgdelegate run -v --data weights.ptd --input a.npy --input b.npy --output-dir out model.pte
  # a raw delegate blob, e.g. extracted from a .pte
  wgdelegate run --input x.npy --output-dir out model.bin
`

const inspectUsage = `Usage:
  wgdelegate inspect [flags] MODEL

Decodes MODEL (a .pte program or a raw VH00 blob) and prints, as aligned
text: the program and its delegates (for a .pte), then for every
VulkanBackend delegate the VH00 header, every value, op and constant, the
weights of quantized ops (format, group size, bytes per weight), the graph
inputs and outputs, the memory plan, the weights too large for one
buffer that a load holds in chunks of rows (read only by linears and
embeddings), and any other buffer over the device limits. A constant is
deferred when its only uses are as the source of et_vk.prepack.default,
or when it is held in chunks: it then gets no buffer of its own. No GPU
is used unless --device is given.

Flags:
  --json        print JSON instead: inputs and outputs (dtype, shape), ops
                (name, count, supported), constants (source inline/pte/ptd,
                bytes, deferred), quantized_weights (op, format, bits,
                group_size, layout, dims, params, weight/scale/sum bytes),
                the memory plan (shared objects, their size and users),
                chunked_weights (value, prepacked, bytes, rows, chunks) and
                exceeds_limits; one object per delegate under "graphs"
  --device      check buffers against the default adapter's limits instead
                of WebGPU's default limits, and say whether its float32
                arithmetic flushes subnormals (opens the GPU)
  -v, --verbose debug logs on stderr (with --device)
  -h, --help    print this help

Examples:
  wgdelegate inspect model.pte
  wgdelegate inspect --json model.pte > model.json
  wgdelegate inspect --json model.pte | jq '.graphs[].ops[] | select(.supported | not)'
  wgdelegate inspect --device big_model.pte
`

const graphUsage = `Usage:
  wgdelegate graph [-o FILE] MODEL

Writes the op graph of every VulkanBackend delegate in MODEL as Graphviz
DOT: ops are rounded boxes labelled with the op name and output shape (red
when the op is not supported), inputs and outputs are house shapes,
constants cylinders, and every edge is a tensor labelled with its dims.
The name given to -o picks the format: FILE.svg, .png, .pdf, .jpg (.jpeg)
and .gif are rendered by Graphviz's dot, which must be installed
(apt-get install graphviz); any other name gets DOT. Without -o, or with
-o -, DOT goes to stdout. No GPU is used.

Flags:
  -o, --output FILE   where to write (.svg/.png/.pdf/.jpg/.gif render with dot)
  -h, --help          print this help

Examples:
  wgdelegate graph -o model.svg model.pte
  wgdelegate graph -o model.png model.pte
  wgdelegate graph -o model.dot model.pte
  wgdelegate graph model.pte | dot -Tpng -o model.png
`

const versionUsage = `Usage:
  wgdelegate version

Prints the module version, the VCS revision the binary was built from
("+dirty" when the tree had changes), the Go version and the platform, on
one line. Please include it in bug reports.

Flags:
  -h, --help   print this help

Examples:
  wgdelegate version
`

// errHelp is returned by argument parsers when -h or --help was given.
var errHelp = errors.New("help requested")

// run is the whole command: it parses args, runs the command and returns the
// exit status. It never panics: a panic anywhere below becomes the one-line
// error and status 1. No arguments at all print the usage, as help does.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			code = fail(stderr, fmt.Errorf("internal error: %v", r))
		}
	}()
	if len(args) == 0 {
		io.WriteString(stdout, usage)
		return 0
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = runCommand(rest, stdout, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, runUsage)
			return 0
		}
	case "inspect":
		err = inspectCommand(rest, stdout, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, inspectUsage)
			return 0
		}
	case "graph":
		err = graphCommand(rest, stdout)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, graphUsage)
			return 0
		}
	case "profile":
		err = profileCommand(rest, stdout, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, profileUsage)
			return 0
		}
	case "bench":
		err = benchCommand(rest, stdout, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, benchUsage)
			return 0
		}
	case "generate":
		err = generateCommand(rest, stdout, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, generateUsage)
			return 0
		}
	case "import":
		err = importCommand(rest, stdout, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, importUsage)
			return 0
		}
	case "template":
		err = templateCommand(rest, os.Stdin, stdout)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, templateUsage)
			return 0
		}
	case "serve":
		err = serveCommand(rest, stderr)
		if errors.Is(err, errHelp) {
			io.WriteString(stdout, serveUsage)
			return 0
		}
	case "version", "-version", "--version":
		if _, err := parseArgs("version", rest, nil); errors.Is(err, errHelp) {
			io.WriteString(stdout, versionUsage)
			return 0
		} else if err != nil {
			return fail(stderr, err)
		}
		if len(rest) > 0 {
			return fail(stderr, fmt.Errorf("version takes no arguments, got %s", strings.Join(rest, " ")))
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

// exitInterrupted is the status of a command stopped by Ctrl-C: 128 +
// SIGINT, as a shell reports a process the signal killed.
const exitInterrupted = 130

// exitCode maps a command's error to its exit status: 130 when Ctrl-C
// cancelled it (every command's context is cancelled by SIGINT alone, so a
// context.Canceled anywhere in the chain means that), else 1.
func exitCode(err error) int {
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	return 1
}

// fail writes err as the single stderr line and returns its exit status
// (exitCode). A message that already starts with "wgdelegate: " (an error
// of the library's own) does not get it twice.
func fail(stderr io.Writer, err error) int {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	msg = strings.TrimPrefix(msg, "wgdelegate: ")
	fmt.Fprintf(stderr, "wgdelegate: %s\n", msg)
	return exitCode(err)
}

func helpCommand(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0, len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		io.WriteString(stdout, usage)
	case len(args) > 1:
		return fail(stderr, errors.New("help takes at most one command"))
	case args[0] == "run":
		io.WriteString(stdout, runUsage)
	case args[0] == "inspect":
		io.WriteString(stdout, inspectUsage)
	case args[0] == "graph":
		io.WriteString(stdout, graphUsage)
	case args[0] == "profile":
		io.WriteString(stdout, profileUsage)
	case args[0] == "bench":
		io.WriteString(stdout, benchUsage)
	case args[0] == "generate":
		io.WriteString(stdout, generateUsage)
	case args[0] == "import":
		io.WriteString(stdout, importUsage)
	case args[0] == "template":
		io.WriteString(stdout, templateUsage)
	case args[0] == "serve":
		io.WriteString(stdout, serveUsage)
	case args[0] == "version":
		io.WriteString(stdout, versionUsage)
	case args[0] == "help":
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

// newLogger returns the logger commands use: debug records as text on
// stderr with --verbose, nothing otherwise.
func newLogger(stderr io.Writer, verbose bool) *slog.Logger {
	if !verbose {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

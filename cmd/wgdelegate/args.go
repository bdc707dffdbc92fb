package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/wgdelegate/wgdelegate"
)

// flagSpec describes one flag. Like Go's flag package, a flag may be spelt
// with one dash or two, and a value may follow as the next argument or after
// '='. Unlike it, flags and positional arguments may be interleaved, so
// "run --output-dir out model.pte --input a.npy" works.
type flagSpec struct {
	names []string // without dashes; the first is used in messages
	value bool     // takes a value
	set   func(v string) error
}

// parseArgs applies args to specs and returns the positional arguments. "--"
// ends the flags; a lone "-" is positional. -h and --help return errHelp.
// Errors name a flag as it was typed (-n, --n or --iterations).
func parseArgs(cmd string, args []string, specs []flagSpec) ([]string, error) {
	byName := map[string]*flagSpec{}
	for i := range specs {
		for _, n := range specs[i].names {
			byName[n] = &specs[i]
		}
	}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		// flag is the flag as the user typed it, for messages: -n stays
		// -n, --top-k=x is --top-k.
		flag := a
		val, hasVal := "", false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, val, hasVal = name[:k], name[k+1:], true
			flag = a[:strings.IndexByte(a, '=')]
		}
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		spec, ok := byName[name]
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: unknown flag %s (try 'wgdelegate help %s')", cmd, a, cmd)
		}
		switch {
		case !spec.value && hasVal:
			return nil, fmt.Errorf("%s: flag %s takes no value", cmd, flag)
		case spec.value && !hasVal:
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s: flag %s needs a value", cmd, flag)
			}
			i++
			val = args[i]
		}
		if spec.value && val == "" {
			return nil, fmt.Errorf("%s: flag %s needs a non-empty value", cmd, flag)
		}
		if err := spec.set(val); err != nil {
			return nil, fmt.Errorf("%s: flag %s: %w", cmd, flag, err)
		}
	}
	return pos, nil
}

// oneModel checks that exactly one positional argument, the model, was given.
func oneModel(cmd string, pos []string) (string, error) {
	switch len(pos) {
	case 0:
		return "", fmt.Errorf("%s: no MODEL given (usage: wgdelegate %s [flags] MODEL)", cmd, cmd)
	case 1:
		return pos[0], nil
	}
	return "", fmt.Errorf("%s: expected one MODEL, got %d arguments: %s", cmd, len(pos), strings.Join(pos, " "))
}

// cpuThreadsFlag parses --cpu-threads into dst: "inline", "default", or a
// worker count 0..wgdelegate.MaxCPUThreads (0 is the default).
func cpuThreadsFlag(dst *int) func(string) error {
	return func(v string) error {
		switch v {
		case "inline":
			*dst = wgdelegate.CPUThreadsInline
			return nil
		case "default":
			*dst = 0
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > wgdelegate.MaxCPUThreads {
			return fmt.Errorf("%q is not inline, default or a worker count 0..%d", v, wgdelegate.MaxCPUThreads)
		}
		*dst = n
		return nil
	}
}

// kernelsFlag parses --kernels into dst: auto, cpu or gpu.
func kernelsFlag(dst *wgdelegate.KernelFamily) func(string) error {
	return func(v string) error {
		f, err := wgdelegate.ParseKernelFamily(v)
		if err != nil {
			return fmt.Errorf("%q is not auto, cpu or gpu", v)
		}
		*dst = f
		return nil
	}
}

// parseAndRun is a command that does its work in one call: it parses args
// with parse, then runs do with the options under a context that an
// interrupt (Ctrl-C) cancels.
func parseAndRun[O any](args []string, stdout, stderr io.Writer, parse func([]string) (O, error),
	do func(context.Context, O, io.Writer, io.Writer) error) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return do(ctx, o, stdout, stderr)
}

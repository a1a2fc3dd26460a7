// Command gpucc compiles tensor graphs (protocol v1 JSON) into fused
// kernels and runs them.
//
//	gpucc run [--backend auto|webgpu|wasm|cpu|native] [--allow-software] GRAPH.json
//	gpucc build GRAPH.json -o DIR [--dump-after PASS] [--explain] [--package NAME]
//	gpucc train --steps N --lr X [--loss NAME] GRAPH.json
//	gpucc bench [--quick] [-o DIR]
//	gpucc serve [--addr HOST:PORT]
//	gpucc info
//
// Every command prints exactly one JSON object on stdout (build and info
// may print text where asked); failures print {"error":{"code","message"}}
// and exit non-zero.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime"
)

// command is one subcommand. Files of this package add theirs in init.
type command struct {
	summary string
	run     func(args []string) int
}

var commands = map[string]command{}

func main() {
	os.Exit(mainArgs(os.Args[1:]))
}

func mainArgs(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stderr)
		return 2
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "gpucc: unknown command %q\n", args[0])
		usage(os.Stderr)
		return 2
	}
	return c.run(args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gpucc COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

// writeJSON prints v as one JSON object on stdout.
func writeJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "gpucc: encoding result: %v\n", err)
	}
}

// fail prints err as {"error":{"code","message"}} and returns the exit code.
func fail(err error) int {
	writeJSON(map[string]any{"error": map[string]string{
		"code": string(runtime.CodeOf(err)), "message": err.Error()}})
	return 1
}

// newFlags returns a flag set for command name; synopsis is its usage
// line without "gpucc ", printed with the flags for -h.
func newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported as JSON by flagError
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: gpucc %s\n\nflags:\n", synopsis)
		fs.SetOutput(os.Stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// flagError reports a flag parsing error (the flag package has already
// printed the usage to stderr): -h succeeds, anything else is a JSON usage
// error.
func flagError(fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return usageError("%s: %v", fs.Name(), err)
}

// usageError is a bad command line.
func usageError(format string, a ...any) int {
	return fail(ir.Errorf("usage", -1, "", format, a...))
}

// readGraph decodes and validates the graph at path ("-" is stdin).
func readGraph(path string, limits ir.Limits) (*ir.Graph, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "%v", err)
		}
		defer f.Close()
		r = f
	}
	return ir.Decode(r, limits)
}

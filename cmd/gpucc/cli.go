package main

// The command line's shared plumbing: one flag set, one help printer, one
// error printer and the exit codes.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpucc/gpucc/ir"
)

// Exit codes, the same for every command.
const (
	exitOK      = 0 // the result is on stdout
	exitFailure = 1 // a JSON error object is on stdout
	exitUsage   = 2 // a bad command line: a JSON error object with code "usage"
)

// exitStatus documents the exit codes in every command's help.
const exitStatus = `exit status:
  0  success; the result is on stdout
  1  failure; stdout holds {"error":{"code":...,"message":...}} (with "node" and "field" when known)
  2  bad command line; the same object with code "usage"`

// command is one subcommand. Files of this package add theirs in init.
type command struct {
	summary string
	run     func(args []string) int
}

var commands = map[string]command{}

// usage prints the list of commands.
func usage(w io.Writer) {
	fmt.Fprint(w, "gpucc compiles tensor graphs (protocol v1 JSON) into fused kernels and runs them.\n\n")
	fmt.Fprint(w, "usage: gpucc COMMAND [flags] [--] [ARGS]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\n'gpucc help COMMAND' (or 'gpucc COMMAND -h') shows a command's flags.\n"+
		"'gpucc version' (or --version) prints the version.\n\n%s\n", exitStatus)
}

// synopses are the commands' usage lines, by flag set.
var synopses = map[*flag.FlagSet]string{}

// newFlags returns a flag set for command name; synopsis is its usage
// line without "gpucc ". -h prints the synopsis, help[name] and the flags
// on stdout (flagError does); the flag package itself prints nothing.
func newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	synopses[fs] = synopsis
	return fs
}

// printHelp prints fs's command help: synopsis, description, flags and
// exit codes.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: gpucc %s\n\n", synopses[fs])
	if doc := help[fs.Name()]; doc != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(doc))
	}
	printFlags(w, fs)
	fmt.Fprintf(w, "%s\n", exitStatus)
}

// printFlags lists fs's flags with two dashes, the spelling the help and
// error messages use.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "flags:")
	fs.VisitAll(func(f *flag.Flag) {
		kind, text := flag.UnquoteUsage(f)
		if g, ok := f.Value.(flag.Getter); ok && kind == "value" {
			switch g.Get().(type) {
			case int, int64:
				kind = "int"
			case uint64:
				kind = "uint"
			case float64:
				kind = "float"
			case time.Duration:
				kind = "duration"
			}
		}
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n      %s", line, text)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	fmt.Fprintln(w, "  --\n      ends the flags: what follows is an argument even if it starts with -")
	fmt.Fprintln(w)
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("run GRAPH --backend cpu" as well as "run --backend cpu
// GRAPH"). "--" ends the flags: everything after it is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...)) // leaves pos as the positional arguments
}

// flagError reports a flag parsing error: -h and --help print the help
// and succeed, anything else is a usage error.
func flagError(fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		printHelp(os.Stdout, fs)
		return exitOK
	}
	msg := err.Error()
	// The flag package spells flags with one dash; the help uses two.
	msg = strings.Replace(msg, "defined: -", "defined: --", 1)
	msg = strings.Replace(msg, "for flag -", "for flag --", 1)
	msg = strings.Replace(msg, "needs an argument: -", "needs an argument: --", 1)
	return usageError("%s: %s", fs.Name(), msg)
}

// usageError is a bad command line.
func usageError(format string, a ...any) int {
	return fail(ir.Errorf(ir.CodeUsage, -1, "", format, a...))
}

// writeJSON prints v as one JSON object on stdout.
func writeJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "gpucc: encoding result: %v\n", err)
	}
}

// errorJSON is the error object every command prints on failure.
type errorJSON struct {
	Code    ir.Code `json:"code"`
	Message string  `json:"message"`
	Node    *int    `json:"node,omitempty"`
	Field   string  `json:"field,omitempty"`
}

// codeOf returns err's stable code: its own, or internal.
func codeOf(err error) ir.Code {
	var c interface{ ErrorCode() ir.Code }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return ir.CodeInternal
}

// fail prints err as {"error":{"code","message","node","field"}} on stdout
// and returns the exit code: 2 for usage, 1 for anything else.
func fail(err error) int {
	e := errorJSON{Code: codeOf(err), Message: err.Error()}
	var ie *ir.Error
	if errors.As(err, &ie) {
		if ie.Node >= 0 {
			n := ie.Node
			e.Node = &n
		}
		e.Field = ie.Field
	}
	writeJSON(map[string]any{"error": e})
	if e.Code == ir.CodeUsage {
		fmt.Fprintln(os.Stderr, "gpucc: bad command line; 'gpucc help' lists the commands and their flags")
		return exitUsage
	}
	return exitFailure
}

// number is what a bounded flag can hold.
type number interface {
	int | int64 | uint64 | float64 | time.Duration
}

// bounded is a numeric flag that refuses values below min, so that an
// impossible value (a limit of 0, a negative budget) is a usage error
// instead of silently meaning a default.
type bounded[T number] struct {
	p   *T
	min T
}

// atLeast registers a flag of T's type on fs that refuses values below min.
func atLeast[T number](fs *flag.FlagSet, p *T, name string, value, min T, usage string) {
	*p = value
	fs.Var(bounded[T]{p, min}, name, usage)
}

func (b bounded[T]) String() string {
	if b.p == nil {
		return ""
	}
	return fmt.Sprint(*b.p)
}

func (b bounded[T]) Get() any { return *b.p }

func (b bounded[T]) Set(s string) error {
	var v T
	var err error
	switch p := any(&v).(type) {
	case *int:
		*p, err = strconv.Atoi(s)
	case *int64:
		*p, err = strconv.ParseInt(s, 0, 64)
	case *uint64:
		*p, err = strconv.ParseUint(s, 0, 64)
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
		if err == nil && (*p != *p || *p > 1e308) {
			err = errors.New("not a finite number")
		}
	case *time.Duration:
		*p, err = time.ParseDuration(s)
	}
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			err = ne.Err
		}
		return err
	}
	if v < b.min {
		return fmt.Errorf("must be at least %v", b.min)
	}
	*b.p = v
	return nil
}

// readGraph decodes and validates the graph at path ("-" is stdin): protocol
// v1 JSON, or an ONNX model when path ends in .onnx (import.go). A file
// that cannot be read is an io error, not an invalid graph.
func readGraph(path string, limits ir.Limits) (*ir.Graph, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, ir.Errorf(ir.CodeIO, -1, "", "%v", err)
		}
		defer f.Close()
		r = f
		if isONNX(path) {
			return loadSized(r, limits) // modellimits.go
		}
		return ir.Decode(r, limits)
	}
	// Stdin has no name to go by: an ONNX ModelProto starts with the tag of
	// its field 1, ir_version (0x08), which every exporter writes first and
	// no JSON document starts with; anything else is read as a graph.
	br := bufio.NewReader(r)
	if b, err := br.Peek(1); err == nil && b[0] == 0x08 {
		return loadSized(br, limits)
	}
	return ir.Decode(br, limits)
}

// verboseFlag registers --verbose, which lets the webgpu backend print
// wgpu's own log lines on stderr (the GPUCC_VERBOSE environment variable
// does the same) and turns on the progress lines of long compiles.
func verboseFlag(fs *flag.FlagSet) {
	progress = nil
	fs.BoolFunc("verbose", "print wgpu's log messages on stderr (also: GPUCC_VERBOSE=1), and a progress line for a compile past a second ($GPUCC_PROGRESS_AFTER)", func(s string) error {
		on, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		if on {
			progress = os.Stderr
			return os.Setenv("GPUCC_VERBOSE", "1")
		}
		progress = nil
		return os.Unsetenv("GPUCC_VERBOSE")
	})
}

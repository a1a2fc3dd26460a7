// Command gpucc compiles tensor graphs (protocol v1 JSON) into fused
// kernels and runs them.
//
//	gpucc run [--backend auto|webgpu|wasm|cpu|native] [--allow-software] GRAPH.json
//	gpucc build GRAPH.json -o DIR [--dump-after PASS] [--explain] [--package NAME]
//	gpucc train --steps N --lr X [--loss NAME] GRAPH.json
//	gpucc bench [--quick] [-o DIR]
//	gpucc serve [--addr HOST:PORT]
//	gpucc generate --prompt ID,ID,… [--tokens N] [--json] MODEL.onnx
//	gpucc info
//	gpucc version
//	gpucc help [COMMAND]
//
// GRAPH.json may be "-" for stdin; "--" ends the flags. Every command
// prints exactly one JSON object on stdout (build and info may print text
// where asked; help prints text; generate prints the ids it generates
// unless asked for --json). A failure prints
// {"error":{"code","message"}} (with "node" and "field" when the error has
// them) and exits 1; a bad command line is the same object with code
// "usage" and exits 2.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/gpucc/gpucc/internal/rundir"
)

func init() {
	commands["version"] = command{summary: "print the module version and VCS revision as JSON", run: versionCmd}
	commands["help"] = command{summary: "show the commands, or one command's flags", run: helpCmd}
}

func main() {
	rundir.Ensure()
	stop := cpuProfile(os.Getenv("GPUCC_CPUPROFILE"))
	code := mainArgs(os.Args[1:])
	stop()
	os.Exit(code)
}

// cpuProfile starts a CPU profile of the whole command into path, for
// GPUCC_CPUPROFILE (a model's first compile, import to pipelines, as it
// runs on a device's host); empty, it does nothing. A profile that cannot
// be started is reported on stderr and the command runs without it. The
// returned func stops the profile and closes the file.
func cpuProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpucc: GPUCC_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func mainArgs(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return usageError("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return helpCmd(args[1:])
	case "-version", "--version":
		return versionCmd(args[1:])
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageError("unknown command %q", args[0])
	}
	return c.run(args[1:])
}

// helpCmd prints the command list, or a command's help: "gpucc help run"
// is "gpucc run -h".
func helpCmd(args []string) int {
	switch len(args) {
	case 0:
		usage(os.Stdout)
		return exitOK
	case 1:
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			usage(os.Stdout)
			return exitOK
		}
		c, ok := commands[args[0]]
		if !ok {
			return usageError("help: unknown command %q", args[0])
		}
		return c.run([]string{"-h"})
	}
	return usageError("help: want at most one COMMAND, got %q", args)
}

// Version is what gpucc version prints.
type Version struct {
	Module   string `json:"module"`
	Version  string `json:"version"`            // the module version: v1.2.3, a pseudo-version, or (devel)
	Revision string `json:"revision,omitempty"` // the VCS commit it was built from, when known
	Time     string `json:"time,omitempty"`     // that commit's time
	Modified bool   `json:"modified,omitempty"` // the work tree had uncommitted changes
	Go       string `json:"go"`                 // the Go toolchain that built it
}

func versionCmd(args []string) int {
	fs := newFlags("version", "version")
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return usageError("version takes no arguments, got %q", fs.Args())
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fail(fmt.Errorf("the binary holds no build information"))
	}
	v := Version{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	writeJSON(v)
	return exitOK
}

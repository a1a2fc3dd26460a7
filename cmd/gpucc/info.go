package main

import (
	"github.com/gpucc/gpucc/runtime"
	"github.com/gpucc/gpucc/runtime/gpu"
)

func init() {
	commands["info"] = command{summary: "list GPU adapters, their limits, and the backends built in", run: infoCmd}
}

func infoCmd(args []string) int {
	fs := newFlags("info", "info [--verbose]")
	verboseFlag(fs)
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 0 {
		return usageError("info takes no arguments, got %q", fs.Args())
	}
	out := map[string]any{"backends": runtime.Backends(), "chain": runtime.Chain}
	adapters, err := gpu.Adapters()
	if err != nil {
		out["adapterError"] = err.Error()
	}
	out["adapters"] = adapters
	writeJSON(out)
	return 0
}

package main

import (
	lib "github.com/gpucc/gpucc"
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
	out := map[string]any{"backends": lib.Backends(), "chain": lib.Chain}
	adapters, err := adapters()
	if err != nil {
		out["adapterError"] = err.Error()
	}
	out["adapters"] = adapters
	writeJSON(out)
	return 0
}

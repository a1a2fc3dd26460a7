// Package python holds the Python guest module, gpucc (python/gpucc, pure
// Python: see python/README.md), for Go programs that serve it: the demo
// page gives it to its Python guest (web). Its tests are python/tests,
// which go test ./python runs.
package python

import (
	"embed"
	"io/fs"
)

//go:embed gpucc/*.py
var module embed.FS

// Module returns the module's files: gpucc/__init__.py, gpucc/graph.py, ….
func Module() fs.FS { return module }

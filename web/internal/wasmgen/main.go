// Command wasmgen builds the demo page's wasm: cmd/gpucc-web for GOOS=js
// GOARCH=wasm, gzipped, and the toolchain's wasm_exec.js beside it. `go
// generate ./web` runs it into web/static, where git ignores both: only a
// release commit carries them (make release), so that a `go install`ed
// release serves the page with no Go toolchain at run time.
//
// The build is reproducible: fixed flags (-trimpath, -buildvcs=false,
// stripped), a clean environment and a gzip stream without a name or time,
// so that the same sources and the same Go toolchain give the same bytes.
// web's TestEmbeddedPage rebuilds and compares. A file whose bytes would
// not change is left alone, and one that changes is replaced by a rename,
// so that a build reading the directory meanwhile sees the old file or the
// new one, never half of one.
//
//	go run ./internal/wasmgen [-o DIR]
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Files are the generated files, relative to -o.
var Files = []string{"gpucc.wasm.gz", "wasm_exec.js"}

func main() {
	out := flag.String("o", "static", "output directory")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "wasmgen:", err)
		os.Exit(1)
	}
}

func generate(dir string) error {
	tmp, err := os.MkdirTemp("", "wasmgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wasm := filepath.Join(tmp, "gpucc.wasm")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", wasm,
		"github.com/gpucc/gpucc/cmd/gpucc-web")
	build.Env = append(cleanEnv(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(wasm)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // the header has no name and no time
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return err
	}
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %v", err)
	}
	js, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(root)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := write(filepath.Join(dir, Files[0]), gz.Bytes()); err != nil {
		return err
	}
	return write(filepath.Join(dir, Files[1]), js)
}

// write replaces name with b by a rename, unless it already holds b.
func write(name string, b []byte) error {
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, b) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(name), ".wasmgen-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// cleanEnv is the environment without the variables that change what go
// build produces (GOFLAGS, GOOS, GOARCH, GOWASM, ...).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOOS", "GOARCH", "GOWASM", "GOEXPERIMENT", "CGO_ENABLED", "GOAMD64":
			continue
		}
		env = append(env, kv)
	}
	return env
}

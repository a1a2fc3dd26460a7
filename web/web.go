// Package web serves gpucc's browser demo: the page (static/, embedded),
// the GOOS=js build of cmd/gpucc-web and Go's wasm_exec.js that loads it.
//
// `go generate ./web` puts gpucc.wasm and wasm_exec.js into static/ so a
// gpucc binary embeds them; both are build outputs, ignored by git. When
// they are absent, Assets builds them on demand into a directory.
package web

//go:generate sh -c "GOOS=js GOARCH=wasm go build -o static/gpucc.wasm ../cmd/gpucc-web && cp \"$(go env GOROOT)/lib/wasm/wasm_exec.js\" static/"

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed static
var static embed.FS

// Generated are the files go generate adds to static/.
var Generated = []string{"gpucc.wasm", "wasm_exec.js"}

// Assets returns the files the page is served from. Generated files missing
// from the embedded page are built into dir (with the go command, so the
// working directory must be inside the gpucc module).
func Assets(dir string) (fs.FS, error) {
	page, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	missing := false
	for _, f := range Generated {
		if _, err := fs.Stat(page, f); err != nil {
			missing = true
		}
	}
	if !missing {
		return page, nil
	}
	if err := Build(dir); err != nil {
		return nil, err
	}
	return overlay{page, os.DirFS(dir)}, nil
}

// Build compiles cmd/gpucc-web for GOOS=js GOARCH=wasm into dir/gpucc.wasm
// and copies the toolchain's wasm_exec.js beside it.
func Build(dir string) error {
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "gpucc.wasm"), "github.com/gpucc/gpucc/cmd/gpucc-web")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building gpucc.wasm (run go generate ./web, or serve from inside the gpucc module): %v\n%s", err, out)
	}
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("finding GOROOT for wasm_exec.js: %v", err)
	}
	js, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(root)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return fmt.Errorf("reading wasm_exec.js: %v", err)
	}
	return os.WriteFile(filepath.Join(dir, "wasm_exec.js"), js, 0o644)
}

// Handler serves assets, uncached so a rebuilt wasm is always picked up.
func Handler(assets fs.FS) http.Handler {
	files := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		files.ServeHTTP(w, r)
	})
}

// overlay serves a file from the first file system that has it.
type overlay []fs.FS

func (o overlay) Open(name string) (fs.File, error) {
	var err error
	for _, f := range o {
		var file fs.File
		if file, err = f.Open(name); err == nil {
			return file, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

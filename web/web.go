// Package web serves gpucc's browser demo: the page (static/), the GOOS=js
// build of cmd/gpucc-web that runs graphs in it and Go's wasm_exec.js that
// loads that build, all embedded in the binary.
//
// The wasm (static/gpucc.wasm.gz) and wasm_exec.js are built by `go
// generate ./web` (internal/wasmgen: fixed flags, reproducible) and are not
// in ordinary commits: git ignores them, and only a release commit (make
// release) carries them, so that a `go install`ed release serves the page
// from any directory with no Go toolchain. A binary built without them
// still compiles and serves everything else; the page's paths answer 503
// with NotBuilt. make build, make demo and make test generate them first;
// TestEmbeddedPage fails when the embedded copy is older than the sources.
package web

//go:generate go run ./internal/wasmgen -o static

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpucc/gpucc/internal/modellimits"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/python"
	"github.com/gpucc/gpucc/runtime/wasm"
)

//go:embed static
var static embed.FS

// Assets returns the page's files as embedded in the binary.
func Assets() fs.FS {
	page, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // "static" is a valid path; fs.Sub cannot fail
	}
	return page
}

// Page is the file whose absence means the page was not built: the GOOS=js
// gpucc, gzipped.
const Page = "gpucc.wasm.gz"

// NotBuilt is what the page's paths answer when the binary was built
// without the generated files.
const NotBuilt = "gpucc: the demo page is not built into this binary. " +
	"In a checkout of the gpucc module, run `go generate ./web` and build again " +
	"(make build does both), or install a release: " +
	"go install github.com/gpucc/gpucc/cmd/gpucc@latest\n"

// Built reports whether assets hold the generated page (Page).
func Built(assets fs.FS) bool {
	_, err := fs.Stat(assets, Page)
	return err == nil
}

// pagePaths are the paths that need the generated files: the page itself
// and what it loads.
var pagePaths = []string{"/", "/index.html", "/gpucc.wasm", "/wasm_exec.js"}

// asset is one file, held gzipped, with its ETag.
type asset struct {
	name  string
	gz    []byte // the gzip encoding
	etag  string // of the content; the gzip representation adds "-gz"
	plain func() ([]byte, error)
}

// Handler serves the files of assets: gzip-encoded to clients that accept
// it (a file NAME.gz is served as NAME, already compressed; the others are
// compressed once here), with a strong ETag and Cache-Control: no-cache,
// so that a browser revalidates and a rebuilt page is never served stale
// but an unchanged one costs a 304. "/" is index.html. Where assets lack
// the generated files (Built is false), the page's paths answer 503
// Service Unavailable with NotBuilt instead.
func Handler(assets fs.FS) (http.Handler, error) {
	files := map[string]*asset{}
	if err := addFiles(files, assets, ""); err != nil {
		return nil, fmt.Errorf("web: reading the page: %w", err)
	}
	// The Python guest's module, for the page's Python card (python.js).
	if err := addFiles(files, python.Module(), "python/"); err != nil {
		return nil, fmt.Errorf("web: the Python module: %w", err)
	}
	var module []string // python/files.json: the module's paths, for the guest to fetch
	for p := range files {
		if strings.HasPrefix(p, "/python/") {
			module = append(module, strings.TrimPrefix(p, "/python/"))
		}
	}
	slices.Sort(module)
	list, _ := json.Marshal(module)
	a, err := newAsset("python/files.json", list)
	if err != nil {
		return nil, err
	}
	files["/python/files.json"] = a
	built := Built(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isolate(w.Header())
		p := r.URL.Path
		if p == "/"+wasmBuildPath {
			serveBuild(w, r)
			return
		}
		if !built && slices.Contains(pagePaths, p) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, NotBuilt)
			return
		}
		if p == "/" {
			p = "/index.html"
		}
		a := files[p]
		if a == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("Vary", "Accept-Encoding")
		if ct := mime.TypeByExtension(path.Ext(a.name)); ct != "" {
			h.Set("Content-Type", ct)
		}
		body, etag := a.gz, `"`+a.etag+`-gz"`
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
		} else {
			b, err := a.plain()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			body, etag = b, `"`+a.etag+`"`
		}
		h.Set("ETag", etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(body))
	}), nil
}

// isolate sets the headers that make the page cross-origin isolated
// (crossOriginIsolated true): only such a page has SharedArrayBuffer and
// shared WebAssembly memory, which the page's wasm backend runs its
// threads on (runtime/wasm). Everything the page loads is served here,
// same-origin, so require-corp refuses none of it.
func isolate(h http.Header) {
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Embedder-Policy", "require-corp")
}

// wasmBuildPath is where the page's wasm backend asks for its modules
// (runtime/wasm's BuildPath, relative to the page).
const wasmBuildPath = "wasm/module"

// ModulePath is the path of Handler's wasm module endpoint, which builds
// what the page posts with this machine's Clang: a server in front of
// Handler (gpucc serve) authorizes it as its API.
const ModulePath = "/" + wasmBuildPath

// builds admits one module build at a time: each is a Clang process.
var builds = make(chan struct{}, 1)

// MaxModuleRequest bounds the body of a module build request (POST
// /wasm/module): wasm.MaxBuildRequest, and one byte over it is 413.
const MaxModuleRequest = wasm.MaxBuildRequest

// ModuleBytes is what a module build of a body of declared length cl
// holds at most: the body, and wasm.MaxBuildDecodedPerByte bytes a byte
// of it decoded, plus a MiB; a body of no declared length (chunked) is
// charged as the largest one. A server that budgets its memory (gpucc
// serve's --max-memory) charges a build this much.
func ModuleBytes(cl int64) int64 {
	if cl < 0 || cl > MaxModuleRequest {
		cl = MaxModuleRequest
	}
	return (1+wasm.MaxBuildDecodedPerByte)*cl + 1<<20
}

// serveBuild answers the page's wasm backend, which has no Clang: POST a
// runtime/wasm BuildRequest (a program or a typed graph, never C), get
// the module this machine's Clang builds of the C generated here
// (wasm.ServeBuild). A request that does not decode or validate is 400;
// one over wasm.MaxBuildRequest, 413; no toolchain here, 503; the message
// says which.
func serveBuild(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a runtime/wasm BuildRequest", http.StatusMethodNotAllowed)
		return
	}
	select {
	case builds <- struct{}{}:
		defer func() { <-builds }()
	case <-r.Context().Done():
		return
	}
	// One byte over the bound reaches ServeBuild, which answers it
	// limit_exceeded (413), where the reader's own error was a 400.
	b, err := wasm.ServeBuild(r.Context(), http.MaxBytesReader(w, r.Body, wasm.MaxBuildRequest+1), modellimits.Caps(wasm.MaxBuildRequest))
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, ir.ErrLimitExceeded):
			status = http.StatusRequestEntityTooLarge
		case errors.Is(err, ir.ErrBackendUnavailable):
			status = http.StatusServiceUnavailable
		case errors.Is(err, ir.ErrInternal):
			status = http.StatusInternalServerError
		}
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// addFiles adds every file of fsys to files under "/"+prefix+its name:
// gzip-encoded (a NAME.gz is NAME, compressed already), with its ETag.
func addFiles(files map[string]*asset, fsys fs.FS, prefix string) error {
	return fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		a, err := newAsset(name, b)
		if err != nil {
			return err
		}
		files["/"+prefix+a.name] = a
		return nil
	})
}

// newAsset is file name, of contents b (gzip-compressed already when name
// ends in .gz).
func newAsset(name string, b []byte) (*asset, error) {
	a := &asset{name: name}
	var err error
	if strings.HasSuffix(name, ".gz") {
		a.name, a.gz = strings.TrimSuffix(name, ".gz"), b
	} else if a.gz, err = compress(b); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(a.gz)
	a.etag = hex.EncodeToString(sum[:12])
	gz := a.gz
	a.plain = sync.OnceValues(func() ([]byte, error) {
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	})
	return a, nil
}

// WithPyodide serves dir (an npm install of pyodide: pyodide.js,
// pyodide.asm.wasm, python_stdlib.zip, …) under /pyodide/ beside page, for
// the page's Python guest; dir "" serves nothing there (the page then
// hides its Python card).
func WithPyodide(page http.Handler, dir string) http.Handler {
	if dir == "" {
		return page
	}
	mux := http.NewServeMux()
	files := http.StripPrefix("/pyodide/", http.FileServer(http.Dir(dir)))
	mux.Handle("/pyodide/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isolate(w.Header())
		files.ServeHTTP(w, r)
	}))
	mux.Handle("/", page)
	return mux
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") || strings.TrimSpace(coding) == "*" {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

func compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	err := zw.Close()
	return buf.Bytes(), err
}

// Package web serves gpucc's browser demo: the page (static/), the GOOS=js
// build of cmd/gpucc-web that runs graphs in it and Go's wasm_exec.js that
// loads that build, all embedded in the binary.
//
// The wasm is committed as static/gpucc.wasm.gz, built by `go generate
// ./web` (internal/wasmgen: fixed flags, reproducible), so that a `go
// install`ed gpucc serves the page from any directory with no Go toolchain.
// TestGeneratedUpToDate fails when the sources have moved on: run go
// generate ./web and commit the result.
package web

//go:generate go run ./internal/wasmgen -o static

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
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
// but an unchanged one costs a 304. "/" is index.html.
func Handler(assets fs.FS) (http.Handler, error) {
	files := map[string]*asset{}
	err := fs.WalkDir(assets, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, name)
		if err != nil {
			return err
		}
		a := &asset{name: name}
		if strings.HasSuffix(name, ".gz") {
			a.name, a.gz = strings.TrimSuffix(name, ".gz"), b
		} else if a.gz, err = compress(b); err != nil {
			return err
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
		files["/"+a.name] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: reading the page: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
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

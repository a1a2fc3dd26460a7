package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate rebuilds the committed wasm and wasm_exec.js with
// go generate's command and compares the bytes: a change to cmd/gpucc-web
// or a package it imports must come with `go generate ./web`.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the page's wasm")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./internal/wasmgen", "-o", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wasmgen: %v\n%s", err, out)
	}
	for _, f := range []string{"gpucc.wasm.gz", "wasm_exec.js"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("static", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("static/%s is out of date with the sources (or was built by another Go toolchain): run `go generate ./web` and commit it", f)
		}
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(handler(t))
	defer srv.Close()
	get := func(path, encoding, etag string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // no transparent gunzip
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	page, _ := os.ReadFile("static/index.html")
	for _, path := range []string{"/", "/index.html", "/app.js", "/wasm_exec.js", "/gpucc.wasm"} {
		t.Run(path, func(t *testing.T) {
			gz := get(path, "br, gzip;q=0.8", "")
			if gz.StatusCode != 200 || gz.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("gzip: %s, Content-Encoding %q", gz.Status, gz.Header.Get("Content-Encoding"))
			}
			if cc := gz.Header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("Cache-Control %q", cc)
			}
			zr, err := gzip.NewReader(gz.Body)
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			plain := get(path, "identity", "")
			if plain.Header.Get("Content-Encoding") != "" {
				t.Errorf("encoded for a client that accepts none: %q", plain.Header.Get("Content-Encoding"))
			}
			body, _ := io.ReadAll(plain.Body)
			if !bytes.Equal(body, unzipped) {
				t.Errorf("the plain body (%d bytes) differs from the gunzipped one (%d bytes)", len(body), len(unzipped))
			}
			if path == "/" && !bytes.Equal(body, page) {
				t.Errorf("/ is not index.html")
			}
			if path == "/gpucc.wasm" && (plain.Header.Get("Content-Type") != "application/wasm" || !bytes.HasPrefix(body, []byte("\x00asm"))) {
				t.Errorf("gpucc.wasm: Content-Type %q, starts %q", plain.Header.Get("Content-Type"), body[:min(4, len(body))])
			}
			etag, plainTag := gz.Header.Get("ETag"), plain.Header.Get("ETag")
			if etag == "" || etag == plainTag || !strings.HasPrefix(etag, `"`) {
				t.Errorf("ETags %q (gzip) and %q (plain): want two different strong tags", etag, plainTag)
			}
			if again := get(path, "gzip", etag); again.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match %s: %s, want 304", etag, again.Status)
			}
		})
	}
	for _, path := range []string{"/nope", "/gpucc.wasm.gz", "/../web.go", "/static/index.html"} {
		if r := get(path, "gzip", ""); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", path, r.Status)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "deflate, gzip": true, "GZIP": true, "gzip;q=0": false,
		"br;q=1.0, gzip; q=0.5": true, "*": true, "identity": false, "gzip;q=0.000": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", h)
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: %v, want %v", h, got, want)
		}
	}
}

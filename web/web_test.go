package web

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// built is the page as go generate ./web builds it from the current
// sources, into a directory of its own beside copies of static/'s other
// files: the tests that need the page use it, not the embedded copy, which
// was fixed when the test binary was built and may be older or absent.
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gpucc-web-page-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	cmd := exec.Command("go", "run", "./internal/wasmgen", "-o", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("wasmgen: %v\n%s", err, out)
	}
	entries, err := os.ReadDir("static")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || slices.Contains(generated, e.Name()) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("static", e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
})

// generated are the files wasmgen writes (its Files).
var generated = []string{"gpucc.wasm.gz", "wasm_exec.js"}

// builtDir is built's directory, once made, for TestMain to remove.
var builtDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// builtPage returns the page built from the current sources.
func builtPage(t *testing.T) fs.FS {
	t.Helper()
	dir, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return os.DirFS(dir)
}

// TestEmbeddedPage: the page embedded in this binary is either absent (a
// plain go build of a commit that is not a release: the page's paths say
// how to build it) or the one go generate builds from the current sources,
// byte for byte. GPUCC_REQUIRE_PAGE (make release-check) makes absence or
// an older page a failure; without it an older page is a skip that says
// to run go generate ./web (it is an ignored build output, which make
// build and make test regenerate first).
func TestEmbeddedPage(t *testing.T) {
	if !Built(Assets()) {
		if os.Getenv("GPUCC_REQUIRE_PAGE") != "" {
			t.Fatalf("the binary embeds no %s and GPUCC_REQUIRE_PAGE is set", Page)
		}
		srv := httptest.NewServer(handler(t))
		defer srv.Close()
		for _, path := range pagePaths {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || string(body) != NotBuilt {
				t.Errorf("GET %s without the page: %s %q, want 503 %q", path, resp.Status, body, NotBuilt)
			}
		}
		t.Skipf("static/%s is not generated; the handler says so (run go generate ./web)", Page)
	}
	page := builtPage(t)
	for _, f := range generated {
		want, err := fs.ReadFile(page, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(Assets(), f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			msg := fmt.Sprintf("the embedded static/%s is older than the sources (or was built by another Go toolchain): run `go generate ./web`", f)
			if os.Getenv("GPUCC_REQUIRE_PAGE") == "" {
				// An ignored build output, not the source tree, is stale:
				// the page tests use their own build, and make build, make
				// test and make release regenerate it first.
				t.Skip(msg)
			}
			t.Error(msg)
		}
	}
}

// TestNotBuilt: assets without the generated files still make a handler,
// which answers the page's paths with NotBuilt and serves the rest.
func TestNotBuilt(t *testing.T) {
	assets := fstest.MapFS{"index.html": {Data: []byte("<html>")}, "app.js": {Data: []byte("//")}}
	if Built(assets) {
		t.Fatal("Built without the wasm")
	}
	h, err := Handler(assets)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for path, want := range map[string]int{"/": 503, "/index.html": 503, "/gpucc.wasm": 503, "/wasm_exec.js": 503, "/app.js": 200, "/nope": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 503 && string(body) != NotBuilt) {
			t.Errorf("GET %s: %s %q, want %d", path, resp.Status, body, want)
		}
	}
	if !Built(fstest.MapFS{Page: {Data: []byte{}}}) {
		t.Error("not Built with the wasm")
	}
}

func TestHandler(t *testing.T) {
	h, err := Handler(builtPage(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
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

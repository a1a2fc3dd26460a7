package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/chromium"
)

// serve starts the installed gpucc serve in workDir, with no Go toolchain
// on PATH, and returns its URL. It stops when the test ends.
func serve(t *testing.T, extraEnv ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = workDir
	cmd.Env = env(extraEnv...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving the demo on "); ok {
			url = strings.TrimSuffix(u, "/")
		}
	}
	if url == "" {
		t.Fatalf("serve never said where it listens: %v", lines.Err())
	}
	go io.Copy(io.Discard, stderr)
	return url, cmd
}

// TestInstalled is the "done when": a go install'ed gpucc, run
// from a directory outside the module with no Go toolchain on PATH, runs a
// graph, builds a package and serves a demo page that works in Chromium.
func TestInstalled(t *testing.T) {
	if p, err := exec.LookPath("go"); err == nil && strings.Contains(noGo, filepath.Dir(p)) {
		t.Fatalf("go is on the PATH gpucc runs with: %s", p)
	}
	seed := example("seed.json")
	t.Run("run", func(t *testing.T) {
		if out, _, code := gpucc(t, "", "run", "--backend", "cpu", seed); code != 0 || !strings.Contains(out, `"data":[0,60,120]`) {
			t.Errorf("exit %d: %s", code, out)
		}
	})
	t.Run("build a package", func(t *testing.T) {
		dir := filepath.Join(workDir, "seedpkg")
		defer os.RemoveAll(dir)
		if out, _, code := gpucc(t, "", "build", seed, "-o", dir, "--package", "seed"); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		gofiles, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil || len(gofiles) == 0 {
			t.Errorf("the build lacks manifest.json or Go files: %v, %v", err, gofiles)
		}
	})
	t.Run("serve the demo", func(t *testing.T) {
		start := time.Now()
		url, _ := serve(t)
		t.Logf("listening %v after start", time.Since(start).Round(time.Millisecond))
		req, _ := http.NewRequest("GET", url+"/gpucc.wasm", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("ETag") == "" {
			t.Errorf("GET /gpucc.wasm: %s, Content-Encoding %q, ETag %q", resp.Status, resp.Header.Get("Content-Encoding"), resp.Header.Get("ETag"))
		}
		ctx := chromium.Open(t, url+"/?life=0", 3*time.Minute)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo && (window.demo.ready || window.demo.error)`)); err != nil {
			t.Fatal(err)
		}
		if e, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.demo.error ? String(window.demo.error) : ""`)); e != "" {
			t.Fatalf("the page failed: %s", e)
		}
		graph, err := os.ReadFile(seed)
		if err != nil {
			t.Fatal(err)
		}
		expr := fmt.Sprintf(`gpucc.run(%s, {backend: "auto"}).then(r => JSON.stringify(r), e => JSON.stringify({error: {code: e.code, message: String(e.message || e)}}))`, graph)
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Backend string `json:"backend"`
			Outputs map[string]struct {
				Data []float32 `json:"data"`
			} `json:"outputs"`
			FallbackAttempts []struct{ Backend string } `json:"fallbackAttempts"`
			Error            any                        `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Error != nil {
			t.Fatalf("gpucc.run in the page: %v %s", err, out)
		}
		if got := fmt.Sprint(r.Outputs["values"].Data); got != "[0 60 120]" {
			t.Errorf("the page computed %s, want [0 60 120]; %s", got, out)
		}
		for _, a := range r.FallbackAttempts {
			if a.Backend == "wasm" {
				t.Errorf("the page's auto tried wasm, which cannot start in a browser: %s", out)
			}
		}
		t.Logf("the page ran the seed on %s", r.Backend)
	})
}

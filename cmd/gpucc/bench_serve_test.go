package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBenchCLI(t *testing.T) {
	dir := t.TempDir()
	_, v, code := gpucc(t, "", "bench", "--quick", "--backends", "cpu", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %v", code, v)
	}
	// stderr piped: no progress bar in the log.
	cmd := exec.Command(binary, "bench", "--quick", "--backends", "cpu", "-o", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || strings.Contains(stderr.String(), "\r") {
		t.Errorf("piped stderr: %v, %q", err, stderr.String())
	}
	if n, _ := v["cases"].(float64); n == 0 {
		t.Errorf("no cases: %v", v)
	}
	if _, ok := v["wallSeconds"].(float64); !ok {
		t.Errorf("wallSeconds = %#v, want a number like results.json's", v["wallSeconds"])
	}
	for _, f := range []string{"results.json", "results.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestBenchCLIErrors: a bench that cannot measure anything fails with one
// JSON error object, before writing a report.
func TestBenchCLIErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code string
	}{
		{"unknown backend", []string{"--backends", "cpu,nope"}, "backend_unavailable"},
		{"nothing measured", []string{"--backends", "cpu", "--budget", "1ns"}, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			_, v, code := gpucc(t, "", append([]string{"bench", "--quick", "-o", dir}, tt.args...)...)
			if code == 0 || errorCode(v) != tt.code {
				t.Errorf("exit %d, %v; want error code %s", code, v, tt.code)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("a failed bench wrote %s", dir)
			}
		})
	}
}

// TestServe serves the demo, refuses paths outside it, and on SIGINT
// exits 0.
func TestServe(t *testing.T) {
	tmp := t.TempDir()
	url, cmd := serve(t, "TMPDIR="+tmp)
	for _, path := range []string{"/", "/gpucc.wasm", "/wasm_exec.js"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
	}
	// The parent of the working directory holds a secret. Raw requests, so
	// that no client cleans the path.
	if err := os.WriteFile(filepath.Join(filepath.Dir(workDir), "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/../secret", "/%2e%2e/secret", "/..%2fsecret", "//../secret"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.0\r\n\r\n", path)
		resp, _ := io.ReadAll(conn)
		conn.Close()
		if status, _, _ := strings.Cut(string(resp), "\r\n"); strings.Contains(status, " 200 ") || strings.HasSuffix(string(resp), "secret") {
			t.Errorf("GET %s served a file outside the demo: %s", path, status)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("serve left %v behind in TMPDIR", left)
	}
}

package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHelp: help is asked for, so it goes to stdout and exits 0; every
// command's help says what it prints and what its exit codes mean.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "help"}, {"help", "-h"}, {"help", "--help"}} {
		out, stderr, code := gpuccStderr(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage: gpucc COMMAND") || !strings.Contains(out, "exit status") {
			t.Errorf("gpucc %v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
	for name := range commands {
		if name == "help" {
			continue
		}
		for _, args := range [][]string{{"help", name}, {name, "-h"}, {name, "--help"}} {
			out, _, code := gpuccStderr(t, "", args...)
			if code != 0 {
				t.Errorf("gpucc %v: exit %d: %s", args, code, out)
			}
			for _, want := range []string{"usage: gpucc " + name, "Prints", "exit status:", "2  bad command line"} {
				if !strings.Contains(out, want) {
					t.Errorf("gpucc %v lacks %q:\n%s", args, want, out)
				}
			}
		}
	}
	out, _, _ := gpuccStderr(t, "", "run", "-h")
	for _, want := range []string{"--allow-software\n", "--max-nodes int", "--verbose", "--\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("run -h lacks %q:\n%s", want, out)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		_, v, code := gpucc(t, "", args...)
		if code != 0 {
			t.Fatalf("gpucc %v: exit %d: %v", args, code, v)
		}
		if v["module"] != "github.com/gpucc/gpucc" || v["go"] != runtime.Version() || v["version"] == "" {
			t.Errorf("gpucc %v = %v", args, v)
		}
		// The go command stamps the revision from a clone (a .git
		// directory), not from a git worktree (a .git file).
		if st, err := os.Stat("../../.git"); err != nil || !st.IsDir() {
			t.Logf("not in a git clone; revision %v", v["revision"])
			continue
		}
		head, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v["revision"], strings.TrimSpace(string(head)); got != want {
			t.Errorf("gpucc %v: revision %v, want HEAD %s", args, got, want)
		}
	}
}

// TestUsageErrors: a bad command line exits 2 with one JSON error object
// of code usage, whatever is wrong with it.
func TestUsageErrors(t *testing.T) {
	seed := example("seed.json")
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no command", nil, "no command"},
		{"unknown command", []string{"frobnicate"}, `unknown command \"frobnicate\"`},
		{"unknown flag", []string{"run", "--nope", seed}, "--nope"},
		{"help for an unknown command", []string{"help", "nope"}, "nope"},
		{"max-nodes 0", []string{"run", "--max-nodes", "0", seed}, "--max-nodes: must be at least 1"},
		{"max-nodes -1", []string{"run", "--max-nodes", "-1", seed}, "--max-nodes: must be at least 1"},
		{"max-ops 0", []string{"train", "--max-ops", "0", "--steps", "1", "--lr", "1", seed}, "--max-ops"},
		{"max-elements not a number", []string{"build", "--max-elements", "lots", "-o", "x", seed}, "--max-elements"},
		{"negative budget", []string{"bench", "--budget", "-1s"}, "--budget: must be at least 0s"},
		{"negative max-case-ms", []string{"bench", "--max-case-ms", "-5"}, "--max-case-ms"},
		{"unknown upload path", []string{"bench", "--backends", "cpu", "--upload", "nope"}, "--upload"},
		{"info with an argument", []string{"info", "x"}, "no arguments"},
		{"version with an argument", []string{"version", "x"}, "no arguments"},
		{"serve: no port", []string{"serve", "--addr", "localhost"}, "missing port"},
		{"serve: max-pending 0", []string{"serve", "--max-pending", "0"}, "--max-pending: must be at least 1"},
		{"serve: negative grace", []string{"serve", "--grace", "-1s"}, "--grace"},
		{"serve: timeout 0", []string{"serve", "--timeout", "0"}, "--timeout"},
		{"two graphs", []string{"run", seed, seed}, "exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, v, code := gpucc(t, "", tt.args...)
			if code != 2 || errorCode(v) != "usage" {
				t.Errorf("exit %d, %s; want 2 and code usage", code, out)
			}
			if !strings.Contains(out, tt.msg) {
				t.Errorf("message lacks %q: %s", tt.msg, out)
			}
		})
	}
}

// TestDoubleDash: "--" ends the flags, so a graph may be named -x.json.
func TestDoubleDash(t *testing.T) {
	seed, err := os.ReadFile(example("seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workDir, "-dash.json"), seed, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(filepath.Join(workDir, "-dash.json"))
	for _, args := range [][]string{
		{"run", "--backend", "cpu", "--", "-dash.json"},
		{"run", "--", "-dash.json"},
		{"run", "--max-nodes", "9", "--", "-dash.json"},
	} {
		if out, _, code := gpucc(t, "", args...); code != 0 || !strings.Contains(out, `"outputs"`) {
			t.Errorf("gpucc %v: exit %d: %s", args, code, out)
		}
	}
	// After "--" a flag is an argument: two arguments, a usage error.
	if out, _, code := gpucc(t, "", "run", "--", "-dash.json", "--backend"); code != 2 {
		t.Errorf("run -- FILE --backend: exit %d, want 2: %s", code, out)
	}
}

// TestErrorClasses: failures of the environment are io, not internal,
// execution_failed or invalid_graph; the same mistake has the same code
// in every command; errors carry node and field.
func TestErrorClasses(t *testing.T) {
	seed := example("seed.json")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unwritable := filepath.Join(file, "out") // under a regular file: even root cannot create it
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		args []string
		code string
	}{
		{"missing graph", []string{"run", filepath.Join(workDir, "missing.json")}, "io"},
		{"missing graph, train", []string{"train", "--steps", "1", "--lr", "1", filepath.Join(workDir, "missing.json")}, "io"},
		{"a directory as the graph", []string{"run", "--backend", "cpu", t.TempDir()}, "io"},
		{"a directory as the graph, build", []string{"build", t.TempDir(), "-o", t.TempDir()}, "io"},
		{"build into an unwritable directory", []string{"build", seed, "-o", unwritable}, "io"},
		{"bench into an unwritable directory", []string{"bench", "--quick", "--backends", "cpu", "--budget", "1ms", "-o", unwritable}, "io"},
		{"bench --compare a missing file", []string{"bench", "--compare", filepath.Join(workDir, "missing.json")}, "io"},
		{"busy port", []string{"serve", "--addr", busy.Addr().String()}, "io"},
		{"unknown backend, run", []string{"run", "--backend", "cuda", seed}, "backend_unavailable"},
		{"unknown backend, bench", []string{"bench", "--backends", "cuda"}, "backend_unavailable"},
		{"unknown backend, train", []string{"train", "--backend", "cuda", "--steps", "1", "--lr", "1", seed}, "backend_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, v, code := gpucc(t, "", tt.args...)
			if code != 1 || errorCode(v) != tt.code {
				t.Errorf("exit %d, %s; want 1 and code %s", code, out, tt.code)
			}
		})
	}
	t.Run("node and field", func(t *testing.T) {
		bad := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},{"id":1,"op":"add","a":0,"b":7}],"outputs":[{"name":"y","id":1}]}`
		_, v, code := gpucc(t, bad, "run", "--backend", "cpu", "-")
		e, _ := v["error"].(map[string]any)
		if code != 1 || e["code"] != "invalid_graph" || e["node"] != 1.0 || e["field"] != "b" {
			t.Errorf("exit %d, error %v; want invalid_graph at node 1, field b", code, e)
		}
		_, v, _ = gpucc(t, "", "run", "--max-nodes", "1", seed)
		e, _ = v["error"].(map[string]any)
		if _, ok := e["node"]; ok || e["field"] != "nodes" {
			t.Errorf("a graph-wide limit: error %v; want field nodes and no node", e)
		}
	})
}

// TestBinaryGraph: bytes that are not JSON at all (a device such as
// /dev/urandom, a binary file) are invalid_graph with a message that says
// what is wrong where, never a sentence with its noun missing.
func TestBinaryGraph(t *testing.T) {
	for _, doc := range []string{"\x00\x01", "X\xff\xfe{", "\xa7\x13garbage"} {
		out, v, code := gpucc(t, doc, "run", "--backend", "cpu", "-")
		e, _ := v["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != 1 || errorCode(v) != "invalid_graph" || strings.HasSuffix(strings.TrimSpace(msg), "got") || !strings.Contains(msg, "byte 0") {
			t.Errorf("%q: exit %d, %s; want invalid_graph naming byte 0", doc, code, out)
		}
	}
}

// TestFlagNames: messages name the flag the caller can pass, not a Go
// field.
func TestFlagNames(t *testing.T) {
	out, v, code := gpucc(t, "", "run", "--backend", "webgpu", example("seed.json"))
	if code == 0 {
		t.Skip("a hardware adapter is present")
	}
	if errorCode(v) == "backend_unavailable" && !strings.Contains(out, "software") {
		t.Skipf("webgpu is unavailable for another reason: %s", out)
	}
	if !strings.Contains(out, "--allow-software") || strings.Contains(out, "AllowSoftware") {
		t.Errorf("the software-adapter refusal should name --allow-software: %s", out)
	}
}

// TestVerbose: wgpu's log lines reach stderr with --verbose, and only
// then.
func TestVerbose(t *testing.T) {
	args := []string{"run", "--backend", "webgpu", "--allow-software", example("seed.json")}
	out, quiet, code := gpuccStderr(t, "", args...)
	if code != 0 {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatalf("exit %d: %s", code, out)
		}
		t.Skipf("no webgpu here (exit %d)", code)
	}
	if quiet != "" {
		t.Errorf("stderr without --verbose is not empty:\n%s", quiet)
	}
	out, loud, code := gpuccStderr(t, "", append(args, "--verbose")...)
	if code != 0 || !strings.Contains(loud, "[wgpu]") {
		t.Errorf("run --verbose: exit %d, stderr holds no wgpu log line:\n%s\n%s", code, loud, out)
	}
}

// TestStdin: "-" reads the graph from stdin.
func TestStdin(t *testing.T) {
	seed, err := os.ReadFile(example("seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, v, code := gpucc(t, string(seed), "run", "--backend", "cpu", "-")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, v)
	}
	want := map[string]any{"values": map[string]any{"shape": []any{3.0}, "data": []any{0.0, 60.0, 120.0}}}
	if diff := cmp.Diff(want, v["outputs"]); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

// TestOneFormat: usage errors and failures print the same object shape.
func TestOneFormat(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"run", "--nope"}, {"run", "/nonexistent.json"}} {
		out, _, _ := gpucc(t, "", args...)
		var v struct {
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Error["code"] == nil || v.Error["message"] == nil {
			t.Errorf("gpucc %v: %q is not {\"error\":{\"code\",\"message\"}}", args, out)
		}
	}
}

// TestAllowSoftwareAgrees: every command that opens a GPU documents
// --allow-software the same way, off by default: bench once accepted
// lavapipe unasked while run refused it.
func TestAllowSoftwareAgrees(t *testing.T) {
	flagHelp := func(cmd string) string {
		out, _, code := gpuccStderr(t, "", cmd, "-h")
		if code != 0 {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		_, rest, ok := strings.Cut(out, "  --allow-software\n")
		if !ok {
			t.Fatalf("%s -h has no --allow-software line (a boolean):\n%s", cmd, out)
		}
		text, _, _ := strings.Cut(rest, "\n")
		return strings.TrimSpace(text)
	}
	want := flagHelp("run")
	if strings.Contains(want, "default") {
		t.Errorf("run's --allow-software has a default: %q", want)
	}
	for _, cmd := range []string{"train", "bench", "serve"} {
		if got := flagHelp(cmd); got != want {
			t.Errorf("%s --allow-software: %q; run's: %q", cmd, got, want)
		}
	}
}

// TestNoRuntimeDirNoise: without XDG_RUNTIME_DIR a webgpu run prints no
// "XDG_RUNTIME_DIR is invalid" lines from Mesa on stderr.
func TestNoRuntimeDirNoise(t *testing.T) {
	cmd := exec.Command(binary, "run", "--backend", "webgpu", "--allow-software", example("seed.json"))
	cmd.Dir = workDir
	for _, kv := range env("TMPDIR=" + t.TempDir()) {
		if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" && strings.Contains(string(out), "backend_unavailable") {
		t.Skipf("no webgpu here: %s", out)
	}
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	if strings.Contains(stderr.String(), "XDG_RUNTIME_DIR") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

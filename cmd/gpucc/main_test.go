package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	binary  string // gpucc, installed with go install
	workDir string // an empty directory outside the module, where gpucc runs
	noGo    string // PATH without the Go toolchain
)

// TestMain installs gpucc with go install into a temporary GOBIN, as a user
// would, and runs every command from a temporary directory outside the
// module with no go command on PATH.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpucc-cli")
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "bin")
	// The page is generated, not committed: build it from the current
	// sources first, as make build does, so that the installed binary
	// embeds it (TestInstalled, TestServe). A release check
	// (GPUCC_REQUIRE_PAGE) tests the release's own files instead.
	if os.Getenv("GPUCC_REQUIRE_PAGE") == "" {
		if out, err := exec.Command("go", "generate", "github.com/gpucc/gpucc/web").CombinedOutput(); err != nil {
			panic("go generate ./web: " + err.Error() + "\n" + string(out))
		}
	}
	install := exec.Command("go", "install", "-buildvcs=true", ".") // stamped like a release build
	install.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		panic(string(out))
	}
	binary = filepath.Join(bin, "gpucc")
	workDir = filepath.Join(dir, "work")
	if err := os.Mkdir(workDir, 0o755); err != nil {
		panic(err)
	}
	noGo = pathWithout("go")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pathWithout returns $PATH less the directories that hold program.
func pathWithout(program string) string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, program)); err != nil {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// env is the environment gpucc runs in: PATH without go.
func env(extra ...string) []string {
	return append(os.Environ(), append([]string{"XDG_RUNTIME_DIR=/tmp", "PATH=" + noGo}, extra...)...)
}

// example returns the absolute path of a file under the repository's
// examples/ (gpucc runs outside the module, so relative paths would not do).
func example(name string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", name))
	if err != nil {
		panic(err)
	}
	return p
}

// gpucc runs the binary in workDir and returns stdout, decoded JSON (if
// any) and the exit code.
func gpucc(t *testing.T, stdin string, args ...string) (string, map[string]any, int) {
	t.Helper()
	out, _, code := gpuccStderr(t, stdin, args...)
	var v map[string]any
	if strings.HasPrefix(out, "{") {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
		}
	}
	return out, v, code
}

// gpuccStderr is gpucc returning stderr as well, undecoded.
func gpuccStderr(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = workDir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func errorCode(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestRunSeed(t *testing.T) {
	for _, backend := range []string{"cpu", "webgpu"} {
		t.Run(backend, func(t *testing.T) {
			_, v, code := gpucc(t, "", "run", "--backend", backend, "--allow-software", example("seed.json"))
			if code != 0 {
				if backend == "webgpu" && os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" && errorCode(v) == "backend_unavailable" {
					t.Skip("no WebGPU adapter here")
				}
				t.Fatalf("exit %d: %v", code, v)
			}
			want := map[string]any{"values": map[string]any{"shape": []any{3.0}, "data": []any{0.0, 60.0, 120.0}}}
			if diff := cmp.Diff(want, v["outputs"]); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if v["backend"] != backend {
				t.Errorf("backend = %v, want %s", v["backend"], backend)
			}
			timings, _ := v["timings"].(map[string]any)
			for _, k := range []string{"uploadMs", "compileMs", "dispatchMs", "readbackMs"} {
				if _, ok := timings[k]; !ok {
					t.Errorf("timings lack %s: %v", k, timings)
				}
			}
		})
	}
}

func TestRunFailures(t *testing.T) {
	overflow := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":[3e38]},{"id":1,"op":"mul","a":0,"scalar":10}],"outputs":[{"name":"big","id":1}]}`
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  string
		msg   string
	}{
		{"malformed", "{", []string{"run", "-"}, "invalid_graph", "malformed JSON"},
		{"missing file", "", []string{"run", "/nonexistent.json"}, "io", "no such file"},
		{"overflowing output", overflow, []string{"run", "--backend", "cpu", "-"}, "non_finite_output", `output \"big\" element 0 is +Inf`},
		{"host limit", "", []string{"run", "--max-nodes", "2", example("seed.json")}, "limit_exceeded", "limit of 2"},
		{"unknown backend", "", []string{"run", "--backend", "cuda", example("seed.json")}, "backend_unavailable", "not built into this binary"},
		{"no graph", "", []string{"run"}, "usage", "GRAPH.json"},
		{"bad pass name", "", []string{"build", example("seed.json"), "-o", "/tmp/x", "--dump-after", "magic"}, "usage", "no such pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, v, code := gpucc(t, tt.stdin, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, want failure: %s", out)
			}
			if got := errorCode(v); got != tt.code {
				t.Errorf("code %q, want %q: %s", got, tt.code, out)
			}
			if !strings.Contains(out, tt.msg) {
				t.Errorf("message lacks %q: %s", tt.msg, out)
			}
		})
	}
}

func TestRunRejectsSoftwareAdapterUnlessAllowed(t *testing.T) {
	_, v, code := gpucc(t, "", "run", "--backend", "webgpu", example("seed.json"))
	if code == 0 {
		t.Skip("a hardware adapter is present")
	}
	if errorCode(v) != "backend_unavailable" {
		t.Fatalf("got %v", v)
	}
	_, v, code = gpucc(t, "", "run", example("seed.json"))
	if code != 0 || v["backend"] == "webgpu" {
		t.Fatalf("auto without --allow-software: exit %d, %v", code, v)
	}
	attempts, _ := v["fallbackAttempts"].([]any)
	if len(attempts) == 0 || !strings.Contains(attempts[0].(map[string]any)["error"].(string), "software") {
		t.Errorf("fallbackAttempts should record the rejected software adapter: %v", attempts)
	}
}

// TestRunCacheDir: a second process finds the generated code on disk.
func TestRunCacheDir(t *testing.T) {
	dir := t.TempDir()
	var hits []any
	for range 2 {
		_, v, code := gpucc(t, "", "run", "--backend", "webgpu", "--allow-software", "--cache-dir", dir, example("mlp.json"))
		if code != 0 {
			if os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" {
				t.Skip("no WebGPU adapter here")
			}
			t.Fatalf("exit %d: %v", code, v)
		}
		c, _ := v["cache"].(map[string]any)
		hits = append(hits, c["codegenDisk"])
	}
	if diff := cmp.Diff([]any{false, true}, hits); diff != "" {
		t.Errorf("codegenDisk over two processes (-want +got):\n%s", diff)
	}
}

// TestCPUProfile: GPUCC_CPUPROFILE=FILE writes a CPU profile of the
// command (gzipped protobuf: it starts with gzip's magic); a path that
// cannot be created is said on stderr and the command still runs.
func TestCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	for _, c := range []struct{ path, stderr string }{{prof, ""}, {filepath.Join(prof, "nodir", "x"), "GPUCC_CPUPROFILE"}} {
		cmd := exec.Command(binary, "run", "--backend", "cpu", example("seed.json"))
		cmd.Dir, cmd.Env = workDir, env("GPUCC_CPUPROFILE="+c.path)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil || !strings.HasPrefix(o.String(), `{"backend":"cpu"`) {
			t.Fatalf("GPUCC_CPUPROFILE=%s: %v\n%s%s", c.path, err, o.String(), e.String())
		}
		if c.stderr != "" {
			if !strings.Contains(e.String(), c.stderr) {
				t.Errorf("an unwritable profile path: stderr %q, want it named", e.String())
			}
			continue
		}
		b, err := os.ReadFile(prof)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Fatalf("the profile: %v, %d bytes %x", err, len(b), b[:min(len(b), 2)])
		}
	}
}

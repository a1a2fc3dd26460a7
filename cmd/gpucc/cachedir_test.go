package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runOn runs the seed graph on backend with the extra arguments; it skips
// when the backend cannot start and its GPUCC_REQUIRE_* variable is unset.
func runOn(t *testing.T, backend string, args ...string) map[string]any {
	t.Helper()
	_, v, code := gpucc(t, "", append(append([]string{"run", "--backend", backend}, args...), example("seed.json"))...)
	if code != 0 {
		if errorCode(v) == "backend_unavailable" && os.Getenv(map[string]string{"wasm": "GPUCC_REQUIRE_WASM", "native": "GPUCC_REQUIRE_NATIVE"}[backend]) == "" {
			t.Skipf("%s is unavailable: %v", backend, v)
		}
		t.Fatalf("exit %d: %v", code, v)
	}
	return v
}

// TestCacheDirOff: --cache-dir off leaves every disk cache off, the wasm
// modules' and shared objects' included, wherever the defaults point.
func TestCacheDirOff(t *testing.T) {
	for _, backend := range []string{"wasm", "native"} {
		t.Run(backend, func(t *testing.T) {
			env, home, xdg := t.TempDir(), t.TempDir(), t.TempDir()
			t.Setenv("GPUCC_CACHE_DIR", env)
			t.Setenv("HOME", home)
			t.Setenv("XDG_CACHE_HOME", xdg)
			runOn(t, backend, "--cache-dir", "off")
			for _, d := range []string{env, home, xdg} {
				filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
					if err == nil && !e.IsDir() {
						t.Errorf("--cache-dir off left %s", p)
					}
					return nil
				})
			}
		})
	}
}

// TestCacheDirServesEveryKind: a second process finds the wasm module and
// the shared object in the --cache-dir directory.
func TestCacheDirServesEveryKind(t *testing.T) {
	for _, backend := range []string{"wasm", "native"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			level := map[string]string{"wasm": "wasmModuleDisk", "native": "nativeSoDisk"}[backend]
			var hits []any
			for range 2 {
				c, _ := runOn(t, backend, "--cache-dir", dir)["cache"].(map[string]any)
				hits = append(hits, c[level])
			}
			if diff := cmp.Diff([]any{false, true}, hits); diff != "" {
				t.Errorf("%s over two processes (-want +got):\n%s", level, diff)
			}
		})
	}
}

// TestCacheDirUntrusted: a cache directory others may write, named by
// --cache-dir or by GPUCC_CACHE_DIR (which once fell back to memory
// silently), is refused with a usage error that says why.
func TestCacheDirUntrusted(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, v, code := gpucc(t, "", "run", "--backend", "cpu", "--cache-dir", dir, example("seed.json"))
	if code == 0 || errorCode(v) != "usage" {
		t.Errorf("--cache-dir: exit %d, %v; want a usage error", code, v)
	}
	t.Setenv("GPUCC_CACHE_DIR", dir)
	_, v, code = gpucc(t, "", "run", "--backend", "cpu", example("seed.json"))
	if e, _ := v["error"].(map[string]any); code == 0 || errorCode(v) != "usage" || e["field"] != "GPUCC_CACHE_DIR" {
		t.Errorf("GPUCC_CACHE_DIR: exit %d, %v; want a usage error naming it", code, v)
	}
}

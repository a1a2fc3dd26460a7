package runtime_test

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/runtime"
)

// openCache opens a new cache object on dir: a new process, as far as
// caching goes.
func openCache(t testing.TB, dir string) *cache.Cache {
	t.Helper()
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// files lists every file under dirs.
func files(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// cacheOffWritesNothing: with a memory-only cache (--cache-dir off) the
// backend writes to no cache directory, wherever the defaults point.
func cacheOffWritesNothing(t *testing.T, backend string) {
	env, home, xdg := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("GPUCC_CACHE_DIR", env)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", xdg)
	mem, err := cache.Open(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Options{Backend: backend, Cache: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	checkRun(t, rt, seedGraph(t))
	if got := files(env, home, xdg); len(got) != 0 {
		t.Errorf("a memory-only cache left files on disk: %v", got)
	}
}

func TestWasmCacheOffWritesNothing(t *testing.T) {
	wasmOpen(t) // skips without a toolchain
	cacheOffWritesNothing(t, "wasm")
}

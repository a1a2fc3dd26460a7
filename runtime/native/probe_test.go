//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native

import (
	"os"
	"testing"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestProbeCached: the compiler probe's shared object goes through the
// artifact cache, so a second process with the same disk cache opens the
// backend without compiling it (issue 36: the probe compiled on every
// start, 0.4-0.8 s of each process's start-up at load 17), and a
// memory-only cache still builds it (a cold start stays cold).
func TestProbeCached(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []cache.Stats{{Misses: 1}, {DiskHits: 1}} {
		probes.Clear() // a new process has probed nothing
		c, err := cache.Open(cache.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		d, err := open(backend.Options{Cache: c})
		if err != nil {
			if os.Getenv("GPUCC_REQUIRE_NATIVE") == "" {
				t.Skipf("native: %v", err)
			}
			t.Fatal(err)
		}
		d.Close()
		if st := c.Stats(cache.SharedObject); st.Misses != want.Misses || st.DiskHits != want.DiskHits || st.MemoryHits != 0 {
			t.Errorf("process %d: the probe's cache stats %+v, want %d misses and %d disk hits", i+1, st, want.Misses, want.DiskHits)
		}
	}
	probes.Clear()
	mem, _ := cache.Open(cache.Options{})
	d, err := open(backend.Options{Cache: mem})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if st := mem.Stats(cache.SharedObject); st.Misses != 1 {
		t.Errorf("a memory-only cache: %+v, want the probe built (1 miss)", st)
	}
}

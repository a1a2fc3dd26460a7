//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// cachedPayloads writes the verified payload of every entry of kind in
// the cache directory dir to a file of its own and returns their paths.
func cachedPayloads(t *testing.T, dir string, kind cache.Kind) []string {
	t.Helper()
	c := openCache(t, dir)
	names, _ := filepath.Glob(filepath.Join(dir, string(kind)+"-*.bin"))
	var out []string
	for _, n := range names {
		raw, err := hex.DecodeString(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(n), string(kind)+"-"), ".bin"))
		if err != nil || len(raw) != len(cache.Key{}) {
			t.Fatalf("%s: not an entry name", n)
		}
		b, src := c.Get(kind, cache.Key(raw))
		if src != cache.Disk {
			t.Fatalf("%s does not verify", n)
		}
		p := filepath.Join(t.TempDir(), filepath.Base(n))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestNativeCacheOffWritesNothing(t *testing.T) {
	skipUnlessCC(t)
	cacheOffWritesNothing(t, "native")
}

// plantEvil replaces every shared object in the cache directory dir with
// evil, as an attacker who can write the directory (but not read its key)
// would: under the name it had, with a checksum that matches. It handles
// the layout before the artifact cache (native/<key>-<sha256>.so, the
// file as is) and the current one (so-<key>.bin, the format with the
// SHA-256 of the file as its trailer) and returns how many it replaced.
func plantEvil(t *testing.T, dir string, evil []byte) int {
	t.Helper()
	n := 0
	for _, f := range files(dir) {
		base := filepath.Base(f)
		switch {
		case strings.HasSuffix(base, ".so"): // native/<key>-<sha256>.so
			key, _, _ := strings.Cut(base, "-")
			sum := sha256.Sum256(evil)
			os.Remove(f)
			if err := os.WriteFile(filepath.Join(filepath.Dir(f), key+"-"+hex.EncodeToString(sum[:])+".so"), evil, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(base, "so-") && strings.HasSuffix(base, ".bin"):
			body := append([]byte("gpucc-cache-v2\n"), binary.LittleEndian.AppendUint64(nil, uint64(len(evil)))...)
			body = append(body, evil...)
			sum := sha256.Sum256(body)
			if err := os.WriteFile(f, append(body, sum[:]...), 0o600); err != nil {
				t.Fatal(err)
			}
		default:
			continue
		}
		n++
	}
	return n
}

// evilLibrary builds a shared object that, once loaded, creates marker
// (from a constructor, before any symbol is looked up) and whose entry
// point does nothing.
func evilLibrary(t *testing.T, marker string) []byte {
	t.Helper()
	cc, err := cbuild.FindNative()
	if err != nil {
		t.Skip(err)
	}
	src := `#include <stdio.h>
__attribute__((constructor)) static void pwn(void) { FILE *f = fopen("` + marker + `", "w"); if (f) fclose(f); }
__attribute__((visibility("default"))) void gpucc_run(float *const *b) { (void)b; }
`
	so, err := cc.Shared(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	return so
}

// TestPlantedLibraryNotLoaded: a shared object planted in the cache
// directory under the name and checksum the cache expects never runs in
// the process; the run rebuilds its own library and answers right.
func TestPlantedLibraryNotLoaded(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPUCC_CACHE_DIR", dir)
	g := seedGraph(t)
	checkRun(t, nativeOpen(t), g) // fills the cache
	marker := filepath.Join(t.TempDir(), "pwned")
	if n := plantEvil(t, dir, evilLibrary(t, marker)); n == 0 {
		t.Fatalf("no shared object in the cache to replace: %v", files(dir))
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "native", Cache: openCache(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), g)
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the planted shared object was loaded and ran its code")
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Cache["nativeSoDisk"] {
		t.Error("the planted entry counted as a disk hit")
	}
	checkRun(t, rt, g)
}

// TestUntrustedCacheDirIgnored: a cache directory others may write is
// not used at all: nothing in it is loaded, and the default cache falls
// back to memory with the reason recorded.
func TestUntrustedCacheDirIgnored(t *testing.T) {
	skipUnlessCC(t)
	dir := t.TempDir()
	g := seedGraph(t)
	fill, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "native", Cache: openCache(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, fill, g) // fills the cache while it is private
	fill.Close()
	t.Setenv("GPUCC_CACHE_DIR", dir) // the default cache of a new process
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Open(cache.Options{Dir: dir}); !errors.Is(err, cache.ErrUntrusted) {
		t.Errorf("Open of a world-writable directory = %v, want ErrUntrusted", err)
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "native"}) // the default cache
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cache["nativeSoDisk"] {
		t.Error("a shared object was loaded from a world-writable directory")
	}
	if err := cache.Default().DiskError(); !errors.Is(err, cache.ErrUntrusted) {
		t.Errorf("Default().DiskError() = %v, want ErrUntrusted", err)
	}
}

package cache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func key(s string) Key { return NewKey([]byte(s)) }

func mustOpen(t *testing.T, opts Options) *Cache {
	t.Helper()
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func expectGet(t *testing.T, c *Cache, kind Kind, k Key, want []byte, src Source) {
	t.Helper()
	got, s := c.Get(kind, k)
	if s != src || !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %q from %v; want %q from %v", k, got, s, want, src)
	}
}

func TestKeyIsLengthPrefixed(t *testing.T) {
	if NewKey([]byte("ab"), []byte("c")) == NewKey([]byte("a"), []byte("bc")) {
		t.Fatal("keys of differently split parts collide")
	}
}

func TestTiers(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, Options{Dir: dir})
	k, v := key("graph"), []byte("kernel source")
	expectGet(t, c, WGSL, k, nil, Miss)
	if err := c.Put(WGSL, k, v); err != nil {
		t.Fatal(err)
	}
	expectGet(t, c, WGSL, k, v, Memory)

	// A fresh cache over the same directory is a new process: disk, then memory.
	c2 := mustOpen(t, Options{Dir: dir})
	expectGet(t, c2, WGSL, k, v, Disk)
	expectGet(t, c2, WGSL, k, v, Memory)
	if s := c2.Stats(""); s.DiskHits != 1 || s.MemoryHits != 1 || s.DiskBytes == 0 {
		t.Errorf("stats = %+v", s)
	}

	mem := mustOpen(t, Options{})
	mem.Put(WGSL, k, v)
	expectGet(t, mem, WGSL, k, v, Memory)
	expectGet(t, mem, WGSL, key("other"), nil, Miss)
}

// TestCorruptFile damages the file on disk in several ways; each is a miss,
// the file is removed, and a Put replaces it with a good one.
func TestCorruptFile(t *testing.T) {
	damage := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-5] }},
		{"empty", func([]byte) []byte { return nil }},
		{"flipped payload bit", func(b []byte) []byte { b[hdrLen] ^= 1; return b }},
		{"flipped MAC bit", func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"extended", func(b []byte) []byte { return append(b, 0) }},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			k, v := key(d.name), []byte("payload of "+d.name)
			mustOpen(t, Options{Dir: dir}).Put(WGSL, k, v)
			p := filepath.Join(dir, "wgsl-"+k.String()+fileExt)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, d.f(b), 0o644); err != nil {
				t.Fatal(err)
			}
			c := mustOpen(t, Options{Dir: dir})
			expectGet(t, c, WGSL, k, nil, Miss)
			if s := c.Stats(""); s.Rejected != 1 {
				t.Errorf("Rejected = %d, want 1", s.Rejected)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("corrupt file still present: %v", err)
			}
			c.Put(WGSL, k, v)
			expectGet(t, mustOpen(t, Options{Dir: dir}), WGSL, k, v, Disk)
		})
	}
}

func TestMemoryBound(t *testing.T) {
	c := mustOpen(t, Options{MaxMemoryBytes: 100})
	for i := range 5 {
		c.Put(WGSL, key(fmt.Sprint(i)), make([]byte, 40))
	}
	// Only the two most recent fit.
	for i, want := range []Source{Miss, Miss, Miss, Memory, Memory} {
		if _, s := c.Get(WGSL, key(fmt.Sprint(i))); s != want {
			t.Errorf("entry %d: %v, want %v", i, s, want)
		}
	}
	if s := c.Stats(""); s.MemoryBytes != 80 || s.Evicted != 3 {
		t.Errorf("stats = %+v", s)
	}
	c.Put(WGSL, key("huge"), make([]byte, 101))
	if _, s := c.Get(WGSL, key("huge")); s != Miss {
		t.Errorf("a blob larger than the tier was kept")
	}
}

// TestDiskBoundEvictsOldest: a Put past the disk bound of 8 entries
// evicts the oldest until seven eighths of the bound are left: of 9, the
// two oldest.
func TestDiskBoundEvictsOldest(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, Options{Dir: dir, MaxDiskBytes: int64(8 * (hdrLen + macLen + 100))})
	old := time.Now().Add(-time.Hour)
	for i := range 8 {
		k := key(fmt.Sprint(i))
		c.Put(WGSL, k, make([]byte, 100))
		// Make the order of use unambiguous on coarse-clock file systems.
		at := old.Add(time.Duration(i) * time.Minute)
		os.Chtimes(filepath.Join(dir, "wgsl-"+k.String()+fileExt), at, at)
	}
	c.Put(WGSL, key("8"), make([]byte, 100))
	fresh := mustOpen(t, Options{Dir: dir})
	for i, want := range []Source{Miss, Miss, Disk, Disk, Disk, Disk, Disk, Disk, Disk} {
		if _, s := fresh.Get(WGSL, key(fmt.Sprint(i))); s != want {
			t.Errorf("entry %d: %v, want %v", i, s, want)
		}
	}
}

// TestConcurrent hammers one directory from two caches (two processes) and
// many goroutines; run it with -race.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	caches := []*Cache{mustOpen(t, Options{Dir: dir, MaxMemoryBytes: 2048}), mustOpen(t, Options{Dir: dir, MaxDiskBytes: 64 << 10})}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := caches[g%2]
			for i := range 200 {
				name := fmt.Sprint(i % 17)
				want := bytes.Repeat([]byte(name), 50)
				if got, s := c.Get(WGSL, key(name)); s != Miss && !bytes.Equal(got, want) {
					t.Errorf("entry %s: got %d bytes of wrong data from %v", name, len(got), s)
					return
				}
				c.Put(WGSL, key(name), want)
			}
		}()
	}
	wg.Wait()
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("GPUCC_CACHE_DIR", "/tmp/x")
	if d, err := DefaultDir(); err != nil || d != "/tmp/x" {
		t.Errorf("DefaultDir = %q, %v", d, err)
	}
}

// TestPutSameKeyCountsOnce: replacing a file does not add its size twice.
func TestPutSameKeyCountsOnce(t *testing.T) {
	c := mustOpen(t, Options{Dir: t.TempDir()})
	k := NewKey([]byte("k"))
	for range 3 {
		if err := c.Put(WGSL, k, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := c.Stats("").DiskBytes, int64(hdrLen+100+macLen); got != want {
		t.Errorf("DiskBytes = %d after three puts of one key, want %d", got, want)
	}
}

// TestHitRefreshesStaleTime: a hit marks an entry used (for the disk
// LRU) when its time is over touchEvery old.
func TestHitRefreshesStaleTime(t *testing.T) {
	dir := t.TempDir()
	k := key("k")
	mustOpen(t, Options{Dir: dir}).Put(WGSL, k, []byte("v"))
	p := filepath.Join(dir, "wgsl-"+k.String()+fileExt)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	expectGet(t, mustOpen(t, Options{Dir: dir}), WGSL, k, []byte("v"), Disk)
	if fi, err := os.Stat(p); err != nil || !fi.ModTime().After(old.Add(touchEvery)) {
		t.Errorf("modification time after a hit: %v, %v; want refreshed", fi.ModTime(), err)
	}
}

// dirBytes measures the entry files of dir.
func dirBytes(t *testing.T, c *Cache) int64 {
	t.Helper()
	files, err := c.files()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		n += f.size
	}
	return n
}

// TestDiskTrimAmortized: 1000 Puts through a disk tier bounded at 64
// entries keep the directory within the bound after every Put, keep the
// newest 56 (seven eighths), and list the directory once per 8 entries
// written past the bound (117 times), not on every Put into the full tier
// (936 before).
func TestDiskTrimAmortized(t *testing.T) {
	const entries, bound = 1000, 64
	each := int64(hdrLen + 100 + macLen)
	dir := t.TempDir()
	c := mustOpen(t, Options{Dir: dir, MaxMemoryBytes: 1, MaxDiskBytes: bound * each})
	old := time.Now().Add(-time.Hour)
	for i := range entries {
		k := key(fmt.Sprint(i))
		if err := c.Put(WGSL, k, bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			t.Fatal(err)
		}
		// The order of use, unambiguous on coarse-clock file systems.
		at := old.Add(time.Duration(i) * time.Second)
		os.Chtimes(filepath.Join(dir, "wgsl-"+k.String()+fileExt), at, at)
		if n := dirBytes(t, c); n > bound*each {
			t.Fatalf("after Put %d the directory holds %d bytes, over its bound of %d", i, n, bound*each)
		}
		if got, want := c.Stats("").DiskBytes, dirBytes(t, c); got != want {
			t.Fatalf("after Put %d the cache counts %d bytes on disk, the directory holds %d", i, got, want)
		}
	}
	if got, max := c.trims.Load(), int64((entries-bound)/(bound/8)+1); got > max || got == 0 {
		t.Errorf("%d Puts listed the directory %d times, want 1 to %d", entries, got, max)
	}
	fresh := mustOpen(t, Options{Dir: dir})
	for i := range entries {
		want := Miss
		if i >= entries-bound*7/8 {
			want = Disk // the newest seven eighths outlive any trim
		} else if i >= entries-bound {
			continue // kept or not, by where the last trim fell
		}
		if _, s := fresh.Get(WGSL, key(fmt.Sprint(i))); s != want {
			t.Errorf("entry %d of %d: %v, want %v", i, entries, s, want)
		}
	}
}

// TestDiskTrimConcurrent: two caches on one directory (two processes),
// four goroutines each writing distinct entries past the bound at once:
// every Get gives its own bytes or misses, no Put fails, each cache's own
// count is within the bound once they stop (a Put that another's
// increment pushes over it trims again), and a trim then brings the
// directory to seven eighths of it. Run it with -race.
func TestDiskTrimConcurrent(t *testing.T) {
	each := int64(hdrLen + 200 + macLen)
	dir := t.TempDir()
	bound := 32 * each
	caches := []*Cache{mustOpen(t, Options{Dir: dir, MaxMemoryBytes: 1, MaxDiskBytes: bound}), mustOpen(t, Options{Dir: dir, MaxMemoryBytes: 1, MaxDiskBytes: bound})}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := caches[g%2]
			for i := range 150 {
				name := fmt.Sprintf("%d-%d", g, i)
				want := bytes.Repeat([]byte(name), 200/len(name)+1)[:200]
				if err := c.Put(WGSL, key(name), want); err != nil {
					t.Errorf("Put %s: %v", name, err)
					return
				}
				if got, s := c.Get(WGSL, key(name)); s != Miss && !bytes.Equal(got, want) {
					t.Errorf("entry %s: %d bytes of other data from %v", name, len(got), s)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, c := range caches {
		if n := c.diskTotal(); n > bound {
			t.Errorf("cache %d counts %d bytes on disk once its writers stopped, over the bound %d", i, n, bound)
		}
	}
	c := caches[0]
	c.mu.Lock()
	c.stat(WGSL).DiskBytes = bound + 1 // as if it had written past the bound
	c.mu.Unlock()
	if err := c.trimDisk(); err != nil {
		t.Fatal(err)
	}
	if n := dirBytes(t, c); n > c.lowWater() {
		t.Errorf("after a trim the directory holds %d bytes, over seven eighths of the bound (%d)", n, c.lowWater())
	}
}

// TestOpenListsNothing: Open and Gets from disk do not list the
// directory (a process that only reads never pays for it); the first Put
// lists it once and counts what was there, later Puts below the bound do
// not list it again, and Stats of a cache that has not written lists it
// once for its DiskBytes.
func TestOpenListsNothing(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, Options{Dir: dir})
	for i := range 50 {
		if err := w.Put(WGSL, key(fmt.Sprint(i)), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.listings.Load(); n != 1 {
		t.Errorf("50 Puts below the bound listed the directory %d times, want 1 (the first)", n)
	}
	want := 50 * int64(hdrLen+100+macLen)
	r := mustOpen(t, Options{Dir: dir, MaxMemoryBytes: 1})
	for i := range 50 {
		expectGet(t, r, WGSL, key(fmt.Sprint(i)), make([]byte, 100), Disk)
	}
	if n := r.listings.Load(); n != 0 {
		t.Errorf("Open and 50 Gets from disk listed the directory %d times, want 0", n)
	}
	if got := r.Stats("").DiskBytes; got != want {
		t.Errorf("Stats of a cache that only read: DiskBytes %d, want the directory's %d", got, want)
	}
	r.Stats(WGSL)
	if n := r.listings.Load(); n != 1 {
		t.Errorf("two Stats listed the directory %d times, want 1", n)
	}
	p := mustOpen(t, Options{Dir: dir})
	if err := p.Put(WGSL, key("new"), make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if got := p.Stats("").DiskBytes; got != want+int64(hdrLen+100+macLen) {
		t.Errorf("a first Put into a directory of 50 entries counts %d bytes, want %d", got, want+int64(hdrLen+100+macLen))
	}
}

package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestKindsAreNamespaces: one key under two kinds names two entries, and
// the stats are kept per kind.
func TestKindsAreNamespaces(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, Options{Dir: dir})
	k := key("program")
	if err := c.Put(Wasm, k, []byte("module")); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(SharedObject, k, []byte("library")); err != nil {
		t.Fatal(err)
	}
	expectGet(t, c, WGSL, k, nil, Miss)
	fresh := mustOpen(t, Options{Dir: dir})
	expectGet(t, fresh, Wasm, k, []byte("module"), Disk)
	expectGet(t, fresh, SharedObject, k, []byte("library"), Disk)
	expectGet(t, fresh, SharedObject, k, []byte("library"), Memory)
	if s := fresh.Stats(SharedObject); s.DiskHits != 1 || s.MemoryHits != 1 || s.DiskBytes != int64(hdrLen+len("library")+macLen) {
		t.Errorf("so stats = %+v", s)
	}
	if s := fresh.Stats(Wasm); s.DiskHits != 1 || s.MemoryHits != 0 {
		t.Errorf("wasm stats = %+v", s)
	}
	if s := fresh.Stats(""); s.DiskHits != 2 || s.MemoryHits != 1 {
		t.Errorf("total stats = %+v", s)
	}
	if err := c.Put("No/Good", k, nil); err == nil {
		t.Error("Put accepted an invalid kind")
	}
	if _, src := c.Get("../x", k); src != Miss {
		t.Error("Get of an invalid kind hit")
	}
}

// plant writes what an attacker who can write the directory but not read
// its key could make: a well-formed file under a valid-looking name whose
// trailer is the SHA-256 checksum of the content (the old format's) or a
// MAC under some other secret.
func plant(t *testing.T, dir string, kind Kind, k Key, payload []byte, trailer func(body []byte) []byte) string {
	t.Helper()
	body := append([]byte(magic), binary.LittleEndian.AppendUint64(nil, uint64(len(payload)))...)
	body = append(body, payload...)
	p := filepath.Join(dir, string(kind)+"-"+k.String()+fileExt)
	if err := os.WriteFile(p, append(body, trailer(body)...), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlantedEntryNotServed: a planted entry with a valid name and a
// valid checksum is a miss, counted as rejected, removed, and replaced by
// the rebuilt blob.
func TestPlantedEntryNotServed(t *testing.T) {
	otherSecret := &Cache{secret: make([]byte, secretLen)}
	trailers := map[string]func(body []byte) []byte{
		"sha256 of the file": func(body []byte) []byte { s := sha256.Sum256(body); return s[:] },
		"sha256 of key and payload": func(body []byte) []byte {
			h := sha256.New()
			h.Write(body[hdrLen:])
			return h.Sum(nil)
		},
		"MAC under another secret": func(body []byte) []byte {
			return otherSecret.mac(name{SharedObject, key("lib")}, body[len(magic):hdrLen], body[hdrLen:])
		},
	}
	for tname, trailer := range trailers {
		t.Run(tname, func(t *testing.T) {
			dir := t.TempDir()
			mustOpen(t, Options{Dir: dir}) // the victim's directory and key exist
			k := key("lib")
			p := plant(t, dir, SharedObject, k, []byte("\x7fELF attacker code"), trailer)
			c := mustOpen(t, Options{Dir: dir})
			expectGet(t, c, SharedObject, k, nil, Miss)
			if s := c.Stats(SharedObject); s.Rejected != 1 || s.Misses != 1 {
				t.Errorf("stats = %+v, want one rejected miss", s)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("planted file still present: %v", err)
			}
			if err := c.Put(SharedObject, k, []byte("built")); err != nil {
				t.Fatal(err)
			}
			expectGet(t, mustOpen(t, Options{Dir: dir}), SharedObject, k, []byte("built"), Disk)
		})
	}
}

// TestMovedEntryRejected: a genuine entry copied under another kind or key
// does not verify there: the MAC covers the name.
func TestMovedEntryRejected(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, Options{Dir: dir})
	k := key("shader")
	c.Put(WGSL, k, []byte("genuine wgsl"))
	b, err := os.ReadFile(filepath.Join(dir, "wgsl-"+k.String()+fileExt))
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []name{{SharedObject, k}, {WGSL, key("other")}} {
		os.WriteFile(filepath.Join(dir, string(to.kind)+"-"+to.key.String()+fileExt), b, 0o600)
		expectGet(t, mustOpen(t, Options{Dir: dir}), to.kind, to.key, nil, Miss)
	}
}

// TestUntrustedDirRefused: a directory or key file others could change
// (or read, for the key) is refused by Open, and Default falls back to
// memory with the reason in DiskError.
func TestUntrustedDirRefused(t *testing.T) {
	if !modesMean {
		t.Skip("permission bits mean nothing here")
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"world-writable directory", func(t *testing.T, dir string) { chmod(t, dir, 0o777) }},
		{"sticky world-writable directory", func(t *testing.T, dir string) { chmod(t, dir, 0o777|os.ModeSticky) }},
		{"group-writable directory", func(t *testing.T, dir string) { chmod(t, dir, 0o770) }},
		{"world-readable key", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, secretFile), 0o644) }},
		{"group-writable key", func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, secretFile), 0o620) }},
		{"key is a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, secretFile)
			b, _ := os.ReadFile(p)
			other := filepath.Join(t.TempDir(), "k")
			os.WriteFile(other, b, 0o600)
			os.Remove(p)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory of another user", func(t *testing.T, dir string) { chown(t, dir) }},
		{"key of another user", func(t *testing.T, dir string) { chown(t, filepath.Join(dir, secretFile)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			mustOpen(t, Options{Dir: dir}).Put(WGSL, key("k"), []byte("v"))
			tc.setup(t, dir)
			if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrUntrusted) {
				t.Errorf("Open = %v, want ErrUntrusted", err)
			}
			t.Setenv("GPUCC_CACHE_DIR", dir)
			c := Default()
			if c.Dir() != "" || !errors.Is(c.DiskError(), ErrUntrusted) {
				t.Errorf("Default: dir %q, DiskError %v; want memory-only and ErrUntrusted", c.Dir(), c.DiskError())
			}
			expectGet(t, c, WGSL, key("k"), nil, Miss)
		})
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// chown gives p to another user, which only root can do.
func chown(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// TestKeyCreatedOnce: caches opening a fresh directory at once agree on
// one key, stored with mode 0600, so each reads what another wrote.
func TestKeyCreatedOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh")
	caches := make([]*Cache, 8)
	var wg sync.WaitGroup
	for i := range caches {
		wg.Go(func() {
			c, err := Open(Options{Dir: dir})
			if err != nil {
				t.Error(err)
				return
			}
			caches[i] = c
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, c := range caches {
		c.Put(Wasm, key("m"), []byte{byte(i)})
		for j, o := range caches {
			if j != i {
				if v, err := o.readFile(name{Wasm, key("m")}); err != nil || len(v) != 1 || v[0] != byte(i) {
					t.Fatalf("cache %d cannot read cache %d's entry: %v", j, i, err)
				}
			}
		}
	}
	fi, err := os.Stat(filepath.Join(dir, secretFile))
	if err != nil {
		t.Fatal(err)
	}
	if modesMean && fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestDefaultDirOff(t *testing.T) {
	t.Setenv("GPUCC_CACHE_DIR", "off")
	if c := Default(); c.Dir() != "" || c.DiskError() != nil {
		t.Errorf("GPUCC_CACHE_DIR=off: Dir %q, DiskError %v; want memory-only, no error", c.Dir(), c.DiskError())
	}
}

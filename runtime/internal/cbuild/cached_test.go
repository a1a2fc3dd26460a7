package cbuild

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/codegen/cache"
)

// TestLoad: a miss builds and stores, a hit hands over the cached bytes,
// and cached bytes the user refuses are rebuilt and replaced.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	k := cache.NewKey([]byte("unit"))
	builds := 0
	build := func() ([]byte, error) { builds++; return []byte("module"), nil }
	var got []byte
	use := func(b []byte) error { got = b; return nil }
	if src, err := Load(c, cache.Wasm, k, build, use); err != nil || src != cache.Miss || builds != 1 {
		t.Fatalf("cold: %v, %v, %d builds", src, err, builds)
	}
	fresh, _ := cache.Open(cache.Options{Dir: dir})
	if src, err := Load(fresh, cache.Wasm, k, build, use); err != nil || src != cache.Disk || builds != 1 || !bytes.Equal(got, []byte("module")) {
		t.Fatalf("warm: %v, %v, %d builds, %q", src, err, builds, got)
	}
	// A cached artifact that no longer loads (say, a new runtime version
	// rejects it) is rebuilt.
	refuseCached := func(b []byte) error {
		if builds == 1 {
			return errors.New("cannot load")
		}
		return nil
	}
	if src, err := Load(fresh, cache.Wasm, k, build, refuseCached); err != nil || src != cache.Miss || builds != 2 {
		t.Fatalf("refused: %v, %v, %d builds", src, err, builds)
	}
	// No cache at all.
	if src, err := Load(nil, cache.Wasm, k, build, use); err != nil || src != cache.Miss || builds != 3 {
		t.Fatalf("nil cache: %v, %v, %d builds", src, err, builds)
	}
	// A build that fails is not stored.
	bad := cache.NewKey([]byte("bad"))
	if _, err := Load(c, cache.Wasm, bad, func() ([]byte, error) { return nil, errors.New("clang failed") }, use); err == nil {
		t.Fatal("a failed build succeeded")
	}
	if _, src := c.Get(cache.Wasm, bad); src != cache.Miss {
		t.Error("a failed build was cached")
	}
}

// TestPrivateDir: a file holds the bytes, sits in a directory only this
// user can enter, is named by its contents, and is gone after release;
// Close removes the directory.
func TestPrivateDir(t *testing.T) {
	d, err := NewPrivateDir()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("\x7fELF not really")
	path, release, err := d.File(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %s = %q, %v", path, got, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	other, release2, err := d.File([]byte("other"))
	if err != nil {
		t.Fatal(err)
	}
	release2()
	if filepath.Base(other) == filepath.Base(path) {
		t.Errorf("two contents share the file name %s", filepath.Base(path))
	}
	release()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s still exists after release: %v", path, err)
	}
	d.Close()
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("directory still exists after Close: %v", err)
	}
}

// TestPrivateDirRefusesOpenTempDir: a TempDir anyone may write (and
// rename in) is refused.
func TestPrivateDirRefusesOpenTempDir(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	t.Setenv("TMPDIR", dir)
	if d, err := NewPrivateDir(); err == nil {
		d.Close()
		t.Error("NewPrivateDir used a world-writable, non-sticky TempDir")
	}
}

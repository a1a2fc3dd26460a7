//go:build unix

package cache

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// within runs f, failing the test if it has not returned after a few
// seconds: a read that blocks on a FIFO or streams /dev/zero never would.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s has not returned after 10s: it blocks or reads without bound", what)
	}
}

// notFiles plants, at path, each kind of thing that is not a regular file:
// a FIFO, a link to /dev/zero and a link to a regular file.
var notFiles = map[string]func(t *testing.T, path string){
	"fifo": func(t *testing.T, path string) {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	},
	"link to /dev/zero": func(t *testing.T, path string) {
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
	},
	"link to a file": func(t *testing.T, path string) {
		target := filepath.Join(t.TempDir(), "target")
		if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	},
}

// TestEntryNotAFile: a FIFO or a link under an entry's name is a rejected
// miss at once (it once blocked the process on the FIFO), removed, and
// replaced by the next Put.
func TestEntryNotAFile(t *testing.T) {
	for what, plant := range notFiles {
		t.Run(what, func(t *testing.T) {
			dir := t.TempDir()
			c := mustOpen(t, Options{Dir: dir})
			k := key("lib")
			plant(t, c.path(name{SharedObject, k}))
			within(t, "Get", func() { expectGet(t, c, SharedObject, k, nil, Miss) })
			if s := c.Stats(SharedObject); s.Rejected != 1 {
				t.Errorf("stats = %+v, want one rejected miss", s)
			}
			if _, err := os.Lstat(c.path(name{SharedObject, k})); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the planted %s is still there: %v", what, err)
			}
			if err := c.Put(SharedObject, k, []byte("built")); err != nil {
				t.Fatal(err)
			}
			expectGet(t, mustOpen(t, Options{Dir: dir}), SharedObject, k, []byte("built"), Disk)
		})
	}
}

// TestSealed: WriteSealed's file reads back, and ReadSealed refuses,
// without blocking or reading without bound, whatever gpucc did not write
// there: a plain file, a sealed file moved from another name or another
// directory, a FIFO, links, a file past the bound, and a directory on the
// way that is a link or that others may write.
func TestSealed(t *testing.T) {
	const rel = "tune/matmul.json"
	dir := t.TempDir()
	c := mustOpen(t, Options{Dir: dir})
	val := []byte(`{"version":1}`)
	if _, err := c.ReadSealed(rel, 1<<10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file gave %v, want fs.ErrNotExist", err)
	}
	if err := c.WriteSealed(rel, val); err != nil {
		t.Fatal(err)
	}
	got, err := mustOpen(t, Options{Dir: dir}).ReadSealed(rel, 1<<10)
	if err != nil || !bytes.Equal(got, val) {
		t.Fatalf("read back %q, %v; want %q", got, err, val)
	}
	if _, err := mustOpen(t, Options{}).ReadSealed(rel, 1<<10); !errors.Is(err, ErrNoDir) {
		t.Errorf("memory only: %v, want ErrNoDir", err)
	}
	sealed, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	other := mustOpen(t, Options{Dir: t.TempDir()})
	if err := other.WriteSealed(rel, val); err != nil {
		t.Fatal(err)
	}
	foreign, _ := os.ReadFile(filepath.Join(other.Dir(), rel))
	cases := map[string]func(t *testing.T, path string){
		"plain JSON": func(t *testing.T, path string) { os.WriteFile(path, val, 0o600) },
		"sealed under another name": func(t *testing.T, path string) {
			c.WriteSealed("tune/other.json", val)
			os.Rename(filepath.Join(dir, "tune/other.json"), path)
		},
		"sealed in another directory": func(t *testing.T, path string) { os.WriteFile(path, foreign, 0o600) },
		"past the bound":              func(t *testing.T, path string) { c.WriteSealed(rel, make([]byte, 2<<10)) },
		"truncated":                   func(t *testing.T, path string) { os.WriteFile(path, sealed[:len(sealed)-1], 0o600) },
	}
	for what, plant := range notFiles {
		cases[what] = plant
	}
	for what, plant := range cases {
		t.Run(what, func(t *testing.T) {
			path := filepath.Join(dir, rel)
			os.Remove(path)
			plant(t, path)
			within(t, "ReadSealed", func() {
				if got, err := c.ReadSealed(rel, 1<<10); err == nil {
					t.Errorf("read %q from a %s", got, what)
				}
			})
		})
	}
	for what, setup := range map[string]func(t *testing.T) string{
		"directory is a link": func(t *testing.T) string {
			d := t.TempDir()
			os.Symlink(filepath.Join(dir, "tune"), filepath.Join(d, "tune"))
			return d
		},
		"directory others may write": func(t *testing.T) string {
			d := t.TempDir()
			mustOpen(t, Options{Dir: d}).WriteSealed(rel, val)
			os.Chmod(filepath.Join(d, "tune"), 0o777)
			return d
		},
	} {
		t.Run(what, func(t *testing.T) {
			d := setup(t)
			if got, err := mustOpen(t, Options{Dir: d}).ReadSealed(rel, 1<<10); err == nil {
				t.Errorf("read %q", got)
			}
		})
	}
}

// TestReadRegular: only a regular file within the bound is read; a FIFO
// or /dev/zero is refused at once, links followed or not as asked.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("1234"), 0o600)
	if b, err := ReadRegular(file, 4, false); err != nil || string(b) != "1234" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
	if _, err := ReadRegular(file, 3, false); err == nil {
		t.Error("a file past the bound was read")
	}
	link := filepath.Join(dir, "l")
	os.Symlink(file, link)
	if _, err := ReadRegular(link, 4, false); err == nil {
		t.Error("a link was followed with follow false")
	}
	if b, err := ReadRegular(link, 4, true); err != nil || string(b) != "1234" {
		t.Errorf("a link with follow true: %q, %v", b, err)
	}
	fifo := filepath.Join(dir, "p")
	syscall.Mkfifo(fifo, 0o600)
	for _, p := range []string{"/dev/zero", fifo, dir} {
		within(t, "ReadRegular", func() {
			if _, err := ReadRegular(p, 1<<20, true); err == nil {
				t.Errorf("%s was read", p)
			}
		})
	}
}

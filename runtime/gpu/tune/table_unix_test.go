//go:build unix

package tune_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

// TestTableFiles: the cache directory's table is read back only when
// SaveCache wrote it; a plain file there (even a well-formed table), a
// FIFO (which once blocked the process) or a link to /dev/zero (which once
// read without end) is refused at once, leaving the built-in tables. A
// table file the user names is read when it is a regular file, and a FIFO
// or /dev/zero is refused there too.
func TestTableFiles(t *testing.T) {
	builtin, err := tune.Load("")
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := tune.Load("")
	tab.Entries["planted|x|y|exact|sss-v1"] = tune.Entry{Tile: ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 8, Vector: 1}}
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s has not returned after 10s", what)
		}
	}

	dir := t.TempDir()
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.SaveCache(c); err != nil {
		t.Fatal(err)
	}
	back, err := tune.LoadCache(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tab, back); diff != "" {
		t.Errorf("through SaveCache and LoadCache (-saved +loaded):\n%s", diff)
	}

	path := tune.PathIn(dir)
	for what, plant := range map[string]func() error{
		"plain table": func() error { return tab.Save(path) },
		"fifo":        func() error { return syscall.Mkfifo(path, 0o600) },
		"/dev/zero":   func() error { return os.Symlink("/dev/zero", path) },
	} {
		t.Run(what, func(t *testing.T) {
			os.Remove(path)
			if err := plant(); err != nil {
				t.Fatal(err)
			}
			within("LoadCache", func() {
				got, err := tune.LoadCache(c)
				if err == nil {
					t.Errorf("LoadCache read %d entries from a %s", len(got.Entries), what)
				}
			})
			if what == "plain table" {
				return
			}
			within("Load", func() {
				if _, err := tune.Load(path); err == nil {
					t.Errorf("Load read a %s", what)
				}
			})
		})
	}

	own := filepath.Join(t.TempDir(), "table.json")
	if err := tab.Save(own); err != nil {
		t.Fatal(err)
	}
	if got, err := tune.Load(own); err != nil || len(got.Entries) != len(builtin.Entries)+1 {
		t.Errorf("a table file the user names: %v, %v", got, err)
	}
}

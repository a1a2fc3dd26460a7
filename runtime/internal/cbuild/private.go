package cbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// PrivateDir is a directory only this user can reach, for the copies of
// verified bytes that a loader such as dlopen must read from a path. The
// native backend loads a shared object from the cache this way: it
// verified the bytes, and it loads a copy of those bytes, never a file in
// the cache directory that someone could swap between the check and
// dlopen. No other user can enter the directory (mode 0700) or rename it
// (NewPrivateDir refuses a TempDir others may write without the sticky
// bit).
//
// A file is named by the SHA-256 of its bytes: dlopen hands back an
// already loaded library whose path matches, so a path must never name two
// contents (a Linux memfd, whose /proc/self/fd/N path is reused, would).
// One directory serves a backend's whole life because creating and
// removing a directory per load cost a millisecond here (see
// bench/RESULTS.md). A PrivateDir is not safe for concurrent use.
type PrivateDir struct {
	dir string
}

// NewPrivateDir creates a new private directory in os.TempDir.
func NewPrivateDir() (*PrivateDir, error) {
	tmp := os.TempDir()
	fi, err := os.Stat(tmp)
	if err != nil {
		return nil, fmt.Errorf("private directory for loading: %w", err)
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 && m&os.ModeSticky == 0 {
		return nil, fmt.Errorf("private directory for loading: %s is writable by others and not sticky (mode %v): set TMPDIR", tmp, m)
	}
	dir, err := os.MkdirTemp(tmp, "gpucc-load-") // mode 0700
	if err != nil {
		return nil, fmt.Errorf("private directory for loading: %w", err)
	}
	return &PrivateDir{dir: dir}, nil
}

// File writes b into the directory and returns its path. The caller loads
// it, then calls release, which removes the file; what the loader mapped
// stays valid.
func (d *PrivateDir) File(b []byte) (path string, release func(), err error) {
	sum := sha256.Sum256(b)
	path = filepath.Join(d.dir, hex.EncodeToString(sum[:])+".so")
	if err := os.WriteFile(path, b, 0o700); err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("private copy for loading: %w", err)
	}
	return path, func() { os.Remove(path) }, nil
}

// Close removes the directory and anything left in it.
func (d *PrivateDir) Close() error { return os.RemoveAll(d.dir) }

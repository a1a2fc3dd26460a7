package cbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// PrivateFile writes b into a file only this user can reach, for a loader
// such as dlopen that takes a path: a new mode-0700 directory in
// os.TempDir. The caller loads path, then calls release, which removes
// the directory; what the loader mapped stays valid.
//
// This is how the native backend loads a shared object from the cache: it
// verified the bytes, and it loads a copy of those bytes, never a file in
// the cache directory that someone could swap between the check and
// dlopen. No other user can enter the directory, nor rename it, since
// PrivateFile refuses a TempDir that others may write without the sticky
// bit.
//
// The file is named by the SHA-256 of b: dlopen hands back an already
// loaded library whose path matches, so a path must never name two
// contents (a Linux memfd, whose /proc/self/fd/N path is reused, would).
func PrivateFile(b []byte) (path string, release func(), err error) {
	tmp := os.TempDir()
	fi, err := os.Stat(tmp)
	if err != nil {
		return "", nil, fmt.Errorf("private copy for loading: %w", err)
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 && m&os.ModeSticky == 0 {
		return "", nil, fmt.Errorf("private copy for loading: %s is writable by others and not sticky (mode %v): set TMPDIR", tmp, m)
	}
	dir, err := os.MkdirTemp(tmp, "gpucc-load-")
	if err != nil {
		return "", nil, fmt.Errorf("private copy for loading: %w", err)
	}
	sum := sha256.Sum256(b)
	path = filepath.Join(dir, hex.EncodeToString(sum[:])+".so")
	if err := os.WriteFile(path, b, 0o500); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("private copy for loading: %w", err)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

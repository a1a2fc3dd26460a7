package cache

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrUntrusted is the error (under errors.Is) of Open for a directory or
// MAC key file that others could write, or that another user owns.
var ErrUntrusted = errors.New("untrusted cache directory")

// secretFile is the MAC key's file name in the cache directory, and
// secretLen its length in bytes.
const (
	secretFile = "mac.key"
	secretLen  = 32
)

// openDir creates dir if needed, checks that it is private enough to hold
// code this process will run, and returns its MAC key, creating the key on
// first use.
func openDir(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: create directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("cache: %s is not a directory", dir)
	}
	if err := private(dir, fi, 0o022); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, secretFile)
	secret, err := readSecret(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createSecret(dir, path); err == nil {
			secret, err = readSecret(path)
		}
	}
	return secret, err
}

// private refuses a file another user owns, or with any of the mode bits
// in forbidden set.
func private(path string, fi fs.FileInfo, forbidden fs.FileMode) error {
	if owner, ok := ownedByOther(fi); ok {
		return fmt.Errorf("cache: %s is owned by uid %d, not by this user: %w", path, owner, ErrUntrusted)
	}
	if perm := fi.Mode().Perm(); modesMean && perm&forbidden != 0 {
		return fmt.Errorf("cache: %s has mode %04o, which lets others change (or read) what gpucc would run (chmod go-rwx it, or choose another cache directory): %w",
			path, perm, ErrUntrusted)
	}
	return nil
}

// readSecret reads the key file at path: a regular file (not a link) of
// this user, readable by no one else, of exactly secretLen bytes. It
// checks the file it opened, so a file swapped in after the check is not
// the one read.
func readSecret(path string) ([]byte, error) {
	lfi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, fmt.Errorf("cache: %s is not a regular file: %w", path, ErrUntrusted)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if !os.SameFile(fi, lfi) {
		return nil, fmt.Errorf("cache: %s changed while it was opened: %w", path, ErrUntrusted)
	}
	if err := private(path, fi, 0o077); err != nil {
		return nil, err
	}
	if fi.Size() != secretLen {
		return nil, fmt.Errorf("cache: %s holds %d bytes, want %d (remove it to make a new key)", path, fi.Size(), secretLen)
	}
	secret := make([]byte, secretLen)
	if _, err := io.ReadFull(f, secret); err != nil {
		return nil, fmt.Errorf("cache: read %s: %w", path, err)
	}
	return secret, nil
}

// createSecret writes a fresh random key to a private temporary file and
// links it to path, which fails rather than replaces when another process
// got there first: every process then reads the one key that won.
func createSecret(dir, path string) error {
	secret := make([]byte, secretLen)
	rand.Read(secret)
	tmp, err := os.CreateTemp(dir, ".tmp-key-*") // mode 0600
	if err != nil {
		return fmt.Errorf("cache: create key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(secret)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("cache: create key: %w", err)
	}
	return nil
}

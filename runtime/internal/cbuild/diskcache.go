package cbuild

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
)

// DiskCache stores built modules as <Dir>/<key>.wasm. Each file ends with a
// custom section, "gpucc.sha256", holding the SHA-256 of everything before
// it: the file stays a valid module, and a truncated or altered file is
// detected on Get, which then reports a miss so the caller rebuilds.
type DiskCache struct {
	Dir string
}

// DefaultCacheDir returns $GPUCC_CACHE_DIR/<sub>, or
// os.UserCacheDir()/gpucc/<sub>.
func DefaultCacheDir(sub string) (string, error) {
	root := os.Getenv("GPUCC_CACHE_DIR")
	if root == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		root = filepath.Join(dir, "gpucc")
	}
	return filepath.Join(root, sub), nil
}

const trailerName = "gpucc.sha256"

// trailerHead is the custom section's id, size (name length byte + name +
// digest, one LEB128 byte) and name.
var trailerHead = append([]byte{0, byte(1 + len(trailerName) + sha256.Size), byte(len(trailerName))}, trailerName...)

// trailerLen is the length of the whole trailer section.
var trailerLen = len(trailerHead) + sha256.Size

// Path returns the file of key.
func (c *DiskCache) Path(key string) string { return filepath.Join(c.Dir, key+".wasm") }

// Get returns the module stored under key, or ok=false when it is absent
// or fails its checksum.
func (c *DiskCache) Get(key string) (module []byte, ok bool) {
	b, err := os.ReadFile(c.Path(key))
	if err != nil || len(b) < trailerLen {
		return nil, false
	}
	body, trailer := b[:len(b)-trailerLen], b[len(b)-trailerLen:]
	sum := sha256.Sum256(body)
	if !bytes.Equal(trailer[:len(trailerHead)], trailerHead) || !bytes.Equal(trailer[len(trailerHead):], sum[:]) {
		return nil, false
	}
	return body, true
}

// Put stores module under key atomically: a temporary file in Dir, then a
// rename over the final name, so readers never see half a file.
func (c *DiskCache) Put(key string, module []byte) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.Dir, key+".*.tmp")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(module)
	_, err = f.Write(append(append(append([]byte{}, module...), trailerHead...), sum[:]...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.Path(key))
	}
	if err != nil {
		os.Remove(f.Name())
		return errors.Join(errors.New("writing the module cache"), err)
	}
	return nil
}

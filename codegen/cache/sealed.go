package cache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoDir is the error of ReadSealed and WriteSealed on a memory-only
// cache.
var ErrNoDir = errors.New("cache: the cache has no directory")

// ReadRegular reads the file at path, of at most max bytes, only if it is
// a regular file: a FIFO, a device (a link to /dev/zero) or a directory is
// refused without blocking or reading, and a larger file without reading
// more than max+1 bytes. With follow false a symbolic link is refused too.
// A missing file is an error that errors.Is fs.ErrNotExist.
func ReadRegular(path string, max int64, follow bool) ([]byte, error) {
	f, err := openNoFollow(path, follow)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("cache: %s: cannot open it as a regular file: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cache: %s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("cache: %s holds %d bytes, past the bound of %d", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1)) // the file may grow after Stat
	if err != nil {
		return nil, fmt.Errorf("cache: read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("cache: %s grew past the bound of %d bytes", path, max)
	}
	return b, nil
}

// sealedName is the name a sealed file's MAC covers: its path under the
// directory, so that a sealed file moved to another name does not verify.
func sealedName(rel string) name { return name{"sealed_file", NewKey([]byte(filepath.ToSlash(rel)))} }

// sealedPath checks rel, a path under the directory such as
// "tune/matmul.json", and returns its full path. Each directory between
// the cache directory and the file must be a real directory (not a link)
// as private as the cache directory; with create, missing ones are made.
func (c *Cache) sealedPath(rel string, create bool) (string, error) {
	if c.opts.Dir == "" {
		return "", ErrNoDir
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("cache: %q is not a path under the cache directory", rel)
	}
	dir := c.opts.Dir
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		if create {
			if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("cache: %w", err)
			}
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return "", err // a missing directory: a missing file
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("cache: %s is not a directory (%v): %w", dir, fi.Mode().Type(), ErrUntrusted)
		}
		if err := private(dir, fi, 0o022); err != nil {
			return "", err
		}
	}
	return filepath.Join(c.opts.Dir, rel), nil
}

// ReadSealed returns the payload of the file rel under the cache
// directory, which WriteSealed wrote: read as ReadRegular reads (no link
// followed, nothing but a regular file of at most max payload bytes), and
// refused unless its MAC verifies under this directory's secret and rel,
// so that a file planted, edited or moved there is not trusted. A missing
// file is an error that errors.Is fs.ErrNotExist; a memory-only cache
// gives ErrNoDir.
func (c *Cache) ReadSealed(rel string, max int64) ([]byte, error) {
	path, err := c.sealedPath(rel, false)
	if err != nil {
		return nil, err
	}
	b, err := ReadRegular(path, int64(hdrLen)+max+int64(macLen), false)
	if err != nil {
		return nil, err
	}
	val, err := c.unseal(sealedName(rel), b)
	if err != nil {
		return nil, fmt.Errorf("cache: %s: %w (gpucc did not write it, or it was edited since)", path, err)
	}
	return val, nil
}

// WriteSealed stores val as the file rel under the cache directory, with
// the MAC ReadSealed checks, atomically (a private temporary file renamed
// over it).
func (c *Cache) WriteSealed(rel string, val []byte) error {
	path, err := c.sealedPath(rel, true)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("cache: write %s: %w", rel, err)
	}
	_, err = tmp.Write(c.seal(sealedName(rel), val))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cache: write %s: %w", rel, err)
	}
	return nil
}

package cache

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The disk format of an entry: magic, payload length (8 bytes LE),
// payload, then the HMAC-SHA256 (keyed by the directory's secret) of the
// magic, the kind, the key, the length and the payload. A file whose
// length or MAC disagrees is rejected.
const (
	magic   = "gpucc-cache-v2\n"
	fileExt = ".bin"
	hdrLen  = len(magic) + 8
	macLen  = sha256.Size
)

// touchEvery is how stale a file's modification time may get before a hit
// refreshes it.
const touchEvery = time.Minute

var errRejected = errors.New("cache file failed authentication")

func (c *Cache) path(n name) string {
	return filepath.Join(c.opts.Dir, string(n.kind)+"-"+n.key.String()+fileExt)
}

// parseName returns the kind of a cache file's base name, or false for a
// file that is not an entry.
func parseName(base string) (Kind, bool) {
	stem, ok := strings.CutSuffix(base, fileExt)
	if !ok {
		return "", false
	}
	kind, key, ok := strings.Cut(stem, "-")
	if _, err := hex.DecodeString(key); !ok || err != nil || len(key) != 2*len(Key{}) || !Kind(kind).valid() {
		return "", false
	}
	return Kind(kind), true
}

// mac returns the MAC of an entry.
func (c *Cache) mac(n name, lenField, val []byte) []byte {
	h := hmac.New(sha256.New, c.secret)
	h.Write([]byte(magic))
	h.Write([]byte{byte(len(n.kind))})
	h.Write([]byte(n.kind))
	h.Write(n.key[:])
	h.Write(lenField)
	h.Write(val)
	return h.Sum(nil)
}

func (c *Cache) seal(n name, val []byte) []byte {
	out := make([]byte, 0, hdrLen+len(val)+macLen)
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(val)))
	out = append(out, val...)
	return append(out, c.mac(n, out[len(magic):hdrLen], val)...)
}

// unseal checks a sealed file and returns its payload.
func (c *Cache) unseal(n name, b []byte) ([]byte, error) {
	if len(b) < hdrLen+macLen || string(b[:len(magic)]) != magic {
		return nil, errRejected
	}
	size := binary.LittleEndian.Uint64(b[len(magic):])
	if size != uint64(len(b)-hdrLen-macLen) {
		return nil, errRejected
	}
	val := b[hdrLen : hdrLen+int(size)]
	if !hmac.Equal(c.mac(n, b[len(magic):hdrLen], val), b[hdrLen+int(size):]) {
		return nil, errRejected
	}
	return val, nil
}

// readFile reads n's file once, into memory, and returns its verified
// payload. Only a regular file no larger than the disk bound is read: the
// open follows no link and does not wait on a FIFO, and anything else
// under the name (a link, a FIFO, a device) is rejected and removed.
func (c *Cache) readFile(n name) ([]byte, error) {
	p := c.path(n)
	f, err := openNoFollow(p, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if fi, lerr := os.Lstat(p); lerr == nil && !fi.IsDir() {
			os.Remove(p) // the link itself: files() never counted it
		}
		return nil, fmt.Errorf("cache: %s: %w: %v", p, errRejected, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var b []byte
	if fi.Mode().IsRegular() && fi.Size() <= c.opts.MaxDiskBytes {
		b = make([]byte, fi.Size())
		if _, err := io.ReadFull(f, b); err != nil {
			return nil, err
		}
	}
	val, err := c.unseal(n, b)
	if err != nil {
		// Remove it so the rebuilt blob replaces it; another process may
		// be replacing it already, which is as good.
		if !fi.IsDir() && os.Remove(p) == nil && fi.Mode().IsRegular() {
			c.count(n.kind, func(s *Stats) { s.DiskBytes -= fi.Size() })
		}
		return nil, fmt.Errorf("cache: %s: %w", p, err)
	}
	// Mark it as recently used (best effort), at most once a minute: the
	// write is a metadata update that costs more than the read on a busy
	// disk, and LRU order needs no finer clock.
	if now := time.Now(); now.Sub(fi.ModTime()) > touchEvery {
		os.Chtimes(p, now, now)
	}
	return val, nil
}

// writeFile stores val under n and returns how many bytes the directory
// grew by (less than the file's size when it replaced an older copy).
func (c *Cache) writeFile(n name, val []byte) (int64, error) {
	b := c.seal(n, val)
	var old int64
	if fi, err := os.Lstat(c.path(n)); err == nil {
		old = fi.Size()
	}
	tmp, err := os.CreateTemp(c.opts.Dir, ".tmp-*") // mode 0600
	if err != nil {
		return 0, fmt.Errorf("cache: write %s %s: %w", n.kind, n.key, err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(n))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("cache: write %s %s: %w", n.kind, n.key, err)
	}
	return int64(len(b)) - old, nil
}

type fileInfo struct {
	path string
	kind Kind
	size int64
	mod  time.Time
}

// files lists the entry files of the directory.
func (c *Cache) files() ([]fileInfo, error) {
	c.listings.Add(1)
	ents, err := os.ReadDir(c.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cache: list %s: %w", c.opts.Dir, err)
	}
	var out []fileInfo
	for _, e := range ents {
		kind, ok := parseName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo{filepath.Join(c.opts.Dir, e.Name()), kind, info.Size(), info.ModTime()})
	}
	return out, nil
}

// lowWater is what trimDisk brings the directory down to: an eighth of
// MaxDiskBytes below it, so that the next trim, and its listing of every
// file, waits for that much to be written (a Put into a full tier of
// 1000 files listed and stat'ed all of them, 10 ms a Put).
func (c *Cache) lowWater() int64 { return c.opts.MaxDiskBytes - c.opts.MaxDiskBytes/8 }

// diskTotal is the disk tier's size as this process knows it: what Open
// measured, what it wrote and removed since, what the last trim measured.
func (c *Cache) diskTotal() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for _, s := range c.stats {
		total += s.DiskBytes
	}
	return total
}

// measure lists the directory, once, and takes its files' sizes as the
// disk tier's (by kind), before the first write's count or a Stats needs
// them.
func (c *Cache) measure() error {
	if c.measured.Load() {
		return nil
	}
	c.trimMu.Lock()
	defer c.trimMu.Unlock()
	if c.measured.Load() {
		return nil
	}
	files, err := c.files()
	if err != nil {
		return err
	}
	c.mu.Lock()
	for _, s := range c.stats {
		s.DiskBytes = 0
	}
	for _, f := range files {
		c.stat(f.kind).DiskBytes += f.size
	}
	c.mu.Unlock()
	c.measured.Store(true)
	return nil
}

// trimDisk removes the least recently used files, of any kind, until the
// directory fits in lowWater, when it is over MaxDiskBytes; other processes
// may write the same directory, so it measures the directory rather than
// trusting its own count. One trim runs at a time in a process, and one
// that finds the count back within the bound (another goroutine trimmed)
// lists nothing.
func (c *Cache) trimDisk() error {
	c.trimMu.Lock()
	defer c.trimMu.Unlock()
	if c.diskTotal() <= c.opts.MaxDiskBytes {
		return nil
	}
	c.trims.Add(1)
	files, err := c.files()
	if err != nil {
		return err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	evicted := map[Kind]int64{}
	kept := map[Kind]int64{}
	low := c.lowWater()
	for _, f := range files {
		if total > low {
			if err := os.Remove(f.path); err == nil || errors.Is(err, fs.ErrNotExist) {
				total -= f.size
				evicted[f.kind]++
				continue
			}
		}
		kept[f.kind] += f.size
	}
	c.mu.Lock()
	for kind, s := range c.stats {
		s.DiskBytes = kept[kind]
	}
	for kind, n := range kept {
		c.stat(kind).DiskBytes = n
	}
	for kind, n := range evicted {
		c.stat(kind).Evicted += n
	}
	c.mu.Unlock()
	return nil
}

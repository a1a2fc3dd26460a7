// Package cache keeps generated code (WGSL, C, compiled wasm modules: any
// byte blob) by content key, in memory and on disk, so that a second run of
// the same graph generates nothing: in the same process it comes from
// memory, in a new process from disk.
//
// Keys are SHA-256 digests of whatever determines the blob (see NewKey):
// the caller hashes the program's structure, the target and a version.
// The disk tier lives under Dir (DefaultDir: $GPUCC_CACHE_DIR, else
// os.UserCacheDir()/gpucc), one file per key, written atomically (temp file
// then rename) and sealed with a checksum: a corrupt or truncated file is
// detected on read, removed and reported as a miss, so the caller
// regenerates and replaces it. Both tiers are bounded in bytes; when a tier
// is over its bound the least recently used entries go first (on disk,
// "used" is the file's modification time, refreshed on every hit).
//
// A Cache is safe for concurrent use by many goroutines, and several
// processes may share one directory.
package cache

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Key identifies a blob: the SHA-256 of everything the blob depends on.
type Key [32]byte

// NewKey hashes parts into a key. Each part is length-prefixed, so
// ("ab","c") and ("a","bc") differ.
func NewKey(parts ...[]byte) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// String returns the key in hex, as used for file names.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Source says where Get found a blob.
type Source int

// The sources.
const (
	Miss   Source = iota // not cached (or the disk copy was corrupt)
	Memory               // the in-memory tier
	Disk                 // the disk tier (now also in memory)
)

func (s Source) String() string { return [...]string{"miss", "memory", "disk"}[s] }

// Default bounds.
const (
	DefaultMaxMemoryBytes = 64 << 20
	DefaultMaxDiskBytes   = 256 << 20
)

// Options configure a Cache. Zero bounds mean the defaults.
type Options struct {
	// Dir is the disk tier's directory, created on Open; "" keeps the
	// cache in memory only.
	Dir            string
	MaxMemoryBytes int64
	MaxDiskBytes   int64
}

// Stats count what a Cache has done since Open.
type Stats struct {
	MemoryHits, DiskHits, Misses int64
	Corrupt                      int64 // disk files that failed their checksum
	Evicted                      int64 // entries dropped from either tier for size
	DiskErrors                   int64 // disk writes that failed (the cache still works in memory)
	MemoryBytes, DiskBytes       int64 // current sizes (disk: as this process knows it)
}

// Cache is a two-tier blob cache. The zero value is not usable; call Open.
type Cache struct {
	opts Options

	mu    sync.Mutex
	lru   *list.List // of *entry, most recent at the front
	byKey map[Key]*list.Element
	stats Stats
}

type entry struct {
	key Key
	val []byte
}

// DefaultDir returns $GPUCC_CACHE_DIR when set, else os.UserCacheDir()/gpucc.
func DefaultDir() (string, error) {
	if d := os.Getenv("GPUCC_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache: no user cache directory (set GPUCC_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "gpucc"), nil
}

// Open returns a cache; with a Dir it creates the directory and measures
// what is already there.
func Open(opts Options) (*Cache, error) {
	if opts.MaxMemoryBytes <= 0 {
		opts.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if opts.MaxDiskBytes <= 0 {
		opts.MaxDiskBytes = DefaultMaxDiskBytes
	}
	c := &Cache{opts: opts, lru: list.New(), byKey: map[Key]*list.Element{}}
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("cache: create directory: %w", err)
		}
		files, err := c.files()
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			c.stats.DiskBytes += f.size
		}
	}
	return c, nil
}

var (
	defaultOnce  sync.Once
	defaultCache *Cache
)

// Default returns the process-wide cache over DefaultDir, opened on first
// use. When the directory cannot be used it is a memory-only cache.
func Default() *Cache {
	defaultOnce.Do(func() {
		dir, err := DefaultDir()
		if err == nil {
			defaultCache, err = Open(Options{Dir: dir})
		}
		if err != nil {
			defaultCache, _ = Open(Options{})
		}
	})
	return defaultCache
}

// Dir returns the disk tier's directory ("" for memory only).
func (c *Cache) Dir() string { return c.opts.Dir }

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Get returns the blob stored under key and where it came from. The
// returned slice is shared: callers must not modify it.
func (c *Cache) Get(key Key) ([]byte, Source) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		c.stats.MemoryHits++
		v := el.Value.(*entry).val
		c.mu.Unlock()
		return v, Memory
	}
	c.mu.Unlock()
	if c.opts.Dir == "" {
		c.count(func(s *Stats) { s.Misses++ })
		return nil, Miss
	}
	val, err := c.readFile(key)
	if err != nil {
		c.count(func(s *Stats) {
			s.Misses++
			if errors.Is(err, errCorrupt) {
				s.Corrupt++
			}
		})
		return nil, Miss
	}
	c.mu.Lock()
	c.stats.DiskHits++
	c.putMemoryLocked(key, val)
	c.mu.Unlock()
	return val, Disk
}

// Put stores val under key in both tiers. val must not be modified
// afterwards. A failed disk write is returned, but the blob is cached in
// memory regardless.
func (c *Cache) Put(key Key, val []byte) error {
	c.mu.Lock()
	c.putMemoryLocked(key, val)
	c.mu.Unlock()
	if c.opts.Dir == "" {
		return nil
	}
	n, err := c.writeFile(key, val)
	if err != nil {
		c.count(func(s *Stats) { s.DiskErrors++ })
		return err
	}
	c.mu.Lock()
	c.stats.DiskBytes += n
	over := c.stats.DiskBytes > c.opts.MaxDiskBytes
	c.mu.Unlock()
	if over {
		return c.trimDisk()
	}
	return nil
}

func (c *Cache) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// putMemoryLocked inserts or refreshes key and evicts from the back until
// the tier fits; c.mu must be held. A blob larger than the whole tier is
// not kept in memory.
func (c *Cache) putMemoryLocked(key Key, val []byte) {
	if el, ok := c.byKey[key]; ok {
		e := el.Value.(*entry)
		c.stats.MemoryBytes += int64(len(val) - len(e.val))
		e.val = val
		c.lru.MoveToFront(el)
	} else if int64(len(val)) <= c.opts.MaxMemoryBytes {
		c.byKey[key] = c.lru.PushFront(&entry{key: key, val: val})
		c.stats.MemoryBytes += int64(len(val))
	}
	for c.stats.MemoryBytes > c.opts.MaxMemoryBytes && c.lru.Len() > 0 {
		e := c.lru.Remove(c.lru.Back()).(*entry)
		delete(c.byKey, e.key)
		c.stats.MemoryBytes -= int64(len(e.val))
		c.stats.Evicted++
	}
}

// The disk format: magic, payload length (8 bytes LE), payload, then the
// SHA-256 of key||payload. A file whose length or checksum disagrees is
// corrupt.
const (
	magic   = "gpucc-cache-v1\n"
	fileExt = ".bin"
	hdrLen  = len(magic) + 8
	sumLen  = sha256.Size
)

var errCorrupt = errors.New("corrupt cache file")

func (c *Cache) path(key Key) string {
	return filepath.Join(c.opts.Dir, key.String()+fileExt)
}

func seal(key Key, val []byte) []byte {
	out := make([]byte, 0, hdrLen+len(val)+sumLen)
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(val)))
	out = append(out, val...)
	h := sha256.New()
	h.Write(key[:])
	h.Write(val)
	return h.Sum(out)
}

// open checks a sealed file and returns its payload.
func unseal(key Key, b []byte) ([]byte, error) {
	if len(b) < hdrLen+sumLen || string(b[:len(magic)]) != magic {
		return nil, errCorrupt
	}
	n := binary.LittleEndian.Uint64(b[len(magic):])
	if n != uint64(len(b)-hdrLen-sumLen) {
		return nil, errCorrupt
	}
	val := b[hdrLen : hdrLen+int(n)]
	h := sha256.New()
	h.Write(key[:])
	h.Write(val)
	if string(h.Sum(nil)) != string(b[hdrLen+int(n):]) {
		return nil, errCorrupt
	}
	return val, nil
}

func (c *Cache) readFile(key Key) ([]byte, error) {
	p := c.path(key)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	val, err := unseal(key, b)
	if err != nil {
		// Remove it so the regenerated blob replaces it; another process
		// may be replacing it already, which is as good.
		os.Remove(p)
		c.count(func(s *Stats) { s.DiskBytes -= int64(len(b)) })
		return nil, fmt.Errorf("cache: %s: %w", p, err)
	}
	now := time.Now()
	os.Chtimes(p, now, now) // mark as recently used; best effort
	return val, nil
}

// writeFile stores val under key and returns how many bytes the directory
// grew by (less than the file's size when it replaced an older copy).
func (c *Cache) writeFile(key Key, val []byte) (int64, error) {
	b := seal(key, val)
	var old int64
	if fi, err := os.Stat(c.path(key)); err == nil {
		old = fi.Size()
	}
	tmp, err := os.CreateTemp(c.opts.Dir, ".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("cache: write %s: %w", key, err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("cache: write %s: %w", key, err)
	}
	return int64(len(b)) - old, nil
}

type fileInfo struct {
	path string
	size int64
	mod  time.Time
}

// files lists the cache files of the directory.
func (c *Cache) files() ([]fileInfo, error) {
	ents, err := os.ReadDir(c.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cache: list %s: %w", c.opts.Dir, err)
	}
	var out []fileInfo
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), fileExt) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo{filepath.Join(c.opts.Dir, e.Name()), info.Size(), info.ModTime()})
	}
	return out, nil
}

// trimDisk removes the least recently used files until the directory fits
// in MaxDiskBytes; other processes may write the same directory, so it
// measures the directory rather than trusting its own count.
func (c *Cache) trimDisk() error {
	files, err := c.files()
	if err != nil {
		return err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	var evicted int64
	for _, f := range files {
		if total <= c.opts.MaxDiskBytes {
			break
		}
		if err := os.Remove(f.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
			evicted++
		}
	}
	c.count(func(s *Stats) { s.DiskBytes, s.Evicted = total, s.Evicted+evicted })
	return nil
}

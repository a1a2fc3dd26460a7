// Package cache is gpucc's one artifact cache: generated shaders (WGSL),
// WebAssembly modules, shared objects and any other byte blob a component
// wants to keep, by content key, in memory and on disk, so that a second
// run of the same graph generates and builds nothing: in the same process
// it comes from memory, in a new process from disk.
//
// # Keys and kinds
//
// An entry is named by a Kind, the namespace of one artifact kind (WGSL,
// Wasm, SharedObject, or a component's own, such as tuning results), and a
// Key, the SHA-256 of whatever determines the blob (see NewKey): the
// caller hashes the program's structure, the target, the toolchain and a
// version. The same Key under two kinds names two entries.
//
// # The disk tier
//
// It lives under Dir (DefaultDir: $GPUCC_CACHE_DIR, else
// os.UserCacheDir()/gpucc; "off" for none), one file per entry, named
// <kind>-<key>.bin and written atomically (a private temporary file, then
// a rename). Both tiers are bounded in bytes; when a tier is over its
// bound the least recently used entries go first (on disk, "used" is the
// file's modification time, refreshed by a hit when it is over a minute
// old). The disk tier, once over its bound, is trimmed to seven eighths of
// it, so that the listing of its files that a trim takes is paid once per
// eighth of the bound written, not on every write into a full tier.
//
// # Trust
//
// The disk cache never hands out bytes it did not write itself: the
// cache directory is where a native backend finds code it will run inside
// the process, so a file planted there must not be mistaken for a build.
// Each file ends with an HMAC-SHA256 of its kind, key and payload, keyed
// by a 32-byte secret kept in the directory as mac.key (mode 0600,
// created atomically on first use). Someone who can write the directory
// but not read the secret cannot make a file that verifies, and a
// checksum alone would not do: it is computable by anyone. Open refuses a
// directory or key file that is owned by another user, or a directory
// writable by group or others, or a key file any of whose group or other
// permission bits are set: who can change the secret or read it can forge
// entries. A file that fails its MAC (planted, tampered, truncated or
// corrupt) is a miss, counted in Stats.Rejected, and removed so that the
// caller's rebuild replaces it.
//
// Get returns the verified bytes themselves, read once into memory, never
// a path: a caller that must hand the bytes to a loader that wants a file
// (dlopen) copies them into a file no one else can reach (see
// runtime/internal/cbuild.PrivateDir), so nothing can swap the file
// between verification and load.
//
// A Cache is safe for concurrent use by many goroutines, and several
// processes of one user may share one directory.
package cache

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// Kind is the namespace of one kind of artifact: 1 to 32 characters of
// a-z, 0-9 and '_' (it is part of the file name).
type Kind string

// The kinds gpucc's own components store. Other components may use kinds
// of their own.
const (
	WGSL         Kind = "wgsl" // a program's generated shaders (runtime's codegen cache)
	Wasm         Kind = "wasm" // WebAssembly modules built by Clang
	SharedObject Kind = "so"   // shared objects built by the system C compiler
)

func (k Kind) valid() bool {
	if len(k) == 0 || len(k) > 32 {
		return false
	}
	for _, r := range k {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// Source says where Get found a blob.
type Source int

// The sources.
const (
	Miss   Source = iota // not cached (or the disk copy failed to verify)
	Memory               // the in-memory tier
	Disk                 // the disk tier (now also in memory)
)

func (s Source) String() string { return [...]string{"miss", "memory", "disk"}[s] }

// Default bounds, over all kinds together.
const (
	DefaultMaxMemoryBytes = 64 << 20
	DefaultMaxDiskBytes   = 256 << 20
)

// Options configure a Cache. Zero bounds mean the defaults.
type Options struct {
	// Dir is the disk tier's directory, created (mode 0700) on Open; ""
	// keeps the cache in memory only.
	Dir            string
	MaxMemoryBytes int64
	MaxDiskBytes   int64
}

// Stats count what a Cache has done since Open, for one kind or for all.
type Stats struct {
	MemoryHits, DiskHits, Misses int64
	// Rejected counts disk files that failed their MAC (planted, tampered,
	// truncated, corrupt, or written under another key); each was a miss.
	Rejected               int64
	Evicted                int64 // entries dropped from either tier for size
	DiskErrors             int64 // disk writes that failed (the cache still works in memory)
	MemoryBytes, DiskBytes int64 // current sizes (disk: as this process knows it)
}

func (s *Stats) add(o Stats) {
	s.MemoryHits += o.MemoryHits
	s.DiskHits += o.DiskHits
	s.Misses += o.Misses
	s.Rejected += o.Rejected
	s.Evicted += o.Evicted
	s.DiskErrors += o.DiskErrors
	s.MemoryBytes += o.MemoryBytes
	s.DiskBytes += o.DiskBytes
}

// Cache is a two-tier blob cache. The zero value is not usable; call Open.
type Cache struct {
	opts    Options
	secret  []byte // the MAC key of the disk tier
	diskErr error  // why Default has no disk tier, if it has none

	mu    sync.Mutex
	lru   *list.List // of *entry, most recent at the front
	byKey map[name]*list.Element
	stats map[Kind]*Stats

	trimMu sync.Mutex // one listing of the directory at a time
	// measured is set once the directory has been listed (measure): Open
	// lists nothing, so that a process that only reads never pays for
	// the listing (68-102 ms for a user cache of 10,829 files on the
	// 2-core machine, 2026-12-05), only the first that writes or asks
	// for Stats.
	measured atomic.Bool
	listings atomic.Int64 // listings of the directory, for tests
	trims    atomic.Int64 // trims that listed the directory, for tests
}

// name is an entry's full name: its kind and key.
type name struct {
	kind Kind
	key  Key
}

type entry struct {
	name
	val []byte
}

// DefaultDir returns $GPUCC_CACHE_DIR when set, else
// os.UserCacheDir()/gpucc. GPUCC_CACHE_DIR=off gives "": no disk tier.
func DefaultDir() (string, error) {
	if d := os.Getenv("GPUCC_CACHE_DIR"); d == "off" {
		return "", nil
	} else if d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache: no user cache directory (set GPUCC_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "gpucc"), nil
}

// Open returns a cache. With a Dir it creates the directory, checks that
// it and its MAC key are private to this user (see the package doc), reads
// or creates the key, and measures what is already there; a directory
// that fails the checks is an error.
func Open(opts Options) (*Cache, error) {
	if opts.MaxMemoryBytes <= 0 {
		opts.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if opts.MaxDiskBytes <= 0 {
		opts.MaxDiskBytes = DefaultMaxDiskBytes
	}
	c := &Cache{opts: opts, lru: list.New(), byKey: map[name]*list.Element{}, stats: map[Kind]*Stats{}}
	if opts.Dir != "" {
		secret, err := openDir(opts.Dir)
		if err != nil {
			return nil, err
		}
		c.secret = secret
	}
	return c, nil
}

var (
	defaultMu     sync.Mutex
	defaultCaches = map[string]*Cache{}
)

// Default returns the process-wide cache over DefaultDir(), opened on
// first use: one Cache per directory, so that a process which changes
// GPUCC_CACHE_DIR (a test) gets the directory it names. When the
// directory cannot be used (absent, or refused by Open's checks) the cache
// is memory-only and DiskError says why.
func Default() *Cache {
	dir, err := DefaultDir()
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if c, ok := defaultCaches[dir]; ok {
		return c
	}
	var c *Cache
	if err == nil && dir != "" {
		c, err = Open(Options{Dir: dir})
	}
	if c == nil {
		c, _ = Open(Options{})
		c.diskErr = err
	}
	defaultCaches[dir] = c
	return c
}

// Dir returns the disk tier's directory ("" for memory only).
func (c *Cache) Dir() string { return c.opts.Dir }

// DiskError says why Default's cache has no disk tier although its
// directory was not "off": nil when it has one, or when it was opened
// memory-only on purpose.
func (c *Cache) DiskError() error { return c.diskErr }

// Stats returns a snapshot of the counters of kind, or of all kinds
// together when kind is "".
func (c *Cache) Stats(kind Kind) Stats {
	if c.opts.Dir != "" {
		c.measure() // an unreadable directory leaves DiskBytes as counted
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kind != "" {
		if s := c.stats[kind]; s != nil {
			return *s
		}
		return Stats{}
	}
	var all Stats
	for _, s := range c.stats {
		all.add(*s)
	}
	return all
}

// stat returns kind's counters; c.mu must be held (or c not yet shared).
func (c *Cache) stat(kind Kind) *Stats {
	s := c.stats[kind]
	if s == nil {
		s = &Stats{}
		c.stats[kind] = s
	}
	return s
}

func (c *Cache) count(kind Kind, f func(*Stats)) {
	c.mu.Lock()
	f(c.stat(kind))
	c.mu.Unlock()
}

// Get returns the blob stored under kind and key and where it came from.
// The returned slice is shared: callers must not modify it. An invalid
// kind is a miss.
func (c *Cache) Get(kind Kind, key Key) ([]byte, Source) {
	if !kind.valid() {
		return nil, Miss
	}
	n := name{kind, key}
	c.mu.Lock()
	if el, ok := c.byKey[n]; ok {
		c.lru.MoveToFront(el)
		c.stat(kind).MemoryHits++
		v := el.Value.(*entry).val
		c.mu.Unlock()
		return v, Memory
	}
	c.mu.Unlock()
	if c.opts.Dir == "" {
		c.count(kind, func(s *Stats) { s.Misses++ })
		return nil, Miss
	}
	val, err := c.readFile(n)
	if err != nil {
		c.count(kind, func(s *Stats) {
			s.Misses++
			if errors.Is(err, errRejected) {
				s.Rejected++
			}
		})
		return nil, Miss
	}
	c.mu.Lock()
	c.stat(kind).DiskHits++
	c.putMemoryLocked(n, val)
	c.mu.Unlock()
	return val, Disk
}

// Put stores val under kind and key in both tiers. val must not be
// modified afterwards. A failed disk write is returned, but the blob is
// cached in memory regardless.
func (c *Cache) Put(kind Kind, key Key, val []byte) error {
	if !kind.valid() {
		return fmt.Errorf("cache: invalid kind %q (want 1 to 32 of a-z, 0-9, _)", kind)
	}
	n := name{kind, key}
	c.mu.Lock()
	c.putMemoryLocked(n, val)
	c.mu.Unlock()
	if c.opts.Dir == "" {
		return nil
	}
	if err := c.measure(); err != nil {
		c.count(kind, func(s *Stats) { s.DiskErrors++ })
		return err
	}
	grew, err := c.writeFile(n, val)
	if err != nil {
		c.count(kind, func(s *Stats) { s.DiskErrors++ })
		return err
	}
	c.mu.Lock()
	c.stat(kind).DiskBytes += grew
	c.mu.Unlock()
	if c.diskTotal() > c.opts.MaxDiskBytes {
		return c.trimDisk()
	}
	return nil
}

// putMemoryLocked inserts or refreshes n and evicts from the back until
// the tier fits; c.mu must be held. A blob larger than the whole tier is
// not kept in memory.
func (c *Cache) putMemoryLocked(n name, val []byte) {
	if el, ok := c.byKey[n]; ok {
		e := el.Value.(*entry)
		c.stat(n.kind).MemoryBytes += int64(len(val) - len(e.val))
		e.val = val
		c.lru.MoveToFront(el)
	} else if int64(len(val)) <= c.opts.MaxMemoryBytes {
		c.byKey[n] = c.lru.PushFront(&entry{name: n, val: val})
		c.stat(n.kind).MemoryBytes += int64(len(val))
	}
	var total int64
	for _, s := range c.stats {
		total += s.MemoryBytes
	}
	for total > c.opts.MaxMemoryBytes && c.lru.Len() > 0 {
		e := c.lru.Remove(c.lru.Back()).(*entry)
		delete(c.byKey, e.name)
		s := c.stat(e.kind)
		s.MemoryBytes -= int64(len(e.val))
		s.Evicted++
		total -= int64(len(e.val))
	}
}

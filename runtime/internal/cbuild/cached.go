package cbuild

import (
	"github.com/gpucc/gpucc/codegen/cache"
)

// ModuleKey is the cache key, under cache.Wasm, of source's module built
// by t: it covers the source, the compiler and the flags.
func (t *Toolchain) ModuleKey(source string) cache.Key {
	return cache.NewKey([]byte(source), []byte(t.Key()))
}

// ObjectKey is the cache key, under cache.SharedObject, of source's
// shared object built by n: it covers the source, the compiler, the flags
// and the target.
func (n *Native) ObjectKey(source string) cache.Key {
	return cache.NewKey([]byte(source), []byte(n.Key()))
}

// Load hands use the artifact of kind stored under key in c, or, when c
// has none or use refuses the cached bytes, bytes fresh from build, which
// are then stored in c. It returns where the bytes use accepted came from
// (Miss: built now). Only bytes that use accepted are stored, and a cache
// that cannot be written costs only a rebuild next time. c may be nil (no
// cache).
//
// The bytes come from c authenticated (see package codegen/cache): a
// caller that must give a loader a file copies them into one no one else
// can reach (PrivateDir) instead of loading anything from the cache's
// directory.
func Load(c *cache.Cache, kind cache.Kind, key cache.Key, build func() ([]byte, error), use func([]byte) error) (cache.Source, error) {
	if c != nil {
		if b, src := c.Get(kind, key); src != cache.Miss && use(b) == nil {
			return src, nil
		}
	}
	b, err := build()
	if err != nil {
		return cache.Miss, err
	}
	if err := use(b); err != nil {
		return cache.Miss, err
	}
	if c != nil {
		_ = c.Put(kind, key, b)
	}
	return cache.Miss, nil
}

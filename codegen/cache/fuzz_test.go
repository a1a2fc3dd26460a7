package cache

import (
	"bytes"
	"os"
	"testing"
)

// FuzzDiskFile feeds arbitrary bytes as an entry's file, as an attacker
// who can write the directory could. Get never panics, and it serves
// nothing but a blob this cache sealed under that kind and key itself.
func FuzzDiskFile(f *testing.F) {
	dir := f.TempDir()
	c, err := Open(Options{Dir: dir, MaxMemoryBytes: 1})
	if err != nil {
		f.Fatal(err)
	}
	k := key("entry")
	genuine := []byte("genuine payload")
	f.Add(c.seal(name{Wasm, k}, genuine))
	f.Add(c.seal(name{Wasm, key("other")}, genuine))
	f.Add(c.seal(name{SharedObject, k}, genuine))
	f.Add([]byte(magic))
	f.Add([]byte{})
	p := c.path(name{Wasm, k})
	f.Fuzz(func(t *testing.T, file []byte) {
		if err := os.WriteFile(p, file, 0o600); err != nil {
			t.Fatal(err)
		}
		got, src := c.Get(Wasm, k)
		if src == Miss {
			return
		}
		if want := c.seal(name{Wasm, k}, got); !bytes.Equal(file, want) {
			t.Fatalf("served %q from a file this cache did not seal", got)
		}
		c.mu.Lock()
		for n, el := range c.byKey { // keep the memory tier empty
			c.lru.Remove(el)
			delete(c.byKey, n)
		}
		c.stats = map[Kind]*Stats{}
		c.mu.Unlock()
	})
}

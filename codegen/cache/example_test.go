package cache_test

import (
	"fmt"
	"os"

	"github.com/gpucc/gpucc/codegen/cache"
)

// Each kind of artifact has its own namespace in one cache; a second
// Cache over the same directory (a new process) finds the entries on
// disk, authenticated by the directory's key.
func Example() {
	dir, _ := os.MkdirTemp("", "gpucc-cache-example-")
	defer os.RemoveAll(dir)
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	k := cache.NewKey([]byte("a program"), []byte("a toolchain"))
	c.Put(cache.Wasm, k, []byte("\x00asm..."))

	later, _ := cache.Open(cache.Options{Dir: dir})
	_, src := later.Get(cache.Wasm, k)
	_, other := later.Get(cache.SharedObject, k)
	fmt.Println(src, other, later.Stats(cache.Wasm).DiskHits)
	// Output: disk miss 1
}

package cache

import (
	"fmt"
	"testing"
)

// BenchmarkGetDisk times a warm Get from disk, the MAC check included:
// the memory tier is too small to keep anything, so every Get opens,
// reads and authenticates the file. The sizes are those of a wasm module
// (2 KiB), a shared object (16 KiB) and a large blob (1 MiB).
func BenchmarkGetDisk(b *testing.B) {
	for _, size := range []int{2 << 10, 16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			c, err := Open(Options{Dir: b.TempDir(), MaxMemoryBytes: 1})
			if err != nil {
				b.Fatal(err)
			}
			k := key("entry")
			if err := c.Put(SharedObject, k, make([]byte, size)); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, src := c.Get(SharedObject, k); src != Disk {
					b.Fatalf("Get from %v", src)
				}
			}
		})
	}
}

// BenchmarkMAC times the MAC alone over the same sizes.
func BenchmarkMAC(b *testing.B) {
	c := &Cache{secret: make([]byte, secretLen)}
	for _, size := range []int{2 << 10, 16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			val := make([]byte, size)
			b.SetBytes(int64(size))
			for b.Loop() {
				c.mac(name{SharedObject, key("entry")}, make([]byte, 8), val)
			}
		})
	}
}

// BenchmarkPutFull times a Put of a 16 KiB blob (a shared object's size)
// into a disk tier that is full: 1000 entries at its bound, so that each
// Put evicts.
func BenchmarkPutFull(b *testing.B) {
	const size, entries = 16 << 10, 1000
	each := int64(hdrLen + size + macLen)
	c, err := Open(Options{Dir: b.TempDir(), MaxMemoryBytes: 1, MaxDiskBytes: entries * each})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, size)
	for i := range entries {
		if err := c.Put(SharedObject, key(fmt.Sprint(i)), val); err != nil {
			b.Fatal(err)
		}
	}
	i := entries
	for b.Loop() {
		if err := c.Put(SharedObject, key(fmt.Sprint(i)), val); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkOpenWarm times what a process that only reads pays to start on
// a directory of 4000 entries (a tier at its bound holds about 10,000
// WGSL entries): Open, then one Get from disk.
func BenchmarkOpenWarm(b *testing.B) {
	dir := b.TempDir()
	c, err := Open(Options{Dir: dir, MaxMemoryBytes: 1})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 4000 {
		if err := c.Put(WGSL, key(fmt.Sprint(i)), make([]byte, 64)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		c, err := Open(Options{Dir: dir, MaxMemoryBytes: 1})
		if err != nil {
			b.Fatal(err)
		}
		if _, src := c.Get(WGSL, key("7")); src != Disk {
			b.Fatalf("Get from %v", src)
		}
	}
}

//go:build !js

package gpu

import "testing"

// BenchmarkCopyChecked sets the readback's copy with the finiteness check
// riding on it (copyChecked, in cache-sized blocks) beside a copy followed
// by a separate parallel scan, over one 16 MiB staging chunk of finite
// values, in host memory only.
func BenchmarkCopyChecked(b *testing.B) {
	src := make([]byte, 16<<20)
	dst := make([]byte, 16<<20)
	for i := range src {
		src[i] = byte(i & 0x3f) // every float32 finite
		dst[i] = byte(i)
	}
	for range 3 {
		copyChecked(dst, src, true)
		copyOut(dst, src)
	}
	b.Run("copy", func(b *testing.B) { // the bound: no check
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			copyOut(dst, src)
		}
	})
	b.Run("copy+scan", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			copyOut(dst, src)
			parallel(len(dst), func(lo, hi int) { firstNonFinite(dst[lo:hi]) })
		}
	})
	b.Run("copyChecked", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			copyChecked(dst, src, true)
		}
	})
}

// BenchmarkFirstNonFinite is the finiteness check alone over one 64 KiB
// block (copyChecked's unit) of finite values.
func BenchmarkFirstNonFinite(b *testing.B) {
	src := make([]byte, checkBlock)
	for i := range src {
		src[i] = byte(i & 0x3f)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if firstNonFinite(src) >= 0 {
			b.Fatal("a finite block reported non-finite")
		}
	}
}

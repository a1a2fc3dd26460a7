//go:build !js

package gpu

import (
	"fmt"
	"math"
	"testing"
)

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

// BenchmarkCheckSmall is a small upload's finiteness check (UploadChecked
// below smallUpload and on the WriteBuffer path, each of a run's host
// inputs of 1024 values): firstNonFinite over the words, beside the
// float-by-float loop it replaced on 2026-12-05.
func BenchmarkCheckSmall(b *testing.B) {
	for _, n := range []int{1 << 10, 16 << 10} {
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(i%1000) - 3e38*float32(i%2)
		}
		b.Run(fmt.Sprintf("words/%d", n), func(b *testing.B) {
			b.SetBytes(4 * int64(n))
			for b.Loop() {
				if firstNonFinite(f32Bytes(data)) >= 0 {
					b.Fatal("finite data reported non-finite")
				}
			}
		})
		b.Run(fmt.Sprintf("floats/%d", n), func(b *testing.B) {
			b.SetBytes(4 * int64(n))
			for b.Loop() {
				if floatByFloat(data) >= 0 {
					b.Fatal("finite data reported non-finite")
				}
			}
		})
	}
}

// floatByFloat is the check small uploads made until 2026-12-05.
func floatByFloat(s []float32) int {
	for i, v := range s {
		if math.IsInf(float64(v), 0) || v != v {
			return i
		}
	}
	return -1
}

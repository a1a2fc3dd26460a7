package copycheck

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// reference is Copy's specification, a word at a time: the index of the
// first word of src whose exponent is all ones, or -1.
func reference(src []byte) int {
	for i := 0; i+4 <= len(src); i += 4 {
		if binary.LittleEndian.Uint32(src[i:])&0x7f800000 == 0x7f800000 {
			return i / 4
		}
	}
	return -1
}

// The words that are non-finite (every NaN payload's extremes, both
// signs) and the finite ones next to them, which must pass: the largest,
// the least subnormal, the zeros, the exponent one short of all ones.
var (
	nonFinite = []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0xffffffff, 0x7fbfffff}
	finite    = []uint32{0x7f7fffff, 0xff7fffff, 0x00000001, 0x80000001, 0, 0x80000000, 0x7f000000, 0x807fffff, 0x3f800000, 0x7e800000}
)

// TestCopy compares Copy with its specification over every length up to
// 1100 bytes, dst and src at every word offset within 32 bytes (and dst
// not word-aligned), a non-finite word at every place of the shorter
// lengths and at the 128-byte groups' edges of the longer ones, with and
// without the streaming stores: the index is the reference's, the words
// up to it are src's, finite data arrives whole, and no byte outside dst
// is written.
func TestCopy(t *testing.T) {
	if !Available {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(1, 2))
	const pad = 64
	srcMem := make([]byte, 2048+2*pad)
	dstMem := make([]byte, 2048+2*pad)
	fill := func(src []byte) {
		for i := 0; i+4 <= len(src); i += 4 {
			w := finite[r.IntN(len(finite))]
			if r.IntN(2) == 0 {
				w = r.Uint32()
				if w&0x7f800000 == 0x7f800000 {
					w ^= 0x00800000 // one exponent bit cleared: finite
				}
			}
			binary.LittleEndian.PutUint32(src[i:], w)
		}
	}
	check := func(t *testing.T, dst, src []byte, dstMem []byte, lo int, stream bool, what string) {
		t.Helper()
		for i := range dstMem {
			dstMem[i] = 0xa5
		}
		want := reference(src)
		got := Copy(dst, src, stream)
		if got != want {
			t.Fatalf("%s: Copy = %d, want %d", what, got, want)
		}
		end := len(src)
		if want >= 0 {
			end = 4*want + 4 // the non-finite word too: callers report it from dst
		}
		for i := range end {
			if dst[i] != src[i] {
				t.Fatalf("%s: dst[%d] = %#x, src's %#x", what, i, dst[i], src[i])
			}
		}
		for i := range dstMem {
			if (i < lo || i >= lo+len(dst)) && dstMem[i] != 0xa5 {
				t.Fatalf("%s: byte %d outside dst [%d,%d) written", what, i, lo, lo+len(dst))
			}
		}
	}
	for _, stream := range []bool{false, true} {
		for n := 0; n <= 1100; n += 4 {
			for _, so := range []int{0, 4, 12, 28} {
				for _, do := range []int{0, 4, 8, 20, 28, 1, 3} {
					src := srcMem[pad+so : pad+so+n]
					dst := dstMem[pad+do : pad+do+n]
					fill(src)
					check(t, dst, src, dstMem, pad+do, stream, "finite")
					var at []int
					switch {
					case n <= 300:
						for k := 0; k < n/4; k++ {
							at = append(at, k)
						}
					default:
						for _, b := range []int{0, 1, 31, 32, 33, 63, 64, 127, 128, 129, 200, n/4 - 33, n/4 - 32, n/4 - 1} {
							if b >= 0 && b < n/4 {
								at = append(at, b)
							}
						}
					}
					for _, k := range at {
						w := nonFinite[(k+n)%len(nonFinite)]
						binary.LittleEndian.PutUint32(src[4*k:], w)
						if k+3 < n/4 {
							binary.LittleEndian.PutUint32(src[4*(k+3):], 0x7f800000) // a later one is not reported
						}
						check(t, dst, src, dstMem, pad+do, stream, "bad")
						fill(src)
					}
				}
			}
		}
	}
}

// TestCopyEveryWord runs each 128-byte group through the assembly with
// one word set to each non-finite and each finite neighbour, at each of
// its 32 places: the exponent test of every lane of every register.
func TestCopyEveryWord(t *testing.T) {
	if !Available {
		t.Skip("no AVX2")
	}
	mem := make([]byte, 512+32)
	off := int(-uintptr(unsafe.Pointer(&mem[0])) & 31)
	src, dst := make([]byte, 256), mem[off:off+256]
	for k := range 64 {
		for _, w := range append(append([]uint32{}, nonFinite...), finite...) {
			for i := 0; i < len(src); i += 4 {
				binary.LittleEndian.PutUint32(src[i:], 0x3f800000)
			}
			binary.LittleEndian.PutUint32(src[4*k:], w)
			want := reference(src)
			if got := int(copyCheckAVX2(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), 256, k%2 == 0)); (want < 0) != (got == 256) || want >= 0 && got != want/32*128 {
				t.Fatalf("word %d = %#08x: the assembly copied %d bytes; the first non-finite word is %d", k, w, got, want)
			}
			if got := Copy(dst, src, k%2 == 1); got != want {
				t.Fatalf("word %d = %#08x: Copy = %d, want %d", k, w, got, want)
			}
		}
	}
}

// BenchmarkCopy is Copy over 16 MiB of finite words, beside Go's copy.
func BenchmarkCopy(b *testing.B) {
	src, dst := make([]byte, 16<<20), make([]byte, 16<<20)
	for i := range src {
		src[i] = byte(i & 0x3f)
		dst[i] = byte(i)
	}
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			copy(dst, src)
		}
	})
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "checked", true: "checked-stream"}[stream], func(b *testing.B) {
			if !Available {
				b.Skip("no AVX2")
			}
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if Copy(dst, src, stream) >= 0 {
					b.Fatal("finite data reported non-finite")
				}
			}
		})
	}
}

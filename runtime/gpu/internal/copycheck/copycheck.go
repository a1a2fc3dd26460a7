// Package copycheck copies float32 words and finds the first one that is
// ±Inf or NaN in the same pass over them: each 128 bytes are loaded once,
// checked in registers and stored, where a check and a copy of the same
// block read it twice (once from memory, once from the cache) and do not
// overlap a core's loads with its stores. A transfer's finiteness check
// (runtime/gpu's copyChecked, on every DeviceTensor upload and read) then
// costs about what the copy alone costs.
//
// It is assembly for amd64 with AVX2 (Available); elsewhere Copy is not
// to be called. It is its own package because a package that uses cgo
// hands its .s files to the C compiler.
package copycheck

import "unsafe"

// Copy copies src into dst, which have the same length, a multiple of 4,
// and returns the index of the first float32 word (little-endian) of src
// whose exponent is all ones (±Inf or NaN), or -1. When it finds one, it
// and the words before it are copied (a caller names the value it reads
// back there) and the rest of dst is unspecified. With
// stream, the stores go around the cache (non-temporal), for copies
// larger than it. Copy requires Available.
func Copy(dst, src []byte, stream bool) int {
	n := len(src) &^ 3
	if len(dst) < n {
		panic("copycheck: dst shorter than src")
	}
	if n == 0 {
		return -1
	}
	// The assembly's stores are aligned to 32 bytes: the words before
	// dst's first such address are copied here, and a dst that is not
	// even word-aligned is copied here whole.
	head := int(-uintptr(unsafe.Pointer(&dst[0])) & 31)
	if head%4 != 0 || n-head < 128 {
		return scalar(dst[:n], src[:n])
	}
	if k := scalar(dst[:head], src[:head]); k >= 0 {
		return k
	}
	body := (n - head) &^ 127
	done := int(copyCheckAVX2(unsafe.Pointer(&dst[head]), unsafe.Pointer(&src[head]), uintptr(body), stream))
	if done < body { // the 128 bytes at head+done hold a non-finite word
		at := head + done
		return at/4 + scalar(dst[at:at+128], src[at:at+128])
	}
	at := head + body
	if k := scalar(dst[at:n], src[at:n]); k >= 0 {
		return at/4 + k
	}
	return -1
}

// scalar is Copy a word at a time, up to the first non-finite word.
func scalar(dst, src []byte) int {
	for i := 0; i+4 <= len(src); i += 4 {
		copy(dst[i:i+4], src[i:i+4])
		w := uint32(src[i]) | uint32(src[i+1])<<8 | uint32(src[i+2])<<16 | uint32(src[i+3])<<24
		if w&0x7f800000 == 0x7f800000 {
			return i / 4
		}
	}
	return -1
}

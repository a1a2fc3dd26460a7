package copycheck

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Available reports whether Copy runs here: on amd64 with AVX2.
var Available = cpu.X86.HasAVX2

// copyCheckAVX2 copies n bytes (a multiple of 128) from src to dst
// (32-byte aligned) 128 at a time, each checked before it is stored,
// and returns the bytes copied: n, or the offset of the first 128 bytes
// that hold a word with an all-ones exponent (not stored). With stream
// the stores are non-temporal (VMOVNTDQ), fenced before it returns.
//
//go:noescape
func copyCheckAVX2(dst, src unsafe.Pointer, n uintptr, stream bool) uintptr

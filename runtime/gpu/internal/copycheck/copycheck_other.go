//go:build !amd64

package copycheck

import "unsafe"

// Available reports whether Copy runs here: on amd64 with AVX2.
var Available = false

func copyCheckAVX2(dst, src unsafe.Pointer, n uintptr, stream bool) uintptr {
	panic("copycheck: no assembly on this architecture")
}

//go:build js

package gpucc

import "slices"

// In the browser the wasm backend can never start: it compiles kernels
// with Clang, which a page does not have. Auto selection there tries
// webgpu, webgl2 and cpu, so a visitor is not told to install Clang; an
// explicit "wasm" still fails with backend_unavailable.
func init() {
	Chain = slices.DeleteFunc(slices.Clone(Chain), func(b string) bool { return b == "wasm" })
}

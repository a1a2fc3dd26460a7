//go:build js

package gpucc

import "slices"

// In the browser the wasm backend runs its modules in the page's own
// WebAssembly, and a page has no Clang: the server that served it builds
// them (runtime/wasm's BuildPath), which only gpucc's own server does.
// Auto selection there tries webgpu, webgl2 and cpu, so a visitor of a
// page served elsewhere is not told to install Clang; an explicit "wasm"
// asks the server.
func init() {
	Chain = slices.DeleteFunc(slices.Clone(Chain), func(b string) bool { return b == "wasm" })
}

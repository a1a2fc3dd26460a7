//go:build !js

package gpucc

import "slices"

// Outside the browser the webgl2 backend is never built in (runtime/webgl2
// runs only in js/wasm, on the page's WebGL2 context), so auto selection
// there tries webgpu, wasm and cpu instead of recording an attempt at a
// backend that cannot exist in this binary.
func init() {
	Chain = slices.DeleteFunc(slices.Clone(Chain), func(b string) bool { return b == "webgl2" })
}

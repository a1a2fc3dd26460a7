// Package all registers every backend this build supports: cpu and wasm
// everywhere, native where purego can load shared objects, webgpu where
// cgo links wgpu-native, and the browser's webgpu and webgl2 under
// GOOS=js. Import it for its side effect:
//
//	import _ "github.com/gpucc/gpucc/runtime/all"
package all

import (
	_ "github.com/gpucc/gpucc/runtime/cpu"  // the reference
	_ "github.com/gpucc/gpucc/runtime/wasm" // wazero: pure Go
)

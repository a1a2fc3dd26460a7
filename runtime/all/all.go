// Package all registers every backend this build supports: cpu and wasm
// everywhere, native where purego can load shared objects, webgpu where
// cgo links wgpu-native, and the browser's webgpu and webgl2 under
// GOOS=js; and every backend's Exporter everywhere (gpucc build makes
// their artifacts wherever it runs). Import it for its side effect:
//
//	import _ "github.com/gpucc/gpucc/runtime/all"
package all

import (
	_ "github.com/gpucc/gpucc/runtime/cpu"    // the reference
	_ "github.com/gpucc/gpucc/runtime/native" // purego where it can load shared objects; its exporter everywhere
	_ "github.com/gpucc/gpucc/runtime/wasm"   // wazero: pure Go
	_ "github.com/gpucc/gpucc/runtime/webgl2" // the browser's WebGL2 under GOOS=js; its exporter everywhere
	_ "github.com/gpucc/gpucc/runtime/webgpu" // wgpu-native with cgo, navigator.gpu under GOOS=js; its exporter everywhere
)

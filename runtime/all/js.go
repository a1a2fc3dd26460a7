//go:build js

package all

import (
	_ "github.com/gpucc/gpucc/runtime/webgl2" // the browser's WebGL2
	_ "github.com/gpucc/gpucc/runtime/webgpu" // the browser's navigator.gpu
)

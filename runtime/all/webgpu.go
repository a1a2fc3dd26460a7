//go:build cgo && !js

package all

import _ "github.com/gpucc/gpucc/runtime/webgpu" // wgpu-native needs cgo

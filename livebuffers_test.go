//go:build !js

package gpucc_test

import "github.com/gpucc/gpucc/runtime/gpu"

// liveBuffers counts the webgpu device buffers of the process (zero where
// no webgpu device was opened).
func liveBuffers() int64 { return gpu.LiveBuffers() }

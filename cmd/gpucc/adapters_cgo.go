//go:build cgo

package main

import "github.com/gpucc/gpucc/runtime/gpu"

// adapters lists the GPU adapters wgpu-native finds.
func adapters() (any, error) { return gpu.Adapters() }

//go:build !cgo

package main

import "errors"

// adapters says that a build without cgo has no wgpu-native to ask.
func adapters() (any, error) {
	return []any{}, errors.New("this gpucc was built without cgo: no webgpu backend, no adapters")
}

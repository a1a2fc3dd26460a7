//go:build !js

package wasm

import (
	"context"
	goruntime "runtime"

	"github.com/gpucc/gpucc/codegen/cache"
)

// newEngine is wazero: its compiler where it has one, else its
// interpreter. It runs every kernel on one thread, whatever threads asks.
func newEngine(threads int) (engine, error) {
	return newWazero(goruntime.GOARCH == "amd64" || goruntime.GOARCH == "arm64"), nil
}

// remoteBuild is none outside the page: a device without a toolchain runs
// prebuilt modules only.
func remoteBuild() (func(context.Context, string, BuildRequest) ([]byte, error), func(string) cache.Key) {
	return nil, nil
}

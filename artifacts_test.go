package gpucc_test

import "testing"

func TestWasmCacheOffWritesNothing(t *testing.T) {
	wasmOpen(t) // skips without a toolchain
	cacheOffWritesNothing(t, "wasm")
}

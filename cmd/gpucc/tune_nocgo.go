//go:build !cgo

package main

import "github.com/gpucc/gpucc/ir"

// tuneCmd says that a build without cgo has no webgpu device to tune.
func tuneCmd(*tuneOpts, bool) int {
	return fail(ir.Errorf(ir.CodeBackendUnavailable, -1, "", "this gpucc was built without cgo: no webgpu backend to tune"))
}

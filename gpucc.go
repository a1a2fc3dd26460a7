// Package gpucc compiles tensor graphs once and runs them many times on a
// backend: webgpu (wgpu-native, or the browser's navigator.gpu under
// GOOS=js), webgl2 (in the browser), wasm (Clang-compiled C run by wazero),
// native (the system C compiler's shared objects) and cpu (the reference,
// cpuref).
//
// The life of a graph:
//
//	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "auto"})
//	exe, err := rt.Compile(ctx, g)              // validate, plan, generate and compile, once
//	res, err := exe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(shape, data)})
//
// Compile validates the graph, runs the passes for the device's Profile
// (Seal) and has the backend compile the sealed Plan (Load). Run checks the
// inputs, runs every kernel once and returns the outputs. Inputs are given
// by name; an input not given takes the data embedded in the graph. An
// input without a name is named "input<N>" (ir.DefaultInputName): N is its
// id in the protocol v1 document, which Decode's lowering of broadcasts
// and reductions never shifts, or its node id in a graph built in Go. A
// graph where another input is already named so is refused
// (invalid_graph), so a name never means two inputs. Plan.Inputs lists
// every input with its name and node.
//
// Data can stay on the device between runs: Runtime.Upload makes a
// DeviceTensor, an input given as one is not uploaded again, and
// RunOptions.Keep leaves chosen outputs on the device as DeviceTensors for
// the next run. A tensor belongs to its Runtime; using it after Release,
// after the Runtime's Close, or on another Runtime fails with
// ir.CodeInvalidTensor. Options.MaxDeviceBytes caps the device memory held
// by tensors and a run's buffers, checked before allocation
// (ir.CodeLimitExceeded). Trainer runs SGD with parameters resident.
//
// Backends are packages under runtime/ that register themselves; import
// github.com/gpucc/gpucc/runtime/all for every backend this build
// supports, or single ones (runtime/cpu, runtime/wasm, ...). Auto selection
// tries Chain in order and records every failed initialisation in
// Result.FallbackAttempts; an explicit choice fails with
// backend_unavailable instead of downgrading. A missing GPU is never
// reported as a GPU result.
//
// Every blocking call takes a context.Context and returns its error once it
// is done; a cancelled run releases everything it allocated. A Runtime is
// safe for concurrent use; its calls are serialised.
package gpucc

import (
	"context"
	"errors"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Adapter describes the device a backend runs on.
type Adapter = backend.Adapter

// Profile is a named set of device limits that a compilation targets; see
// passes.Profile. passes.WebGPUDefault is every adapter's.
type Profile = passes.Profile

// Backends returns the names of the backends built into this binary.
func Backends() []string { return backend.Names() }

// Error is a runtime error with a stable code, naming the backend.
type Error = backend.Error

// CodeOf returns the stable code of err: its own, or internal; a nil err
// (no failure) has no code, "".
func CodeOf(err error) ir.Code {
	if err == nil {
		return ""
	}
	var c interface{ ErrorCode() ir.Code }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ir.CodeExecutionFailed
	}
	return ir.CodeInternal
}

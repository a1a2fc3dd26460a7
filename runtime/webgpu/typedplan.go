package webgpu

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/typedplan"
)

// The typed plan (runtime/internal/typedplan), as the device files name it.
type (
	typedPlan   = typedplan.Plan
	typedStep   = typedplan.Step
	islandGraph = typedplan.Island
)

var (
	planTyped    = typedplan.New
	islandLimits = typedplan.Limits
)

// floatIsland is a run of float32 nodes of a typed graph compiled as a
// float32 program of its own (passes.Compile, the WGSL kernels every
// float32 graph gets), reading the nodes before it as its inputs.
type floatIsland struct {
	exe    backend.Executable
	prog   *ir.Program
	inputs []int // by program buffer: the graph node an input buffer holds, else -1
	outs   []int // by program output: the graph node it is
}

// typedFault returns the *backend.TypedFault of fault words one per node
// (wgsl.FaultPerNode): the first node in graph order that faulted, as
// the reference stops at it, or nil.
func typedFault(faults []uint32) error {
	for i, f := range faults {
		switch f {
		case 0:
		case wgsl.FaultInteger:
			return &backend.TypedFault{Code: ir.CodeIntegerFault, Node: i}
		case wgsl.FaultIndex:
			return &backend.TypedFault{Code: ir.CodeInvalidInput, Node: i}
		case wgsl.FaultU64:
			return &backend.TypedFault{Code: ir.CodeUnsupported, Node: i}
		default:
			return &backend.Error{Code: ir.CodeInternal, Backend: "webgpu", Err: fmt.Errorf("a typed kernel set fault %d at node %d", f, i)}
		}
	}
	return nil
}

// inputAt is inputs[i], or nil past its end (for a message about a
// missing input).
func inputAt(inputs [][]byte, i int) []byte {
	if i < len(inputs) {
		return inputs[i]
	}
	return nil
}

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
		default:
			return &backend.Error{Code: ir.CodeInternal, Backend: "webgpu", Err: fmt.Errorf("a typed kernel set fault %d at node %d", f, i)}
		}
	}
	return nil
}

// typedFlushRisk refuses node i's typed kernel where its float32 or bfloat16
// arithmetic may meet a driver that flushes subnormals: on the H200
// (NVIDIA's Vulkan driver, 2026-12-04) the typed kernels' float32 and
// bfloat16 rows (mul, add, erf, relu, compare, the scalar forms) gave ±0
// for subnormal results and operands, where cpuref keeps them; lavapipe
// and SwiftShader keep them. Until a probe or subnormal-safe rows exist,
// such a node is refused by name on a hardware adapter rather than risked
// (float16 is computed by bits and from float32 values that are never
// subnormal; float32 work in islands is the float compiler's, exact there).
func typedFlushRisk(g *ir.Graph, i int, software bool) error {
	if software {
		return nil
	}
	n := g.Nodes[i]
	info := n.Op.Info()
	if !info.Elementwise || info.Expr == nil || len(n.Args) == 0 || n.Op == ir.OpCast {
		return nil
	}
	if t := g.Nodes[n.Args[0]].DType; t == ir.F32 || t == ir.BF16 {
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v in a typed kernel on a hardware adapter: its subnormals are not kept there by every driver (NVIDIA's flushes them), so gpucc does not run it yet", n.Op, t)
	}
	return nil
}

package webgpu

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// typedPlan is how a typed graph runs: in order, stretches of typed
// kernels (wgsl.TypedNode, one per node) and float32 islands (runs of
// consecutive float32 nodes, compiled as float32 programs). It is plain
// Go, shared by the native and the browser device.
type typedPlan struct {
	steps   []typedStep
	island  []bool // by node: an island computes it
	islands []islandGraph
}

// planTyped splits g's nodes that are not inputs into steps; with islands
// false, every node is a typed kernel (the row tests, which check the
// typed kernels of float32 rows too).
func planTyped(g *ir.Graph, islands bool) typedPlan {
	p := typedPlan{island: make([]bool, len(g.Nodes))}
	var runs [][]int
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			continue
		}
		if islands && floatNode(g, i) {
			if len(p.steps) == 0 || p.steps[len(p.steps)-1].island < 0 {
				p.steps = append(p.steps, typedStep{island: len(runs)})
				runs = append(runs, nil)
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], i)
			p.island[i] = true
			continue
		}
		if len(p.steps) == 0 || p.steps[len(p.steps)-1].island >= 0 {
			p.steps = append(p.steps, typedStep{island: -1})
		}
		p.steps[len(p.steps)-1].nodes = append(p.steps[len(p.steps)-1].nodes, i)
	}
	for _, nodes := range runs {
		p.islands = append(p.islands, newIsland(g, nodes))
	}
	return p
}

// floatNode reports whether node i of g is float32 over float32 operands
// with a float32 kernel (cpuref computes it by Eval's rule): the compiled
// float32 path runs it, fused with its neighbours, in an island.
func floatNode(g *ir.Graph, i int) bool {
	n := &g.Nodes[i]
	if n.DType != ir.F32 || n.Op.Info().Typed || n.Op == ir.OpInput {
		return false
	}
	for _, a := range n.Args {
		if g.Nodes[a].DType != ir.F32 {
			return false
		}
	}
	return true
}

// typedStep is a stretch of a typed run: typed nodes' kernels dispatched
// together (island < 0), or float32 island number island.
type typedStep struct {
	nodes  []int
	island int
}

// floatIsland is a run of float32 nodes of a typed graph compiled as a
// float32 program of its own (passes.Compile, the WGSL kernels every
// float32 graph gets), reading the nodes before it as its inputs.
type floatIsland struct {
	exe    backend.Executable
	prog   *ir.Program
	inputs []int // by program buffer: the graph node an input buffer holds, else -1
	outs   []int // by program output: the graph node it is
}

// islandLimits bound an island's program: the whole graph was validated
// under the Runtime's limits already.
var islandLimits = ir.Limits{MaxNodes: 1 << 30, MaxElements: 1 << 40, MaxStorageBytes: 1 << 50, MaxOps: 1 << 60,
	MaxKernelOps: 1 << 40, MaxOutputs: 1 << 30, MaxAttrValues: 1 << 30, NonFinite: true}

// islandGraph is an island's float32 nodes as a graph of their own: their
// operands from outside are its inputs (ext: the graph node each input
// node holds), and each node that a later node or a graph output reads is
// an output (outs, in the order of g.Outputs); g is nil when none is read.
type islandGraph struct {
	g    *ir.Graph
	ext  map[ir.NodeID]int
	outs []int
}

// newIsland returns the islandGraph of nodes of g.
func newIsland(g *ir.Graph, nodes []int) islandGraph {
	in := map[int]bool{}
	for _, i := range nodes {
		in[i] = true
	}
	used := map[int]bool{}
	for j, n := range g.Nodes {
		for _, a := range n.Args {
			if !in[j] {
				used[int(a)] = true
			}
		}
	}
	for _, o := range g.Outputs {
		used[int(o.ID)] = true
	}
	ig := &ir.Graph{}
	at := map[int]ir.NodeID{}  // graph node -> island node
	ext := map[ir.NodeID]int{} // island input node -> the graph node it holds
	for _, i := range nodes {
		n := g.Nodes[i]
		args := make([]ir.NodeID, len(n.Args))
		for k, a := range n.Args {
			if _, ok := at[int(a)]; !ok {
				an := g.Nodes[a]
				at[int(a)] = ir.NodeID(len(ig.Nodes))
				ig.Nodes = append(ig.Nodes, ir.Node{Op: ir.OpInput, Shape: an.Shape, Data: make([]float32, an.Shape.Len()), Name: fmt.Sprintf("x%d", a)})
				ext[at[int(a)]] = int(a)
			}
			args[k] = at[int(a)]
		}
		n.Args = args
		at[i] = ir.NodeID(len(ig.Nodes))
		ig.Nodes = append(ig.Nodes, n)
	}
	var outs []int
	for _, i := range nodes {
		if used[i] {
			ig.Outputs = append(ig.Outputs, ir.Output{Name: fmt.Sprintf("y%d", i), ID: at[i]})
			outs = append(outs, i)
		}
	}
	if len(outs) == 0 { // nothing reads it
		return islandGraph{}
	}
	return islandGraph{g: ig, ext: ext, outs: outs}
}

// mapping returns, for a program compiled from the island's graph, the
// graph node each input buffer holds (-1 for the others) and the graph
// node each program output is.
func (ig islandGraph) mapping(prog *ir.Program) (inputs, outs []int) {
	inputs = make([]int, len(prog.Buffers))
	for b, pb := range prog.Buffers {
		inputs[b] = -1
		if pb.Input {
			inputs[b] = ig.ext[pb.Node]
		}
	}
	byName := map[string]int{}
	for k, i := range ig.outs {
		byName[ig.g.Outputs[k].Name] = i
	}
	for _, po := range prog.Outputs {
		outs = append(outs, byName[po.Name])
	}
	return inputs, outs
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

// Package typedplan splits a typed graph for a device backend (webgpu,
// webgl2): stretches of typed kernels, one per node, and float32 islands,
// runs of consecutive float32 nodes that the backend compiles as float32
// programs of their own (fused, with its float32 kernels), reading the
// nodes before them.
package typedplan

import (
	"fmt"

	"github.com/gpucc/gpucc/ir"
)

// Plan is how a typed graph runs: in order, stretches of typed kernels
// (one per node) and float32 islands (runs of consecutive float32 nodes,
// compiled as float32 programs).
type Plan struct {
	Steps   []Step
	Island  []bool // by node: an island computes it
	Islands []Island
}

// New splits g's nodes that are not inputs into Steps; with islands
// false, every node is a typed kernel (the row tests, which check the
// typed kernels of float32 rows too).
func New(g *ir.Graph, islands bool) Plan {
	p := Plan{Island: make([]bool, len(g.Nodes))}
	var runs [][]int
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			continue
		}
		if islands && FloatNode(g, i) {
			if len(p.Steps) == 0 || p.Steps[len(p.Steps)-1].Island < 0 {
				p.Steps = append(p.Steps, Step{Island: len(runs)})
				runs = append(runs, nil)
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], i)
			p.Island[i] = true
			continue
		}
		if len(p.Steps) == 0 || p.Steps[len(p.Steps)-1].Island >= 0 {
			p.Steps = append(p.Steps, Step{Island: -1})
		}
		p.Steps[len(p.Steps)-1].Nodes = append(p.Steps[len(p.Steps)-1].Nodes, i)
	}
	for _, nodes := range runs {
		p.Islands = append(p.Islands, newIsland(g, nodes))
	}
	return p
}

// FloatNode reports whether node i of g is float32 over float32 operands
// with a float32 kernel (cpuref computes it by Eval's rule): the compiled
// float32 path runs it, fused with its neighbours, in an island.
func FloatNode(g *ir.Graph, i int) bool {
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

// Step is a stretch of a typed run: typed nodes' kernels dispatched
// together (Island < 0), or float32 island number Island.
type Step struct {
	Nodes  []int
	Island int
}

// Limits bound an island's program: the whole graph was validated
// under the Runtime's limits already.
var Limits = ir.Limits{MaxNodes: 1 << 30, MaxElements: 1 << 40, MaxStorageBytes: 1 << 50, MaxOps: 1 << 60,
	MaxKernelOps: 1 << 40, MaxOutputs: 1 << 30, MaxAttrValues: 1 << 30, NonFinite: true}

// Island is an island's float32 nodes as a graph of their own: their
// operands from outside are its inputs (ext: the graph node each input
// node holds), and each node that a later node or a graph output reads is
// an output (outs, in the order of Graph.Outputs); Graph is nil when none
// is read.
type Island struct {
	Graph *ir.Graph
	ext   map[ir.NodeID]int
	outs  []int
}

// newIsland returns the Island of nodes of g.
func newIsland(g *ir.Graph, nodes []int) Island {
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
		return Island{}
	}
	return Island{Graph: ig, ext: ext, outs: outs}
}

// Mapping returns, for a program compiled from the island's graph, the
// graph node each input buffer holds (-1 for the others) and the graph
// node each program output is.
func (ig Island) Mapping(prog *ir.Program) (inputs, outs []int) {
	inputs = make([]int, len(prog.Buffers))
	for b, pb := range prog.Buffers {
		inputs[b] = -1
		if pb.Input {
			inputs[b] = ig.ext[pb.Node]
		}
	}
	byName := map[string]int{}
	for k, i := range ig.outs {
		byName[ig.Graph.Outputs[k].Name] = i
	}
	for _, po := range prog.Outputs {
		outs = append(outs, byName[po.Name])
	}
	return inputs, outs
}

package passes

import (
	"fmt"
	"math"

	"github.com/gpucc/gpucc/ir"
)

// cse redirects every use of a node to the first identical node: same op,
// same arguments (in either order for commutative ops), same shape, the
// same scalar bits and the same attributes. Inputs are never merged: each is its own upload.
// The duplicates are left for dce.
func cse(st *State) error {
	g := st.Graph
	first := make(map[string]ir.NodeID)
	repl := make([]ir.NodeID, len(g.Nodes))
	for i := range g.Nodes {
		n := &g.Nodes[i]
		repl[i] = ir.NodeID(i)
		for k, a := range n.Args {
			n.Args[k] = repl[a]
		}
		if n.Op == ir.OpInput {
			continue
		}
		args := n.Args
		if n.Op.Info().Commutative && args[0] > args[1] {
			args = []ir.NodeID{args[1], args[0]}
		}
		key := fmt.Sprintf("%d %v %v %x %v", n.Op, args, n.Shape, math.Float32bits(n.Scalar), n.Attrs)
		if j, ok := first[key]; ok {
			repl[i] = j
			continue
		}
		first[key] = ir.NodeID(i)
	}
	for k := range g.Outputs {
		g.Outputs[k].ID = repl[g.Outputs[k].ID]
	}
	return nil
}

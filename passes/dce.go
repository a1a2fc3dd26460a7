package passes

import "github.com/gpucc/gpucc/ir"

// dce drops nodes that reach no output and renumbers the rest, keeping
// their order (so the graph stays topological) and st.Origin in step.
func dce(st *State) error {
	g := st.Graph
	live := make([]bool, len(g.Nodes))
	for _, o := range g.Outputs {
		live[o.ID] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		if live[i] {
			for _, a := range g.Nodes[i].Args {
				live[a] = true
			}
		}
	}
	newID := make([]ir.NodeID, len(g.Nodes))
	nodes := g.Nodes[:0]
	origin := st.Origin[:0]
	for i, n := range g.Nodes {
		if !live[i] {
			continue
		}
		newID[i] = ir.NodeID(len(nodes))
		for k, a := range n.Args {
			n.Args[k] = newID[a]
		}
		nodes = append(nodes, n)
		origin = append(origin, st.Origin[i])
	}
	g.Nodes, st.Origin = nodes, origin
	for k := range g.Outputs {
		g.Outputs[k].ID = newID[g.Outputs[k].ID]
	}
	return nil
}

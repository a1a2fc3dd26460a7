package codegen

import "github.com/gpucc/gpucc/ir"

// The structural typed rows (issue 32): the ops that only move values
// (the views, gather, gather_elements), for every dtype, as one
// target-neutral table that C, WGSL and GLSL render, as TypedIntRows does
// the integer arithmetic. A row says where each element of its node comes
// from; no target works it out again.

// TypedMove is where the elements of one structural node come from:
// element e (row-major over the node's shape) is element
//
//	Source(e) + wrap(indices[Index(e)]) · Step
//
// of its data (argument 0), where Source and Index are operands over the
// node's shape (Index renders their offsets in every target) and indices
// is argument 1, int32 or int64; wrap takes an index in [-Bound, Bound)
// into [0, Bound) and faults (invalid_input, naming the node) on one
// outside, never reading out of bounds. A row without indices (a view)
// is Source(e) alone.
type TypedMove struct {
	Source  ir.Operand
	Indexed bool
	Index   ir.Operand
	Step    int
	Bound   int
}

// TypedMoves are the structural rows, by op. Every op whose row is a view
// (ir.OpInfo.View) or takes indices (TypeRule.Index) has one
// (TestTypedMovesComplete); TestTypedMovesMeanTheirRules checks each
// against the reference's element map.
var TypedMoves = map[ir.Op]func(g *ir.Graph, n *ir.Node) TypedMove{
	ir.OpTranspose:      viewMove,
	ir.OpPermute:        viewMove,
	ir.OpBroadcast:      viewMove,
	ir.OpReshape:        viewMove,
	ir.OpGather:         gatherMove,
	ir.OpGatherElements: gatherElementsMove,
}

// TypedMoveOf returns node i's structural row, and false when its op has
// none.
func TypedMoveOf(g *ir.Graph, i int) (TypedMove, bool) {
	n := &g.Nodes[i]
	f, ok := TypedMoves[n.Op]
	if !ok {
		return TypedMove{}, false
	}
	return f(g, n), true
}

// viewMove: a view reads its argument through strides over its own shape
// (the reference's map, cpuref.ViewSources).
func viewMove(g *ir.Graph, n *ir.Node) TypedMove {
	from := g.Nodes[n.Args[0]].Shape
	switch n.Op {
	case ir.OpTranspose: // the last two axes swapped
		r := len(from)
		perm := make([]int, r)
		for d := range perm {
			perm[d] = d
		}
		perm[r-2], perm[r-1] = r-1, r-2
		return TypedMove{Source: ir.Operand{Shape: n.Shape, Strides: ir.PermuteStrides(ir.RowMajor(from), perm)}}
	case ir.OpPermute:
		return TypedMove{Source: ir.Operand{Shape: n.Shape, Strides: ir.PermuteStrides(ir.RowMajor(from), n.Op.Attr(n.Attrs, "perm"))}}
	case ir.OpReshape: // the same elements in the same order
		return TypedMove{Source: ir.PlainOperand(0, n.Shape)}
	}
	return TypedMove{Source: ir.PlainOperand(0, from).BroadcastTo(n.Shape)}
}

// gatherMove: data [outer…, d, inner…] gathered along its axis by indices
// of shape q gives [outer…, q…, inner…]: the outer and inner coordinates
// are the data's own, the q ones pick the index.
func gatherMove(g *ir.Graph, n *ir.Node) TypedMove {
	ds, is := g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[1]].Shape
	ax := ir.GatherAxis(n.Attrs, len(ds))
	dst, ist := ir.RowMajor(ds), ir.RowMajor(is)
	src := make([]int, 0, len(n.Shape))
	idx := make([]int, 0, len(n.Shape))
	src = append(src, dst[:ax]...)
	idx = append(idx, make([]int, ax)...)
	src = append(src, make([]int, len(is))...)
	idx = append(idx, ist...)
	src = append(src, dst[ax+1:]...)
	idx = append(idx, make([]int, len(ds)-ax-1)...)
	return TypedMove{Source: ir.Operand{Shape: n.Shape, Strides: src}, Indexed: true,
		Index: ir.Operand{Shape: n.Shape, Strides: idx}, Step: dst[ax], Bound: ds[ax]}
}

// gatherElementsMove: element p of the indices' shape reads data at p
// with its axis coordinate replaced by the index.
func gatherElementsMove(g *ir.Graph, n *ir.Node) TypedMove {
	ds := g.Nodes[n.Args[0]].Shape
	ax := ir.IndexAxis(n.Op, n.Attrs, len(ds))
	st := ir.RowMajor(ds)
	step := st[ax]
	st[ax] = 0
	return TypedMove{Source: ir.Operand{Shape: n.Shape, Strides: st}, Indexed: true,
		Index: ir.PlainOperand(0, n.Shape), Step: step, Bound: ds[ax]}
}

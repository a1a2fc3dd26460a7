package codegen

import "github.com/gpucc/gpucc/ir"

// ScatterGather is a scatter node (ir/scatter.go) from the output's side,
// as WebGL2 computes every element and WebGPU's linear passes an element
// that two or more updates aim at under a reduction (codegen/wgsl's
// TypedKernels), one output element e per invocation without atomics: e starts as data[e]; then, for each candidate c in
// [0, Candidates) ascending, the update element Upd(e) + c·UpdStep is
// applied to e (stored, or combined by the reduction's row) when its index
// components idx[Idx(e) + c·IdxStep + j], each wrapped from [-Bounds[j],
// Bounds[j]) (one outside faults with invalid_input), equal e's
// coordinates Coords[j](e). The candidates of e are the only update
// elements that can aim at it, in the updates' row-major order, so e
// folds exactly the updates the reference applies to it, in its order:
// the same bits. Where a guard fails (Coord(e) ≥ Limit) no update can aim
// at e. Each element costs Candidates index checks: scatter_nd's index
// rows, scatter_elements' indices along the axis (not the updates).
type ScatterGather struct {
	Candidates       int
	Upd, Idx         ir.Operand // over the output's shape
	UpdStep, IdxStep int
	Coords           []ir.Operand // a coordinate of e: one stride of 1
	Bounds           []int
	Guards           []ScatterGuard
	Reduction        ir.ScatterReduction
}

// TypedScatters are the scatter rows, by op: the indexed rows that write
// (TestTypedMovesComplete: with TypedMoves, every indexed op's row).
var TypedScatters = map[ir.Op]func(g *ir.Graph, n *ir.Node) ScatterGather{
	ir.OpScatterND:       ScatterGatherOf,
	ir.OpScatterElements: ScatterGatherOf,
}

// ScatterGuard says that e has candidates only where Coord(e) < Limit.
type ScatterGuard struct {
	Coord ir.Operand
	Limit int
}

// ScatterGatherOf returns node n's (a validated scatter_nd or
// scatter_elements of g) output-side form.
func ScatterGatherOf(g *ir.Graph, n *ir.Node) ScatterGather {
	ds, is := g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[2]].Shape
	r := len(ds)
	coord := func(d int) ir.Operand {
		st := make([]int, r)
		st[d] = 1
		return ir.Operand{Shape: ds, Strides: st}
	}
	sg := ScatterGather{Reduction: ir.ScatterReductionOf(n.Op, n.Attrs)}
	if n.Op == ir.OpScatterElements {
		ax := ir.IndexAxis(n.Op, n.Attrs, r)
		ust := ir.RowMajor(is) // the updates' shape is the indices'
		st := append([]int{}, ust...)
		st[ax] = 0
		sg.Candidates = is[ax]
		sg.Upd = ir.Operand{Shape: ds, Strides: st}
		sg.Idx = sg.Upd
		sg.UpdStep, sg.IdxStep = ust[ax], ust[ax]
		sg.Coords, sg.Bounds = []ir.Operand{coord(ax)}, []int{ds[ax]}
		for d := range r {
			if d != ax && is[d] < ds[d] {
				sg.Guards = append(sg.Guards, ScatterGuard{coord(d), is[d]})
			}
		}
		return sg
	}
	k := is[len(is)-1]
	rest := ir.RowMajor(ds[k:])
	st := make([]int, r)
	copy(st[k:], rest)
	sg.Candidates = ir.Shape(is[:len(is)-1]).Len()
	sg.Upd = ir.Operand{Shape: ds, Strides: st}
	sg.Idx = ir.Operand{Shape: ds, Strides: make([]int, r)}
	sg.UpdStep, sg.IdxStep = ir.Shape(ds[k:]).Len(), k
	for j := range k {
		sg.Coords = append(sg.Coords, coord(j))
	}
	sg.Bounds = ds[:k]
	return sg
}

// LoopCost is the loop cost, as ir.LoopBudget counts it, of one GPU
// invocation of sg's node of dtype t: it computes the elements of one
// storage word (typedPerWord), each by a loop over the candidates.
func (sg ScatterGather) LoopCost(t ir.DType) int { return typedPerWord(t) * (sg.Candidates + 1) }

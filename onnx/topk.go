package onnx

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// topKOp is ONNX TopK of a K known at import (it decides the shape): each
// element's rank along the axis is the number of elements before it in
// the order (larger first, or smaller with largest 0; NaN above every
// number; equal elements by index, as ONNX says), counted over all pairs
// at run time, and output r is the element of rank r (its index by a
// maximum over the matches, its value by gather_elements). Exact
// selections; it costs n² comparisons per slice, bounded by the limit on
// a tensor's elements: an interim form until a sort kernel exists.
func topKOp(c *importer) ([]value, *ir.Error) {
	x, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	ks, err := c.ints(1, "K")
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	axis, err := c.axisOf(c.attrInt("axis", -1), len(s))
	if err != nil {
		return nil, err
	}
	n := s[axis]
	if len(ks) != 1 || ks[0] < 1 || ks[0] > int64(n) {
		return nil, c.refuse("K %v along an axis of %d (gpucc takes 1 to %d; its tensors are not empty)", ks, n, n)
	}
	k := int(ks[0])
	a, b := ir.Shape(s[:axis]).Len(), ir.Shape(s[axis+1:]).Len()
	if _, err := c.elements("the pairs TopK compares", []int{a, n, n, b}); err != nil {
		return nil, err
	}
	pair := ir.Shape{a, n, n, b}
	xi := x.Reshape(ir.Shape{a, n, 1, b}).Broadcast(pair)
	xj := x.Reshape(ir.Shape{a, 1, n, b}).Broadcast(pair)
	if c.attrInt("largest", 1) == 0 {
		xi, xj = xj, xi // j before i when x_j < x_i
	}
	before := xj.ApplyTo(ir.Bool, ir.OpGreater, xi)
	tie := xj.ApplyTo(ir.Bool, ir.OpEqual, xi)
	if x.DType().IsFloat() { // NaN above every number, NaNs tied
		nj := xj.ApplyTo(ir.Bool, ir.OpEqual, xj).Apply(ir.OpNot)
		ni := xi.ApplyTo(ir.Bool, ir.OpEqual, xi).Apply(ir.OpNot)
		// largest: j first where x_j is NaN; smallest (xi and xj swapped): where x_i is
		before = before.ApplyTo(ir.Bool, ir.OpOr, nj.ApplyTo(ir.Bool, ir.OpAnd, ni.Apply(ir.OpNot)))
		tie = tie.ApplyTo(ir.Bool, ir.OpOr, nj.ApplyTo(ir.Bool, ir.OpAnd, ni))
	}
	lower := make([]int64, n*n) // j < i
	for i := range n {
		for j := range i {
			lower[i*n+j] = 1
		}
	}
	earlier := c.b.TypedInput("", ir.Bool, ir.Shape{1, n, n, 1}, nil, lower).Broadcast(pair)
	before = before.ApplyTo(ir.Bool, ir.OpOr, tie.ApplyTo(ir.Bool, ir.OpAnd, earlier))
	rank := before.Cast(ir.I64).SumAxes(false, 2) // [a, n, b]
	sel := ir.Shape{a, k, n, b}
	rs := make([]int64, k)
	is := make([]int64, n)
	for r := range rs {
		rs[r] = int64(r)
	}
	for i := range is {
		is[i] = int64(i)
	}
	match := rank.Reshape(ir.Shape{a, 1, n, b}).Broadcast(sel).ApplyTo(ir.Bool, ir.OpEqual, c.b.TypedInput("", ir.I64, ir.Shape{1, k, 1, 1}, nil, rs).Broadcast(sel))
	idx := match.Where(c.b.TypedInput("", ir.I64, ir.Shape{1, 1, n, 1}, nil, is).Broadcast(sel), c.b.FullOf(ir.I64, sel, 0, -1)).MaxAxes(false, 2) // [a, k, b]
	vals := x.Reshape(ir.Shape{a, n, b}).GatherElements(idx, 1)
	out := slices.Clone(s)
	out[axis] = k
	return []value{rtValue(vals.Reshape(out)), rtValue(idx.Reshape(out))}, nil
}

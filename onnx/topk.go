package onnx

import (
	"math"
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
	largest := c.attrInt("largest", 1) != 0
	if n > topKPairsUpTo*k { // k passes over the n elements cost less than the n² pairs
		idx := topKSelect(c, x.Reshape(ir.Shape{a, n, b}), k, largest) // [a, k, b]
		vals := x.Reshape(ir.Shape{a, n, b}).GatherElements(idx, 1)
		out := slices.Clone(s)
		out[axis] = k
		return []value{rtValue(vals.Reshape(out)), rtValue(idx.Reshape(out))}, nil
	}
	if _, err := c.elements("the pairs TopK compares", []int{a, n, n, b}); err != nil {
		return nil, err
	}
	pair := ir.Shape{a, n, n, b}
	xi := x.Reshape(ir.Shape{a, n, 1, b}).Broadcast(pair)
	xj := x.Reshape(ir.Shape{a, 1, n, b}).Broadcast(pair)
	if !largest {
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

// topKPairsUpTo is the n/k up to which TopK compares all pairs (n² work,
// one selection); past it, topKSelect's k passes over the n elements cost
// less. A variable so that a test can take either form on one input.
var topKPairsUpTo = 16

// topKSelect returns the indices [a, k, b] of the k first elements of x
// [a, n, b] along axis 1 in TopK's order (topKOp's), one pass each. Each
// element left gets a priority, cat·n + n-1-index, and the pass takes the
// largest: the lowest index of the first category that holds any. The
// categories, from the first: for the largest first, NaN, the numbers
// whose key equals m (the largest key among the numbers left, from the
// dtype's least finite value up), -Inf; for the smallest first, those
// equal to m, +Inf, NaN; the key being x, or for the smallest first its
// order-reversing -x or ^x (both exact), and equal keys -0 and +0 alike.
// A last category, every element left, is never the one taken but where a
// float32 island's liberty (a flushed m that no key equals) would leave
// the others empty: never an index past the axis. That liberty is the
// one place this form departs from the pairwise one: on a GPU whose
// float32 programs flush subnormals, m is computed there, so float32 keys
// below 2^-126 may be taken out of their order (cpuref.EvalTypedFlushed's
// answer; the pairwise form compares in typed kernels, which keep them).
// k·n work where the pairs are n².
func topKSelect(c *importer, x ir.Tensor, k int, largest bool) ir.Tensor {
	s := x.Shape()
	a, n, b := s[0], s[1], s[2]
	dt := x.DType()
	full := func(t ir.DType, sh ir.Shape, f float32, i int64) ir.Tensor { return c.b.FullOf(t, sh, f, i) }
	key := x
	switch {
	case largest:
	case dt.IsFloat():
		key = x.Neg()
	default:
		key = x.Apply(ir.OpBitNot)
	}
	var lowest ir.Tensor // the dtype's least finite value: only -Inf is below it
	switch dt {
	case ir.F32:
		lowest = full(dt, s, -math.MaxFloat32, 0)
	case ir.F16:
		lowest = full(dt, s, -65504, 0)
	case ir.BF16:
		lowest = full(dt, s, math.Float32frombits(0xff7f0000), 0)
	default:
		lo, _ := dt.Range()
		lowest = full(dt, s, 0, lo)
	}
	rev := make([]int64, n) // n-1-index: the largest is the lowest index
	for i := range rev {
		rev[i] = int64(n - 1 - i)
	}
	back := c.b.TypedInput("", ir.I64, ir.Shape{1, n, 1}, nil, rev).Broadcast(s)
	cat := func(v int64) ir.Tensor { return full(ir.I64, s, 0, v*int64(n)).Add(back) }
	// The categories that do not depend on the pass.
	eqCat, base, num := cat(3), back, full(ir.Bool, s, 0, 1)
	if dt.IsFloat() {
		nan := x.ApplyTo(ir.Bool, ir.OpEqual, x).Apply(ir.OpNot)
		num = nan.Apply(ir.OpNot)
		below := lowest.ApplyTo(ir.Bool, ir.OpGreater, key) // -Inf keys
		if largest {
			eqCat, base = cat(2), nan.Where(cat(3), below.Where(cat(1), back))
		} else {
			base = below.Where(cat(2), nan.Where(cat(1), back))
		}
	}
	none := full(ir.I64, s, 0, -1)
	ks := make([]int64, k)
	for r := range ks {
		ks[r] = int64(r)
	}
	ko := ir.Shape{a, k, b}
	rank := c.b.TypedInput("", ir.I64, ir.Shape{1, k, 1}, nil, ks).Broadcast(ko)
	nn := full(ir.I64, ir.Shape{a, 1, b}, 0, int64(n))
	last := full(ir.I64, ir.Shape{a, 1, b}, 0, int64(n-1))
	left := full(ir.Bool, s, 0, 1)
	out := full(ir.I64, ko, 0, 0)
	for r := range k {
		m := left.ApplyTo(ir.Bool, ir.OpAnd, num).Where(key, lowest).MaxAxes(true, 1).Broadcast(s)
		pri := key.ApplyTo(ir.Bool, ir.OpEqual, m).Where(eqCat, base)
		v := left.Where(pri, none).MaxAxes(true, 1) // [a, 1, b], ≥ 0: an element is left
		rb := v.Apply(ir.OpMod, nn)                 // n-1-index
		left = left.ApplyTo(ir.Bool, ir.OpAnd, back.ApplyTo(ir.Bool, ir.OpEqual, rb.Broadcast(s)).Apply(ir.OpNot))
		idx := last.Sub(rb)
		out = rank.ApplyTo(ir.Bool, ir.OpEqual, full(ir.I64, ko, 0, int64(r))).Where(idx.Broadcast(ko), out)
	}
	return out
}

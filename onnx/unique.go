package onnx

import (
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// uniqueOp is Unique of a tensor known at import. Its outputs' shapes are
// the count of distinct values, so a graph input there decides a shape
// and is read when the model is specialized to its data (konst's "unique
// values"; Model.SpecializeValues), as Reshape's shape is: the op folds
// at import. Without axis the elements, with one the slices along it, are
// compared by value (numpy's unique: -0 equals +0, the first occurrence's
// bits kept; a NaN is refused, whose grouping numpy's versions disagree
// on). sorted 1 orders Y ascending (slices lexicographically), sorted 0
// by first occurrence; indices are each Y's first position, inverse_indices
// each element's (slice's) Y, counts each Y's occurrences (int64).
func uniqueOp(c *importer) ([]value, *ir.Error) {
	x, err := c.konst(0, "unique values")
	if err != nil {
		return nil, err
	}
	if x.Type == String || x.Len() == 0 {
		return nil, c.refuse("Unique of a %v tensor of shape %v", x.Type, x.Shape)
	}
	sorted := c.attrInt("sorted", 1) != 0
	n, inner, outer := x.Len(), 1, 1
	axis := -1
	if c.attr("axis") != nil {
		a, err := c.axisOf(c.attrInt("axis", 0), len(x.Shape))
		if err != nil {
			return nil, err
		}
		axis, n = a, x.Shape[a]
		for _, d := range x.Shape[a+1:] {
			inner *= d
		}
		outer = x.Len() / (n * inner)
	}
	key := func(k int) []float64 { // slice k's values, as numbers compare
		out := make([]float64, 0, outer*inner)
		for o := range outer {
			for i := range inner {
				v := x.at((o*n+k)*inner + i)
				out = append(out, v.f+float64(v.i))
			}
		}
		return out
	}
	keys := make([][]float64, n)
	for k := range keys {
		keys[k] = key(k)
		if slices.ContainsFunc(keys[k], math.IsNaN) {
			return nil, c.refuse("Unique of a NaN (numpy's versions group NaNs differently)")
		}
	}
	if x.Type == Int64 || x.Type == Uint64 {
		for _, v := range x.Int64 {
			if v > 1<<53 || v < -1<<53 {
				return nil, c.refuse("Unique of %v %d, beyond 2^53 (compared exactly only up to it here)", x.Type, v)
			}
		}
	}
	order := make([]int, n)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return slices.Compare(keys[a], keys[b]) })
	var groups [][]int // each group's positions, the first occurrence first
	for _, k := range order {
		if g := len(groups) - 1; g >= 0 && slices.Equal(keys[groups[g][0]], keys[k]) {
			groups[g] = append(groups[g], k)
		} else {
			groups = append(groups, []int{k})
		}
	}
	if !sorted {
		slices.SortFunc(groups, func(a, b []int) int { return a[0] - b[0] })
	}
	m := len(groups)
	yShape := []int{m}
	if axis >= 0 {
		yShape = slices.Clone(x.Shape)
		yShape[axis] = m
	}
	y, err := c.newConst(x.Type, yShape)
	if err != nil {
		return nil, err
	}
	idx, err := c.newConst(Int64, []int{m})
	if err != nil {
		return nil, err
	}
	inv, err := c.newConst(Int64, []int{n})
	if err != nil {
		return nil, err
	}
	cnt, err := c.newConst(Int64, []int{m})
	if err != nil {
		return nil, err
	}
	for g, members := range groups {
		first := members[0]
		for o := range outer {
			for i := range inner {
				y.set((o*m+g)*inner+i, x.at((o*n+first)*inner+i))
			}
		}
		idx.Int64[g], cnt.Int64[g] = int64(first), int64(len(members))
		for _, k := range members {
			inv.Int64[k] = int64(g)
		}
	}
	return []value{constValue(y), constValue(idx), constValue(inv), constValue(cnt)}, nil
}

// nonZeroOp is NonZero of a tensor known at import: its output has a
// column per non-zero element, so a graph input there decides a shape and
// is read at specialization (konst's "nonzero values"), as Unique's is.
// The output is [rank, count] int64, the coordinates of each non-zero
// element in row-major order (numpy's nonzero); NaN is non-zero, -0 is
// zero; none non-zero is an empty output, which gpucc refuses.
func nonZeroOp(c *importer) ([]value, *ir.Error) {
	x, err := c.konst(0, "nonzero values")
	if err != nil {
		return nil, err
	}
	if x.Type == String || len(x.Shape) == 0 {
		return nil, c.refuse("NonZero of a %v tensor of shape %v", x.Type, x.Shape)
	}
	r := len(x.Shape)
	var at []int
	for j := range x.Len() {
		if v := x.at(j); v.f != 0 || v.i != 0 || v.f != v.f {
			at = append(at, j)
		}
	}
	if len(at) == 0 {
		return nil, c.refuse("no element is non-zero: an empty output; gpucc's tensors are not empty")
	}
	out, err := c.newConst(Int64, []int{r, len(at)})
	if err != nil {
		return nil, err
	}
	for k, j := range at {
		for d := r - 1; d >= 0; d-- {
			out.Int64[d*len(at)+k] = int64(j % x.Shape[d])
			j /= x.Shape[d]
		}
	}
	return one(constValue(out))
}

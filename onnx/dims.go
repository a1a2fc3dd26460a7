package onnx

import (
	"fmt"

	"github.com/gpucc/gpucc/ir"
)

// Checked arithmetic on the sizes the importer computes. A model's
// numbers (shapes, repeats, split sizes, block sizes, a range's bounds)
// reach 2^63-1, so every product or sum of dimensions made from them goes
// through dimProduct or dimSum, bounded by a limit, before anything of
// that size is allocated or iterated: nothing wraps. The invariant they
// keep (node checks it after every node, so every rule may rely on it for
// its inputs): each value has at most Limits.MaxElements elements and no
// dimension over it.

// dimProduct returns the product of ds, or false when a factor is
// negative or over max, or the product is over max. Every factor is
// checked, so a product with a 0 is 0 and the others within max.
func dimProduct[T ~int | ~int64](max int64, ds ...T) (int64, bool) {
	zero := false
	for _, d := range ds {
		if d < 0 || int64(d) > max {
			return 0, false
		}
		zero = zero || d == 0
	}
	if zero {
		return 0, true
	}
	n := int64(1)
	for _, d := range ds {
		if n > max/int64(d) {
			return 0, false
		}
		n *= int64(d)
	}
	return n, true
}

// dimSum returns the sum of ds, or false when a term is negative or the
// sum exceeds max.
func dimSum[T ~int | ~int64](max int64, ds ...T) (int64, bool) {
	n := int64(0)
	for _, d := range ds {
		if d < 0 || int64(d) > max-n {
			return 0, false
		}
		n += int64(d)
	}
	return n, true
}

// elements returns the element count of shape, what the current node
// makes, or limit_exceeded naming it when a dimension or the count is over
// Limits.MaxElements (invalid_graph for a negative dimension).
func (c *importer) elements(what string, shape []int) (int, *ir.Error) {
	for _, d := range shape {
		if d < 0 {
			return 0, c.invalid("%s has shape %v: a negative dimension", what, shape)
		}
	}
	n, ok := dimProduct(c.l.MaxElements, shape...)
	if !ok {
		return 0, c.overLimit("MaxElements", "%s of shape %v exceeds the limit of %d elements per tensor", what, shape, c.l.MaxElements)
	}
	return int(n), nil
}

// overLimit is the limit_exceeded error of the Limits field limit for
// the current node.
func (c *importer) overLimit(limit, format string, args ...any) *ir.Error {
	return ir.LimitErrorf(limit, -1, c.field(), "%s node %s: %s", c.n.opType, ir.Quote(c.n.name), fmt.Sprintf(format, args...))
}

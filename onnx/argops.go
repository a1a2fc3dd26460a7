package onnx

import (
	"github.com/gpucc/gpucc/ir"
)

// ArgMax, ArgMin and Hardmax, composed exactly of table ops. Along the
// axis, with m the extreme (max, or min as -max(-x)), the candidates are
//
//	sel = maximum(equal(x, m), 1 - equal(x, x))
//
// the elements equal to m (-0 equals +0), or, where the axis holds a NaN
// (m is then NaN and equals nothing), the NaNs: numpy's argmax and argmin
// pick the first NaN. The index is the smallest (largest, with
// select_last_index) position among them, a reduction over
// where(sel, position, C) (or -1): small integers, exact in float32.

// argIndex returns the index along axis of x's extreme (the maximum when
// useMax), the first one or the last, as exact float32 integers.
func (c *importer) argIndex(x ir.Tensor, axis int, keep, useMax, last bool) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	n := s[axis]
	if n >= maxExactIndex {
		return ir.Tensor{}, c.refuse("an axis of %d elements, over 2^24", n)
	}
	var m ir.Tensor
	if useMax {
		m = x.MaxAxes(true, axis)
	} else {
		m = x.Neg().MaxAxes(true, axis).Neg()
	}
	sel := x.Apply(ir.OpEqual, m).Maximum(not(x.Apply(ir.OpEqual, x)))
	pshape := make(ir.Shape, len(s))
	for k := range pshape {
		pshape[k] = 1
	}
	pshape[axis] = n
	pos, err := c.newConst(Float32, pshape)
	if err != nil {
		return ir.Tensor{}, err
	}
	for i := range pos.Float32 {
		pos.Float32[i] = float32(i)
	}
	p, err := c.runtime(&value{c: pos}, "the positions")
	if err != nil {
		return ir.Tensor{}, err
	}
	other := float32(n)
	if last {
		other = -1
	}
	r := sel.Apply(ir.OpMask, p).Add(not(sel).Apply(ir.OpMask, c.b.Full(s, other)))
	if last {
		return r.MaxAxes(keep, axis), nil
	}
	return r.Neg().MaxAxes(keep, axis).Neg(), nil
}

// argOp is ArgMax (useMax) or ArgMin: an integer output computed at run time.
func argOp(useMax bool) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		x, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		s := x.Shape()
		if len(s) == 0 {
			return nil, c.invalid("an arg reduction of a scalar")
		}
		axis, err := c.axisOf(c.attrInt("axis", 0), len(s))
		if err != nil {
			return nil, err
		}
		y, err := c.argIndex(x, axis, c.attrInt("keepdims", 1) != 0, useMax, c.attrInt("select_last_index", 0) != 0)
		if err != nil {
			return nil, err
		}
		return one(value{rt: y, set: true, isInt: true})
	}
}

// hardmaxOp is 1 at the first maximum along the axis and 0 elsewhere
// (equal(position, ArgMax)); before opset 13 over the input flattened to
// 2-D at axis.
func hardmaxOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) == 0 {
		return nil, c.invalid("hardmax of a scalar")
	}
	def := int64(-1)
	if c.opset < 13 {
		def = 1
	}
	axis, err := c.axisOf(c.attrInt("axis", def), len(s))
	if err != nil {
		return nil, err
	}
	if c.opset < 13 {
		a, b := 1, 1
		for k, d := range s {
			if k < axis {
				a *= d
			} else {
				b *= d
			}
		}
		x, axis = reshape(x, ir.Shape{a, b}), 1
	}
	idx, err := c.argIndex(x, axis, true, true, false)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	pshape := make(ir.Shape, len(xs))
	for k := range pshape {
		pshape[k] = 1
	}
	pshape[axis] = xs[axis]
	pos, err := c.newConst(Float32, pshape)
	if err != nil {
		return nil, err
	}
	for i := range pos.Float32 {
		pos.Float32[i] = float32(i)
	}
	p, err := c.runtime(&value{c: pos}, "the positions")
	if err != nil {
		return nil, err
	}
	y := p.Broadcast(xs).Apply(ir.OpEqual, idx)
	return one(rtValue(reshape(y, s)))
}

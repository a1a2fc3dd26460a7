package onnx

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// The scatters (ONNX ScatterElements, Scatter, ScatterND) of run-time
// indices import to ir's scatter rows (ir/scatter.go): each update
// applied once in row-major order, an index outside its dimension
// failing the run with invalid_input, duplicates resolved as ONNX's
// reference resolves them (the later update wins for reduction none;
// add, mul, max and min fold the updates in that order). They cost the
// data plus the updates, where the selection over every pair of target
// and update that stood here before cost their product (ScatterND of 16
// rows into [32768, 64]: 431 ms on cpu).

// scatterReduction reads the node's reduction attribute (none, add, mul,
// max, min; opset 16 and 18).
func (c *importer) scatterReduction() (ir.ScatterReduction, *ir.Error) {
	name := c.attrStr("reduction", "none")
	r, ok := ir.ParseScatterReduction(name)
	if !ok {
		return 0, c.refuse("reduction %s is not supported (none, add, mul, max and min are)", ir.Quote(name))
	}
	return r, nil
}

// scatterOperands returns the data, the indices and the updates (of
// data's dtype) of a scatter node; empty is true, and idx and upd unset,
// when the indices are a constant of no elements (then the updates must
// be empty too): no update, the data unchanged. gpucc's tensors are
// never empty, so only a constant can be.
func (c *importer) scatterOperands() (data, idx, upd ir.Tensor, empty bool, err *ir.Error) {
	if data, err = c.indexedData(0); err != nil {
		return
	}
	if v := c.in(1); v != nil && !v.set && v.c != nil && v.c.Len() == 0 {
		if u := c.in(2); u == nil || u.set || u.c == nil || u.c.Len() != 0 {
			err = c.invalid("indices of shape %v (no element) with updates that are not empty", v.c.Shape)
		}
		return data, ir.Tensor{}, ir.Tensor{}, true, err
	}
	if idx, err = c.indices(1); err != nil {
		return
	}
	upd, err = c.typedOperandLike(2, data.DType())
	return
}

// scatterElementsOp is ScatterElements (and Scatter, its older name):
// updates[p] goes to data at p with p[axis] = indices[p].
func scatterElementsOp(c *importer) ([]value, *ir.Error) {
	data, idx, upd, empty, err := c.scatterOperands()
	if err != nil {
		return nil, err
	}
	red, err := c.scatterReduction()
	if err != nil {
		return nil, err
	}
	if empty {
		return one(rtValue(data))
	}
	ds, is := data.Shape(), idx.Shape()
	r := len(ds)
	if len(is) != r || !upd.Shape().Equal(is) {
		return nil, c.invalid("indices %v and updates %v for data %v: the data's rank, the same shape", is, upd.Shape(), ds)
	}
	axis, err := c.axisOf(c.attrInt("axis", 0), r)
	if err != nil {
		return nil, err
	}
	for d := range r {
		if d != axis && is[d] > ds[d] {
			return nil, c.invalid("indices %v exceed data %v along axis %d", is, ds, d)
		}
	}
	return one(rtValue(data.ScatterElements(idx, upd, axis, red)))
}

// scatterNDOp is ScatterND: each index row (the last axis of indices, k
// long) names a slice data[row, …], which the update of that row
// replaces (or adds to, multiplies, or takes the maximum or minimum with).
func scatterNDOp(c *importer) ([]value, *ir.Error) {
	data, idx, upd, empty, err := c.scatterOperands()
	if err != nil {
		return nil, err
	}
	red, err := c.scatterReduction()
	if err != nil {
		return nil, err
	}
	if empty {
		return one(rtValue(data))
	}
	ds, is := data.Shape(), idx.Shape()
	if len(is) == 0 {
		return nil, c.invalid("indices of rank 0")
	}
	k := is[len(is)-1]
	if k < 1 || k > len(ds) {
		return nil, c.invalid("index rows of %d into data of rank %d", k, len(ds))
	}
	if want := append(slices.Clone(is[:len(is)-1]), ds[k:]...); !upd.Shape().Equal(want) {
		return nil, c.invalid("updates %v; indices %v into data %v take %v", upd.Shape(), is, ds, want)
	}
	return one(rtValue(data.ScatterND(idx, upd, red)))
}

// typedOperandLike is input k as a run-time tensor of dtype t: a
// run-time value of t, or a constant converted exactly (typedOperand);
// float32 run-time values as they are.
func (c *importer) typedOperandLike(k int, t ir.DType) (ir.Tensor, *ir.Error) {
	if v := c.in(k); v != nil && v.set && !v.isBool && !v.isInt && v.rt.DType() == t {
		return v.rt, nil
	}
	if t == ir.F32 {
		return c.rtIn(k)
	}
	return c.typedOperand(k, t)
}

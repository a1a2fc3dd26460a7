package onnx

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// The scatters (ONNX ScatterElements, Scatter, ScatterND) of run-time
// indices, as selections over the pairs of target elements and updates:
// each update's flat target offset is computed at run time (a negative
// index from the end; one outside its dimension fails the run with
// invalid_input, through a gather of the updates that every result
// reads), then for each target q the last update aimed at it (reduction
// none: ONNX's reference applies them in order, so the last wins) or the
// sum or product of all of them (add, mul: in the reductions' pairwise
// tree, then combined once with data). It costs targets × updates
// comparisons, bounded by the limit on a tensor's elements: an interim
// form until a scatter kernel exists, which computes the same values.

// scatterOffsets returns, for indices idx (int64) of shape s into data's
// axis of size d with stride st (the other coordinates taken from each
// index's own position: base, row-major over s), each index's flat target
// offset and whether its index lies in [-d, d).
func (c *importer) scatterOffsets(idx ir.Tensor, base []int64, d, st int) (off, ok ir.Tensor) {
	s := idx.Shape()
	full := func(v int64) ir.Tensor { return c.b.FullOf(ir.I64, s, 0, v) }
	neg := full(0).ApplyTo(ir.Bool, ir.OpGreater, idx)
	w := neg.Where(idx.Add(full(int64(d))), idx)
	ok = w.ApplyTo(ir.Bool, ir.OpGreaterEqual, full(0)).ApplyTo(ir.Bool, ir.OpAnd, full(int64(d)).ApplyTo(ir.Bool, ir.OpGreater, w))
	off = w.Mul(full(int64(st))).Add(c.b.TypedInput("", ir.I64, s, nil, base))
	return off, ok
}

// scatterSelect combines data [Q, rest…] with updates [K, rest…] aimed at
// rows off [K] (int64, each in [0, Q) once ok [K] holds; a false ok fails
// the run): reduction "none", "add" or "mul".
func (c *importer) scatterSelect(data, upd, off, ok ir.Tensor, reduction string) (ir.Tensor, *ir.Error) {
	ds, us := data.Shape(), upd.Shape()
	q, k := ds[0], us[0]
	rest := ir.Shape(ds[1:])
	if _, err := c.elements("the scatter's target-update pairs", append([]int{q, k}, rest...)); err != nil {
		return ir.Tensor{}, err
	}
	kk := c.b.FullOf(ir.I64, ir.Shape{k}, 0, int64(k))
	iota := make([]int64, k)
	for i := range iota {
		iota[i] = int64(i)
	}
	ks := c.b.TypedInput("", ir.I64, ir.Shape{k}, nil, iota)
	upd = upd.Gather(ok.Where(ks, kk), 0) // every result reads it: an index outside fails the run here
	qs := make([]int64, q)
	for i := range qs {
		qs[i] = int64(i)
	}
	pair := ir.Shape{q, k}
	mask := off.Reshape(ir.Shape{1, k}).Broadcast(pair).ApplyTo(ir.Bool, ir.OpEqual, c.b.TypedInput("", ir.I64, ir.Shape{q, 1}, nil, qs).Broadcast(pair))
	last := mask.Where(ks.Reshape(ir.Shape{1, k}).Broadcast(pair), c.b.FullOf(ir.I64, pair, 0, -1)).MaxAxes(false, 1) // [q]
	hit := last.ApplyTo(ir.Bool, ir.OpGreaterEqual, c.b.FullOf(ir.I64, ir.Shape{q}, 0, 0))
	wide := func(t ir.Tensor) ir.Tensor { // [q] to data's shape
		sh := append(ir.Shape{q}, slices.Repeat([]int{1}, len(rest))...)
		return t.Reshape(sh).Broadcast(ds)
	}
	switch reduction {
	case "none":
		pick := upd.Gather(hit.Where(last, c.b.FullOf(ir.I64, ir.Shape{q}, 0, 0)), 0)
		return wide(hit).Where(pick, data), nil
	case "add", "mul":
		ps := append(ir.Shape{q, k}, rest...)
		m := mask.Reshape(append(ir.Shape{q, k}, slices.Repeat([]int{1}, len(rest))...)).Broadcast(ps)
		u := upd.Reshape(append(ir.Shape{1, k}, rest...)).Broadcast(ps)
		var r ir.Tensor
		if reduction == "add" {
			r = data.Add(m.Where(u, c.b.FullOf(upd.DType(), ps, 0, 0)).SumAxes(false, 1))
		} else {
			r = data.Mul(m.Where(u, c.b.FullOf(upd.DType(), ps, 1, 1)).ProdAxes(false, 1))
		}
		return wide(hit).Where(r, data), nil
	}
	return ir.Tensor{}, c.refuse("reduction %s is not supported (none, add and mul are)", ir.Quote(reduction))
}

// scatterElementsOp is ScatterElements (and Scatter, its older name):
// updates[p] goes to data at p with p[axis] = indices[p].
func scatterElementsOp(c *importer) ([]value, *ir.Error) {
	data, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	idx, err := c.indices(1)
	if err != nil {
		return nil, err
	}
	if idx.DType() != ir.I64 {
		idx = idx.Cast(ir.I64)
	}
	upd, err := c.typedOperandLike(2, data.DType())
	if err != nil {
		return nil, err
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
	strides := make([]int, r)
	st := 1
	for d := r - 1; d >= 0; d-- {
		if is[d] > ds[d] {
			return nil, c.invalid("indices %v exceed data %v along axis %d", is, ds, d)
		}
		strides[d], st = st, st*ds[d]
	}
	n := is.Len()
	base := make([]int64, n)
	for i := range base {
		rem := i
		for d := r - 1; d >= 0; d-- {
			if d != axis {
				base[i] += int64(rem%is[d]) * int64(strides[d])
			}
			rem /= is[d]
		}
	}
	off, ok := c.scatterOffsets(idx, base, ds[axis], strides[axis])
	flat := ir.Shape{n}
	y, err := c.scatterSelect(data.Reshape(ir.Shape{ds.Len()}), upd.Reshape(flat), off.Reshape(flat), ok.Reshape(flat), c.attrStr("reduction", "none"))
	if err != nil {
		return nil, err
	}
	return one(rtValue(y.Reshape(ds)))
}

// scatterNDOp is ScatterND: each index row (the last axis of indices, k
// long) names a slice data[row, …], which the update of that row
// replaces (or adds to, or multiplies).
func scatterNDOp(c *importer) ([]value, *ir.Error) {
	data, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	idx, err := c.indices(1)
	if err != nil {
		return nil, err
	}
	if idx.DType() != ir.I64 {
		idx = idx.Cast(ir.I64)
	}
	upd, err := c.typedOperandLike(2, data.DType())
	if err != nil {
		return nil, err
	}
	ds, is := data.Shape(), idx.Shape()
	if len(is) == 0 {
		return nil, c.invalid("indices of rank 0")
	}
	k := is[len(is)-1]
	if k < 1 || k > len(ds) {
		return nil, c.invalid("index rows of %d into data of rank %d", k, len(ds))
	}
	rows := ir.Shape(is[:len(is)-1])
	rest := ir.Shape(ds[k:])
	if want := append(slices.Clone(rows), rest...); !upd.Shape().Equal(want) {
		return nil, c.invalid("updates %v; indices %v into data %v take %v", upd.Shape(), is, ds, want)
	}
	nr := rows.Len()
	var off, ok ir.Tensor
	for j := range k {
		cj := idx.Gather(c.b.TypedInput("", ir.I64, ir.Shape{1}, nil, []int64{int64(j)}), -1).Reshape(ir.Shape{nr})
		st := ir.Shape(ds[j+1 : k]).Len()
		o, v := c.scatterOffsets(cj, make([]int64, nr), ds[j], st)
		if j == 0 {
			off, ok = o, v
			continue
		}
		off, ok = off.Add(o), ok.ApplyTo(ir.Bool, ir.OpAnd, v)
	}
	lead := ir.Shape(ds[:k]).Len()
	y, err := c.scatterSelect(data.Reshape(append(ir.Shape{lead}, rest...)), upd.Reshape(append(ir.Shape{nr}, rest...)), off, ok, c.attrStr("reduction", "none"))
	if err != nil {
		return nil, err
	}
	return one(rtValue(y.Reshape(ds)))
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

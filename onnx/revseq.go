package onnx

import "github.com/gpucc/gpucc/ir"

// reverseSequenceOp is ONNX ReverseSequence as gather_elements along the
// time axis: y[t, b] = x[len[b]-1-t, b] for t < len[b], else x[t, b],
// the indices computed at run time from the int64 lengths. A length past
// the time axis or below 0 makes an index outside it, which fails the run
// with invalid_input.
func reverseSequenceOp(c *importer) ([]value, *ir.Error) {
	x, err := c.indexedData(0)
	if err != nil {
		return nil, err
	}
	lens, err := c.indices(1)
	if err != nil {
		return nil, err
	}
	if lens.DType() != ir.I64 {
		lens = lens.Cast(ir.I64)
	}
	s := x.Shape()
	ta, ba := int(c.attrInt("time_axis", 0)), int(c.attrInt("batch_axis", 1))
	if len(s) < 2 || ta == ba || ta < 0 || ba < 0 || ta > 1 || ba > 1 {
		return nil, c.invalid("time_axis %d and batch_axis %d of a tensor of rank %d: one is 0 and the other 1", ta, ba, len(s))
	}
	if ls := lens.Shape(); len(ls) != 1 || ls[0] != s[ba] {
		return nil, c.invalid("sequence_lens of shape %v for a batch of %d", ls, s[ba])
	}
	ts := make([]int64, ir.Shape(s).Len())
	inner := ir.Shape(s[ta+1:]).Len()
	for i := range ts {
		ts[i] = int64(i / inner % s[ta])
	}
	t := c.b.TypedInput("", ir.I64, s, nil, ts)
	bs := make(ir.Shape, len(s))
	for d := range bs {
		bs[d] = 1
	}
	bs[ba] = s[ba]
	l := lens.Reshape(bs).Broadcast(s)
	full := func(v int64) ir.Tensor { return c.b.FullOf(ir.I64, s, 0, v) }
	idx := l.ApplyTo(ir.Bool, ir.OpGreater, t).Where(l.Sub(full(1)).Sub(t), t)
	idx = full(0).ApplyTo(ir.Bool, ir.OpGreater, l).Where(full(int64(s[ta])), idx)
	return one(rtValue(x.GatherElements(idx, ta)))
}

package onnx

import "github.com/gpucc/gpucc/ir"

// gatherNDOp is ONNX GatherND as ir's gather over data flattened to its
// batch and indexed dimensions: each index row's components (negative
// ones from the end) are combined into one int64 offset, row-major over
// those dimensions, after the row's batch offset. A component outside
// [-d, d) makes the offset past the flattened axis, so the gather fails
// the run with invalid_input instead of reading a neighbouring row.
func gatherNDOp(c *importer) ([]value, *ir.Error) {
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
	s, is := data.Shape(), idx.Shape()
	b := int(c.attrInt("batch_dims", 0))
	if len(is) == 0 {
		return nil, c.invalid("indices of rank 0")
	}
	k := is[len(is)-1]
	if b < 0 || b >= len(is) || b+k > len(s) || k < 1 {
		return nil, c.invalid("batch_dims %d and index rows of %d over data %v and indices %v", b, k, s, is)
	}
	bn, kn := 1, 1
	for d := range b {
		if s[d] != is[d] {
			return nil, c.invalid("batch dimension %d is %d in data and %d in indices", d, s[d], is[d])
		}
		bn *= s[d]
	}
	for _, d := range s[b : b+k] {
		kn *= d
	}
	q := ir.Shape(is[:len(is)-1])
	ql := q.Len()
	full := func(v int64) ir.Tensor { return c.b.FullOf(ir.I64, q, 0, v) }
	var off, ok ir.Tensor
	for j := range k {
		d := int64(s[b+j])
		cj := idx.Gather(c.b.TypedInput("", ir.I64, ir.Shape{1}, nil, []int64{int64(j)}), -1).Reshape(q)
		neg := full(0).ApplyTo(ir.Bool, ir.OpGreater, cj)
		cj = neg.Where(cj.Add(full(d)), cj)
		in := cj.ApplyTo(ir.Bool, ir.OpGreaterEqual, full(0)).ApplyTo(ir.Bool, ir.OpAnd, full(d).ApplyTo(ir.Bool, ir.OpGreater, cj))
		if j == 0 {
			off, ok = cj, in
			continue
		}
		off, ok = off.Mul(full(d)).Add(cj), ok.ApplyTo(ir.Bool, ir.OpAnd, in)
	}
	if b > 0 { // each row's batch, row-major over the leading b dimensions of q
		per := ql / bn
		bs := make([]int64, ql)
		for i := range bs {
			bs[i] = int64(i/per) * int64(kn)
		}
		off = off.Add(c.b.TypedInput("", ir.I64, q, nil, bs))
	}
	off = ok.Where(off, full(int64(bn*kn)))
	flat := append(ir.Shape{bn * kn}, s[b+k:]...)
	return one(rtValue(data.Reshape(flat).Gather(off, 0)))
}

package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// Normalizations, CumSum, OneHot and EyeLike, composed of table ops in
// the order of ONNX's reference, or folded where everything is known at
// import.

// channel returns t ([C]) reshaped to [1, C, 1, …] against rank r.
func channel(t ir.Tensor, r int) ir.Tensor {
	s := make(ir.Shape, r)
	for k := range s {
		s[k] = 1
	}
	s[1] = t.Shape().Len()
	return reshape(t, s)
}

// normInputs returns inputs 1.. as [1, C, 1, …] run-time tensors of x's
// channel count.
func (c *importer) normInputs(x ir.Tensor, ks ...int) ([]ir.Tensor, *ir.Error) {
	s := x.Shape()
	if len(s) < 2 {
		return nil, c.invalid("input of shape %v; it needs [N, C, …]", s)
	}
	var out []ir.Tensor
	for _, k := range ks {
		t, err := c.rtIn(k)
		if err != nil {
			return nil, err
		}
		if !t.Shape().Equal(ir.Shape{s[1]}) {
			return nil, c.invalid("input %d of shape %v for %d channels", k, t.Shape(), s[1])
		}
		out = append(out, channel(t, len(s)))
	}
	return out, nil
}

// allBut returns the axes 0..r-1 without skip.
func allBut(r int, skip ...int) []int {
	var ax []int
	for k := 0; k < r; k++ {
		if !containsInt(skip, k) {
			ax = append(ax, k)
		}
	}
	return ax
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// batchNormOp is BatchNormalization: s·(x - mean)/√(var + eps) + bias,
// the reference's order, over [N, C, …] per channel. In training mode
// mean and var are the batch's (Mean and the two-pass Variance over every
// axis but 1) and outputs 1 and 2 the running mean·momentum +
// batch·(1 - momentum).
func batchNormOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	p, err := c.normInputs(x, 1, 2, 3, 4)
	if err != nil {
		return nil, err
	}
	scale, bias, mean, variance := p[0], p[1], p[2], p[3]
	eps := c.attrFloat("epsilon", 1e-5)
	norm := func(m, v ir.Tensor) ir.Tensor {
		return scale.Mul(x.Sub(m)).Div(v.AddScalar(eps).Sqrt()).Add(bias)
	}
	if c.attrInt("training_mode", 0) == 0 {
		return one(rtValue(norm(mean, variance)))
	}
	mom := c.attrFloat("momentum", 0.9)
	ax := allBut(len(x.Shape()), 1)
	bm, bv := x.Mean(true, ax...), x.Variance(true, ax...)
	rm := mean.MulScalar(mom).Add(bm.MulScalar(1 - mom))
	rv := variance.MulScalar(mom).Add(bv.MulScalar(1 - mom))
	cs := ir.Shape{x.Shape()[1]}
	return []value{rtValue(norm(bm, bv)), rtValue(reshape(rm, cs)), rtValue(reshape(rv, cs))}, nil
}

// instanceNormOp is s·(x - mean)/√(var + eps) + B with mean and var over
// the spatial axes of each (n, c).
func instanceNormOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	p, err := c.normInputs(x, 1, 2)
	if err != nil {
		return nil, err
	}
	ax := allBut(len(x.Shape()), 0, 1)
	if len(ax) == 0 {
		return nil, c.invalid("input of shape %v has no spatial axes", x.Shape())
	}
	eps := c.attrFloat("epsilon", 1e-5)
	m, v := x.Mean(true, ax...), x.Variance(true, ax...)
	return one(rtValue(p[0].Mul(x.Sub(m)).Div(v.AddScalar(eps).Sqrt()).Add(p[1])))
}

// mvnOp is MeanVarianceNormalization as the reference computes it:
// (x - mean)/(√(mean(x²) - mean²) + 1e-9) over the axes (default 0, 2, 3).
func mvnOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	r := len(x.Shape())
	axes64, ok := c.attrInts("axes")
	if !ok {
		axes64 = []int64{0, 2, 3}
	}
	var ax []int
	for _, a := range axes64 {
		k, err := c.axisOf(a, r)
		if err != nil {
			return nil, err
		}
		if containsInt(ax, k) {
			return nil, c.invalid("axis %d is named twice", k)
		}
		ax = append(ax, k)
	}
	m := x.Mean(true, ax...)
	std := x.Mul(x).Mean(true, ax...).Sub(m.Mul(m)).Sqrt()
	return one(rtValue(x.Sub(m).Div(std.AddScalar(1e-9))))
}

// cumSumOp is CumSum along a constant axis: y[i] = the sum of mask(T, x)
// over j, T[i, j] = 1 where j ≤ i (j < i exclusive; ≥ and > reversed), a
// constant triangle; each sum is the pairwise tree of its elements and
// -0s (numpy's cumsum adds in sequence: the order differs, the elements
// are the same). An exclusive sum of nothing is +0, as the reference's.
//
// A run-time value of another dtype that sum takes (float64, float16, the
// integers) sums where(T, x, the sum's identity) in its own dtype: -0 for
// the floats, 0 for the integers (which wrap).
func cumSumOp(c *importer) ([]value, *ir.Error) {
	var x ir.Tensor
	var err *ir.Error
	if v := c.in(0); v != nil && v.set && v.rt.DType() != ir.F32 && ir.OpSum.Info().Types.In.Has(v.rt.DType()) {
		x = v.rt
	} else if x, err = c.rtIn(0); err != nil {
		return nil, err
	}
	s := x.Shape()
	ax, err := c.ints(1, "axis")
	if err != nil {
		return nil, err
	}
	if len(ax) != 1 || len(s) == 0 {
		return nil, c.invalid("axis has %d elements for rank %d", len(ax), len(s))
	}
	a, err := c.axisOf(ax[0], len(s))
	if err != nil {
		return nil, err
	}
	if len(s)+1 > ir.MaxRank {
		return nil, c.refuse("a cumulative sum of rank %d; gpucc's need rank %d at most", len(s), ir.MaxRank-1)
	}
	excl, rev := c.attrInt("exclusive", 0) != 0, c.attrInt("reverse", 0) != 0
	n := s[a]
	incl := func(i, j int) bool {
		switch {
		case rev && excl:
			return j > i
		case rev:
			return j >= i
		case excl:
			return j < i
		}
		return j <= i
	}
	ts := make([]int, len(s)+1)
	for k := range ts {
		ts[k] = 1
	}
	ts[a], ts[a+1] = n, n
	tri, err := c.newConst(Float32, ts)
	if err != nil {
		return nil, err
	}
	// One flag per position along the axis: [1, …, n, …, 1].
	es := make([]int, len(s))
	for k := range es {
		es[k] = 1
	}
	es[a] = n
	empty, err := c.newConst(Float32, es)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		any := false
		for j := 0; j < n; j++ {
			if incl(i, j) {
				tri.Float32[i*n+j] = 1
				any = true
			}
		}
		empty.Float32[i] = float32(b2i(any))
	}
	xs := append(append(append(ir.Shape{}, s[:a]...), 1), s[a:]...)
	if dt := x.DType(); dt != ir.F32 {
		return one(rtValue(typedCumSum(c, x, xs, a, tri, empty, excl)))
	}
	tt, err := c.runtime(&value{c: tri}, "the triangle")
	if err != nil {
		return nil, err
	}
	y := tt.Apply(ir.OpMask, reshape(x, xs)).SumAxes(false, a+1)
	if excl {
		e, err := c.runtime(&value{c: empty}, "the non-empty sums")
		if err != nil {
			return nil, err
		}
		y = where(e, y, c.zeros(s))
	}
	return one(rtValue(y))
}

// oneHotOp is OneHot: out = values[1] where the position along axis is
// the index (a negative index counts from depth), values[0] elsewhere; an
// index outside [-depth, depth) matches no position (the operator's
// definition). Constant indices give a constant mask; run-time float32
// indices (integers) give equal(position, index) + equal(position, index +
// depth).
func oneHotOp(c *importer) ([]value, *ir.Error) {
	dt, err := c.konst(1, "depth")
	if err != nil {
		return nil, err
	}
	if dt.Len() != 1 {
		return nil, c.invalid("depth has %d elements, not one", dt.Len())
	}
	d := int64(dt.at(0).f)
	if dt.Type.isInt() {
		d = dt.Int64[0]
	}
	if d < 1 || d >= maxExactIndex {
		return nil, c.refuse("a depth of %d", d)
	}
	vi, vv := c.in(0), c.in(2)
	if vv == nil {
		return nil, c.invalid("input 2 (values) is missing")
	}
	is := vi.shape()
	r := len(is) + 1
	a := c.attrInt("axis", -1)
	if a < -int64(r) || a >= int64(r) {
		return nil, c.invalid("axis %d is out of range for rank %d", a, r)
	}
	if a < 0 {
		a += int64(r)
	}
	axis := int(a)
	out := append(append(append([]int{}, is[:axis]...), int(d)), is[axis:]...)
	if len(out) > ir.MaxRank {
		return nil, c.refuse("a one-hot of rank %d, over %d", len(out), ir.MaxRank)
	}
	if vv.shape() == nil || len(vv.shape()) != 1 || vv.shape()[0] != 2 {
		return nil, c.invalid("values of shape %v, not [2]", vv.shape())
	}
	hit := func(idx number, isFloat bool, pos int) bool {
		i := idx.i
		if isFloat {
			i = int64(idx.f)
		}
		if i < 0 {
			i += d
		}
		return i == int64(pos)
	}
	if !vi.set && !vv.set { // everything known: fold
		r, err := c.newConst(vv.c.Type, out)
		if err != nil {
			return nil, err
		}
		st := strides(out)
		for i := 0; i < r.Len(); i++ {
			pos := i / st[axis] % int(d)
			j := i/(st[axis]*int(d))*st[axis] + i%st[axis]
			k := 0
			if hit(vi.c.at(j), !vi.c.Type.isInt(), pos) {
				k = 1
			}
			r.set(i, vv.c.at(k))
		}
		return one(constValue(r))
	}
	// The mask: 1 where the position is the index.
	var m ir.Tensor
	if !vi.set {
		mc, err := c.newConst(Float32, out)
		if err != nil {
			return nil, err
		}
		st := strides(out)
		for i := range mc.Float32 {
			pos := i / st[axis] % int(d)
			j := i/(st[axis]*int(d))*st[axis] + i%st[axis]
			mc.Float32[i] = float32(b2i(hit(vi.c.at(j), !vi.c.Type.isInt(), pos)))
		}
		if m, err = c.runtime(&value{c: mc}, "the one-hot mask"); err != nil {
			return nil, err
		}
	} else if t := vi.rt.DType(); t != ir.F32 && !t.IsFloat() && t != ir.Bool {
		// Run-time integer indices: compared at int64 (a widening cast),
		// equal(position, index) or equal(position, index + depth), which
		// no index outside [-depth, depth) meets (index + depth wraps to a
		// negative value for the largest ones).
		x := vi.rt
		if t != ir.I64 {
			x = x.Cast(ir.I64)
		}
		ps := make(ir.Shape, len(out))
		for k := range ps {
			ps[k] = 1
		}
		ps[axis] = int(d)
		iota := make([]int64, d)
		for i := range iota {
			iota[i] = int64(i)
		}
		shape := ir.Shape(out)
		p := c.b.TypedInput("", ir.I64, ps, nil, iota).Broadcast(shape)
		xi := reshape(x, append(append(append(ir.Shape{}, is[:axis]...), 1), is[axis:]...)).Broadcast(shape)
		hitAt := p.ApplyTo(ir.Bool, ir.OpEqual, xi)
		wrapped := p.ApplyTo(ir.Bool, ir.OpEqual, xi.Apply(ir.OpAdd, c.b.FullOf(ir.I64, shape, 0, d)))
		m = hitAt.Apply(ir.OpOr, wrapped).Cast(ir.F32)
	} else {
		x, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		ps := make(ir.Shape, len(out))
		for k := range ps {
			ps[k] = 1
		}
		ps[axis] = int(d)
		pos, err := c.newConst(Float32, ps)
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
		xi := reshape(x, append(append(append(ir.Shape{}, is[:axis]...), 1), is[axis:]...))
		m = p.Apply(ir.OpEqual, xi).Add(p.Apply(ir.OpEqual, xi.AddScalar(float32(d))))
	}
	if vv.set && vv.rt.DType() != ir.F32 { // typed values: selected by a where at their dtype
		at := func(k int64) ir.Tensor {
			return vv.rt.Gather(c.b.TypedInput("", ir.I64, ir.Shape{}, nil, []int64{k}), 0).Broadcast(ir.Shape(out))
		}
		return one(rtValue(m.Cast(ir.Bool).Where(at(1), at(0))))
	}
	v, err := c.rtIn(2)
	if err != nil {
		return nil, err
	}
	on, err := c.gatherAlong(v.Reshape(ir.Shape{1, 2}), 1, []int64{1}, []int{1, 1})
	if err != nil {
		return nil, err
	}
	off, err := c.gatherAlong(v.Reshape(ir.Shape{1, 2}), 1, []int64{0}, []int{1, 1})
	if err != nil {
		return nil, err
	}
	shape := ir.Shape(out)
	return one(rtValue(where(m, on.Reshape(ir.Shape{}).Broadcast(shape), off.Reshape(ir.Shape{}).Broadcast(shape))))
}

// eyeLikeOp is EyeLike: a constant of the input's 2-D shape with ones on
// the diagonal k, of type dtype (the input's by default).
func eyeLikeOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := v.shape()
	if len(s) != 2 {
		return nil, c.invalid("input of shape %v, not 2-D", s)
	}
	dt := Float32
	if !v.set {
		dt = v.c.Type
	} else if t := v.rt.DType(); t != ir.F32 && !t.IsFloat() && !v.isBool {
		dt = DataTypeOf(t) // a run-time integer's own type
	}
	if a := c.attr("dtype"); a != nil {
		dt = DataType(a.i)
	}
	if !dt.isInt() && dt != Float32 && dt != Float64 {
		return nil, c.refuse("an identity of %v", dt)
	}
	k := c.attrInt("k", 0)
	r, err := c.newConst(dt, s)
	if err != nil {
		return nil, err
	}
	for i := 0; i < s[0]; i++ {
		if j := int64(i) + k; j >= 0 && j < int64(s[1]) {
			r.set(i*s[1]+int(j), number{i: 1, f: 1})
		}
	}
	return one(constValue(r))
}

// typedCumSum is cumSumOp's sum of a typed x (xs: x's shape with a 1
// inserted at a): where(T, x, identity) over [.., n, n, ..], summed over
// axis a+1 in x's dtype; an exclusive sum of nothing is +0 (0).
func typedCumSum(c *importer, x ir.Tensor, xs ir.Shape, a int, tri, empty *Tensor, excl bool) ir.Tensor {
	dt, s := x.DType(), x.Shape()
	full := append(ir.Shape{}, xs...)
	full[a] = s[a]
	bools := func(t *Tensor) []int64 {
		out := make([]int64, len(t.Float32))
		for i, v := range t.Float32 {
			out[i] = int64(b2i(v != 0))
		}
		return out
	}
	ts := ir.Shape(append([]int{}, tri.Shape...))
	keep := c.b.TypedInput("", ir.Bool, ts, nil, bools(tri))
	if !ts.Equal(full) {
		keep = keep.Broadcast(full)
	}
	xb := x.Reshape(xs)
	if !xs.Equal(full) {
		xb = xb.Broadcast(full)
	}
	negZero, zero := c.b.FullOf(dt, full, float32(math.Copysign(0, -1)), 0), ir.Tensor{}
	if dt == ir.F64 {
		negZero = c.b.FullOf(dt, full, 0, ir.F64Bits(math.Copysign(0, -1)))
	}
	y := keep.Where(xb, negZero).SumAxes(false, a+1)
	if !excl {
		return y
	}
	zero = c.b.FullOf(dt, s, 0, 0)
	es := ir.Shape(append([]int{}, empty.Shape...))
	e := c.b.TypedInput("", ir.Bool, es, nil, bools(empty))
	if !es.Equal(s) {
		e = e.Broadcast(s)
	}
	return e.Where(y, zero)
}

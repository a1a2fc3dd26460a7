package onnx

import (
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// The arithmetic ops. Float32 values are computed at run time by table
// ops; integer and bool values fold at import.

// unary is a rule of one float32 operand computed by f.
func unary(f func(b *ir.Builder, x ir.Tensor) ir.Tensor) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) { return c.unaryOp(f) }
}

// unaryInt is unary on float32, with fi folded on an integer constant
// (wrapped to its type, as ONNX's fixed-width integers are).
func unaryInt(f func(b *ir.Builder, x ir.Tensor) ir.Tensor, fi func(int64) int64) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		if v := c.in(0); !v.set && v.c.Type.isInt() && v.c.Type != Bool {
			dt := v.c.Type
			r, err := c.elementwise(dt, func(x []number) (number, *ir.Error) { return number{i: wrapInt(dt, fi(x[0].i))}, nil }, v.c)
			if err != nil {
				return nil, err
			}
			return one(constValue(r))
		}
		return c.unaryOp(f)
	}
}

func (c *importer) unaryOp(f func(b *ir.Builder, x ir.Tensor) ir.Tensor) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	return one(rtValue(f(c.b, x)))
}

// arith is Add, Sub, Mul or Div: op at run time on float32, fi folded on
// integers (Div truncates toward zero, as C and ONNX Runtime do).
func arith(op ir.Op, fi func(a, b int64) int64) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		a, b := c.in(0), c.in(1)
		if a == nil || b == nil {
			return nil, c.invalid("needs two inputs")
		}
		if !a.set && !b.set && a.c.Type.isInt() {
			if b.c.Type != a.c.Type {
				return nil, c.invalid("operands of types %v and %v", a.c.Type, b.c.Type)
			}
			dt := a.c.Type
			r, err := c.elementwise(dt, func(x []number) (number, *ir.Error) {
				if fi == nil {
					if x[1].i == 0 {
						return number{}, c.invalid("integer division by zero")
					}
					return number{i: wrapInt(dt, x[0].i/x[1].i)}, nil
				}
				return number{i: wrapInt(dt, fi(x[0].i, x[1].i))}, nil
			}, a.c, b.c)
			if err != nil {
				return nil, err
			}
			return one(constValue(r))
		}
		ta, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		tb, err := c.rtIn(1)
		if err != nil {
			return nil, err
		}
		return one(rtValue(ta.Apply(op, tb)))
	}
}

// eq and lt compare numbers, as floats when f.
func eq(x, y number, f bool) bool {
	if f {
		return x.f == y.f
	}
	return x.i == y.i
}

func lt(x, y number, f bool) bool {
	if f {
		return x.f < y.f
	}
	return x.i < y.i
}

// compare folds a comparison of constants into a bool constant; at run
// time it is the table's comparison op (1 or 0; false where either is
// NaN), its operands swapped for Less and LessOrEqual.
func compare(p func(x, y number, f bool) bool, op ir.Op, swap bool) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		va, vb := c.in(0), c.in(1)
		if va == nil || vb == nil {
			return nil, c.invalid("needs two inputs")
		}
		if va.set || vb.set {
			a, err := c.rtIn(0)
			if err != nil {
				return nil, err
			}
			b, err := c.rtIn(1)
			if err != nil {
				return nil, err
			}
			if swap {
				a, b = b, a
			}
			return one(boolValue(a.Apply(op, b)))
		}
		a, b := va.c, vb.c
		if a.Type != b.Type {
			return nil, c.invalid("operands of types %v and %v", a.Type, b.Type)
		}
		f := !a.Type.isInt()
		r, err := c.elementwise(Bool, func(x []number) (number, *ir.Error) { return number{i: b2i(p(x[0], x[1], f))}, nil }, a, b)
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
}

func boolValue(t ir.Tensor) value { return value{rt: t, set: true, isBool: true} }

// not is 1 - c for a run-time bool c of 1 and 0: exact.
func not(c ir.Tensor) ir.Tensor { return c.Neg().AddScalar(1) }

// logic folds Not, And, Or and Xor of bool constants; at run time, on 1
// and 0: not is 1 - a, and a·b, or max(a, b), xor 1 - (a == b).
func logic(n int, p func(x []bool) bool, rt func(x []ir.Tensor) ir.Tensor) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		if c.nin() != n { // p and rt read x[0] … x[n-1]
			return nil, c.invalid("%d inputs; it takes %d", c.nin(), n)
		}
		var ts []*Tensor
		var runtime bool
		for k := 0; k < c.nin(); k++ {
			v := c.in(k)
			if v == nil {
				return nil, c.invalid("input %d is missing", k)
			}
			if v.set {
				if !v.isBool {
					return nil, c.invalid("operand %d is not bool", k)
				}
				runtime = true
				continue
			}
			if v.c.Type != Bool {
				return nil, c.invalid("operand of type %v, not bool", v.c.Type)
			}
			ts = append(ts, v.c)
		}
		if runtime {
			xs := make([]ir.Tensor, c.nin())
			for k := range xs {
				x, err := c.rtIn(k)
				if err != nil {
					return nil, err
				}
				xs[k] = x
			}
			return one(boolValue(rt(xs)))
		}
		bs := make([]bool, len(ts))
		r, err := c.elementwise(Bool, func(x []number) (number, *ir.Error) {
			for k := range x {
				bs[k] = x[k].i != 0
			}
			return number{i: b2i(p(bs))}, nil
		}, ts...)
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
}

// whereOp folds on constants; at run time where(c, x, y) is
// mask(c, x) + mask(1 - c, y): the chosen operand plus -0, which is that
// operand bit for bit (-0 + -0 = -0, NaN stays NaN), the other never read
// into the sum.
func whereOp(c *importer) ([]value, *ir.Error) {
	vc, vx, vy := c.in(0), c.in(1), c.in(2)
	if vc == nil || vx == nil || vy == nil {
		return nil, c.invalid("needs three inputs")
	}
	if vc.set || vx.set || vy.set {
		if vc.set && !vc.isBool || !vc.set && vc.c.Type != Bool {
			return nil, c.invalid("the condition is not bool")
		}
		if !vc.set {
			if v, ok, err := c.constWhere(vc.c); ok || err != nil {
				return v, err
			}
		}
		cond, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		x, err := c.rtIn(1)
		if err != nil {
			return nil, err
		}
		y, err := c.rtIn(2)
		if err != nil {
			return nil, err
		}
		return one(rtValue(cond.Apply(ir.OpMask, x).Add(not(cond).Apply(ir.OpMask, y))))
	}
	cond, x, y := vc.c, vx.c, vy.c
	if cond.Type != Bool || x.Type != y.Type {
		return nil, c.invalid("condition of type %v, X and Y of %v and %v", cond.Type, x.Type, y.Type)
	}
	r, err := c.elementwise(x.Type, func(v []number) (number, *ir.Error) {
		if v[0].i != 0 {
			return v[1], nil
		}
		return v[2], nil
	}, cond, x, y)
	if err != nil {
		return nil, err
	}
	return one(constValue(r))
}

// constWhere folds a run-time Where whose condition cond is a constant
// that is all true or all false into the operand it picks, broadcast to
// the Where's shape: mask(1, x) + mask(0, y) is x + -0, which is x bit for
// bit, so nothing is computed and no mask reaches the graph (as
// transformers' GPT-2 writes its causal mask, a slice of its bias buffer,
// which at one query row a step is all true: issue 33). A condition
// holding both is not folded (ok false).
func (c *importer) constWhere(cond *Tensor) ([]value, bool, *ir.Error) {
	if cond == nil || len(cond.Int64) == 0 {
		return nil, false, nil
	}
	pick := 2
	if cond.Int64[0] != 0 {
		pick = 1
	}
	for _, b := range cond.Int64 {
		if (b != 0) != (pick == 1) {
			return nil, false, nil
		}
	}
	x, err := c.rtIn(1)
	if err != nil {
		return nil, true, err
	}
	y, err := c.rtIn(2)
	if err != nil {
		return nil, true, err
	}
	out, ok := ir.BroadcastShape(append(ir.Shape{}, cond.Shape...), x.Shape())
	if ok {
		out, ok = ir.BroadcastShape(out, y.Shape())
	}
	if !ok {
		return nil, true, c.invalid("the condition %v, X %v and Y %v do not broadcast together", cond.Shape, x.Shape(), y.Shape())
	}
	t := x
	if pick == 2 {
		t = y
	}
	if !t.Shape().Equal(out) {
		t = t.Broadcast(out)
	}
	return []value{rtValue(t)}, true, nil
}

// clipOp is min(max(x, lo), hi) (numpy's clip), each bound optional: the
// attributes before opset 11, scalar inputs from it (a constant one as the
// scalar form, a run-time one broadcast).
func clipOp(c *importer) ([]value, *ir.Error) {
	if v := c.in(0); !v.set && v.c.Type.isInt() && v.c.Type != Bool && c.opset >= 11 {
		// numpy's clip on integers: min(max(x, lo), hi), each bound optional.
		ts := []*Tensor{v.c}
		for k := 1; k <= 2; k++ {
			b := c.in(k)
			if b == nil {
				ts = append(ts, nil)
				continue
			}
			if b.set || b.c.Type != v.c.Type || b.c.Len() != 1 {
				return nil, c.invalid("a bound of an integer clip must be a constant scalar of its type")
			}
			ts = append(ts, b.c)
		}
		r, err := c.elementwise(v.c.Type, func(x []number) (number, *ir.Error) {
			y := x[0].i
			if ts[1] != nil {
				y = max(y, ts[1].Int64[0])
			}
			if ts[2] != nil {
				y = min(y, ts[2].Int64[0])
			}
			return number{i: y}, nil
		}, v.c)
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	if c.opset < 11 {
		if a := c.attr("min"); a != nil {
			x = x.MaximumScalar(a.f)
		}
		if a := c.attr("max"); a != nil {
			x = x.MinimumScalar(a.f)
		}
		return one(rtValue(x))
	}
	if c.attr("min") != nil || c.attr("max") != nil {
		return nil, c.invalid("min and max are inputs from opset 11")
	}
	for k, op := range []ir.Op{ir.OpMaximum, ir.OpMinimum} {
		v := c.in(k + 1)
		if v == nil {
			continue
		}
		if len(v.shape()) != 0 {
			return nil, c.invalid("a bound must be a scalar, got shape %v", v.shape())
		}
		if v.c != nil && v.c.Type == Float32 {
			b := float64(v.c.Float32[0])
			switch {
			case math.IsInf(b, 2*k-1): // max(x, -Inf), min(x, +Inf): x
			case math.IsInf(b, 0) || math.IsNaN(b):
				return nil, c.refuse("a bound of %v", b)
			default:
				x = x.ApplyScalar(op.Info().ScalarForm, float32(b))
			}
			continue
		}
		b, err := c.rtIn(k + 1)
		if err != nil {
			return nil, err
		}
		x = x.Apply(op, b)
	}
	return one(rtValue(x))
}

// variadic folds op over the inputs left to right (Sum, Max, Min), and
// for Mean divides by their number, as the reference does.
func variadic(op ir.Op, mean bool, fi func(a, b int64) int64) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		if c.nin() == 0 {
			return nil, c.invalid("no inputs")
		}
		if r, ok, err := c.foldInts(fi); ok || err != nil {
			return r, err
		}
		acc, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		for k := 1; k < c.nin(); k++ {
			t, err := c.rtIn(k)
			if err != nil {
				return nil, err
			}
			acc = acc.Apply(op, t)
		}
		if mean && c.nin() > 1 {
			acc = acc.DivScalar(float32(c.nin()))
		}
		return one(rtValue(acc))
	}
}

// matrix returns x as [rows, cols] for matmul: 1-D as a row (left) or a
// column (right), higher ranks only when their batch dimensions are 1.
func (c *importer) matrix(x ir.Tensor, left bool) (ir.Tensor, *ir.Error) {
	s := x.Shape()
	switch {
	case len(s) == 1 && left:
		return x.Reshape(ir.Shape{1, s[0]}), nil
	case len(s) == 1:
		return x.Reshape(ir.Shape{s[0], 1}), nil
	case len(s) == 2:
		return x, nil
	}
	for _, d := range s[:len(s)-2] {
		if d != 1 {
			return ir.Tensor{}, c.refuse("a batched matmul of shape %v; gpucc multiplies 2-D matrices", s)
		}
	}
	return x.Reshape(ir.Shape(s[len(s)-2:])), nil
}

// unitBatch reports whether a matmul operand of shape s is one matrix or
// vector: rank ≤ 2, or every batch dimension 1.
func (c *importer) unitBatch(s []int) bool {
	for _, d := range s[:max(len(s)-2, 0)] {
		if d != 1 {
			return false
		}
	}
	return true
}

func matmulOp(c *importer) ([]value, *ir.Error) {
	a, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	b, err := c.rtIn(1)
	if err != nil {
		return nil, err
	}
	sa, sb := a.Shape(), b.Shape()
	if len(sa) == 0 || len(sb) == 0 {
		return nil, c.invalid("matmul of a scalar")
	}
	if len(sa) > 2 && c.unitBatch(sb) {
		// A's batch dimensions against one matrix B: they are rows of one
		// matmul ([…·m, k] × [k, n]), the same dot products in the same
		// order.
		k := sa[len(sa)-1]
		rows := ir.Shape(sa).Len() / k
		mb, err := c.matrix(b, false)
		if err != nil {
			return nil, err
		}
		if mb.Shape()[0] != k {
			return nil, c.invalid("inner dimensions differ: %v × %v", sa, sb)
		}
		y := reshape(a, ir.Shape{rows, k}).MatMul(mb)
		out := append([]int{}, sa[:len(sa)-1]...)
		for len(out) < len(sb)-1 { // B's batch dimensions of 1 broadcast A's up
			out = append([]int{1}, out...)
		}
		if len(sb) > 1 {
			out = append(out, sb[len(sb)-1])
		}
		return c.withShape(&value{rt: y, set: true}, out)
	}
	if !c.unitBatch(sa) || !c.unitBatch(sb) {
		return c.batchedMatmul(a, b)
	}
	ma, err := c.matrix(a, true)
	if err != nil {
		return nil, err
	}
	mb, err := c.matrix(b, false)
	if err != nil {
		return nil, err
	}
	if ma.Shape()[1] != mb.Shape()[0] {
		return nil, c.invalid("inner dimensions differ: %v × %v", sa, sb)
	}
	y := ma.MatMul(mb)
	// numpy's result shape: the broadcast batch dimensions (all 1 here),
	// then m and n, without the dimension a 1-D operand lacks.
	var out []int
	batch := max(len(sa), len(sb)) - 2
	for k := 0; k < batch; k++ {
		out = append(out, 1)
	}
	if len(sa) > 1 {
		out = append(out, sa[len(sa)-2])
	}
	if len(sb) > 1 {
		out = append(out, sb[len(sb)-1])
	}
	return c.withShape(&value{rt: y, set: true}, out)
}

// batchedMatmul is MatMul where B has a batch (numpy's matmul): a 1-D
// operand becomes a row (A) or a column (B), the batch dimensions
// broadcast, and the result drops the dimension a 1-D operand lacks. The
// table's matmul multiplies each matrix of the batch with the 2-D
// matmul's order (ir.MaxMatmulRank dimensions at most).
func (c *importer) batchedMatmul(a, b ir.Tensor) ([]value, *ir.Error) {
	sa, sb := a.Shape(), b.Shape()
	if len(sa) > ir.MaxMatmulRank || len(sb) > ir.MaxMatmulRank {
		return nil, c.refuse("a batched matmul of shapes %v and %v; gpucc's matmul takes rank %d at most", sa, sb, ir.MaxMatmulRank)
	}
	ma, mb := a, b
	if len(sa) == 1 {
		ma = a.Reshape(ir.Shape{1, sa[0]})
	}
	if len(sb) == 1 {
		mb = b.Reshape(ir.Shape{sb[0], 1})
	}
	ra, rb := ma.Shape(), mb.Shape()
	if ra[len(ra)-1] != rb[len(rb)-2] {
		return nil, c.invalid("inner dimensions differ: %v × %v", sa, sb)
	}
	batch, ok := ir.BroadcastShape(ra[:len(ra)-2], rb[:len(rb)-2])
	if !ok {
		return nil, c.invalid("batch dimensions of %v and %v do not broadcast", sa, sb)
	}
	out := append([]int{}, batch...)
	if len(sa) > 1 {
		out = append(out, sa[len(sa)-2])
	}
	if len(sb) > 1 {
		out = append(out, sb[len(sb)-1])
	}
	return c.withShape(&value{rt: ma.MatMul(mb), set: true}, out)
}

// gemmOp is alpha·(A' × B') + beta·C, with A' and B' transposed when
// asked and C broadcast; a factor of 1 is left out (it changes no bit).
func gemmOp(c *importer) ([]value, *ir.Error) {
	a, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	b, err := c.rtIn(1)
	if err != nil {
		return nil, err
	}
	if len(a.Shape()) != 2 || len(b.Shape()) != 2 {
		return nil, c.invalid("A and B must be 2-D, got %v and %v", a.Shape(), b.Shape())
	}
	if c.attrInt("transA", 0) != 0 {
		a = a.T()
	}
	if c.attrInt("transB", 0) != 0 {
		b = b.T()
	}
	if a.Shape()[1] != b.Shape()[0] {
		return nil, c.invalid("inner dimensions differ: %v × %v", a.Shape(), b.Shape())
	}
	y := a.MatMul(b)
	if alpha := c.attrFloat("alpha", 1); alpha != 1 {
		y = y.MulScalar(alpha)
	}
	if c.in(2) != nil {
		cc, err := c.rtIn(2)
		if err != nil {
			return nil, err
		}
		if beta := c.attrFloat("beta", 1); beta != 1 {
			cc = cc.MulScalar(beta)
		}
		if !ir.BroadcastsTo(cc.Shape(), y.Shape()) {
			return nil, c.invalid("C of shape %v does not broadcast to %v", cc.Shape(), y.Shape())
		}
		y = y.Add(cc)
	}
	return one(rtValue(y))
}

// softmaxOp is Softmax or LogSoftmax along one axis (opset 13), or over
// the dimensions from axis on, flattened to 2-D (before opset 13).
func softmaxOp(log bool) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		x, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		s := x.Shape()
		def := int64(-1)
		if c.opset < 13 {
			def = 1
		}
		if len(s) == 0 {
			return nil, c.invalid("softmax of a scalar")
		}
		axis, err := c.axisOf(c.attrInt("axis", def), len(s))
		if err != nil {
			return nil, err
		}
		f := func(t ir.Tensor, a int) ir.Tensor {
			if log {
				return t.LogSoftmax(a)
			}
			return t.Softmax(a)
		}
		if c.opset >= 13 || axis == len(s)-1 {
			return one(rtValue(f(x, axis)))
		}
		a, b := 1, 1
		for k, d := range s {
			if k < axis {
				a *= d
			} else {
				b *= d
			}
		}
		return one(rtValue(f(x.Reshape(ir.Shape{a, b}), 1).Reshape(s)))
	}
}

// reduceOp is a reduction over the axes (an attribute, or ReduceSum's
// input from opset 13), keepdims by default. No axes means every axis,
// or none with noop_with_empty_axes.
// typedReduce are the reductions that are one row (sum, max, prod) and so
// take a run-time typed value of any numeric dtype; the others compose
// float32 ops (ReduceMin's negations would wrap an integer's minimum).
var typedReduce = map[string]bool{"ReduceSum": true, "ReduceMax": true, "ReduceProd": true}

// float64Reduce are the reductions whose every step is a float64 row (sum,
// max, neg, mul, maximum, sqrt, exp, log): a run-time float64 input
// computes them in float64.
var float64Reduce = map[string]bool{"ReduceSum": true, "ReduceMax": true, "ReduceMin": true, "ReduceSumSquare": true,
	"ReduceL1": true, "ReduceL2": true, "ReduceLogSum": true, "ReduceLogSumExp": true}

func reduceOp(f func(x ir.Tensor, keep bool, axes []int) ir.Tensor) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		x, err := c.rtIn(0)
		if v := c.in(0); v != nil && v.set && v.rt.DType() != ir.F32 && typedReduce[c.n.opType] {
			x, err = v.rt, nil // a typed value: the row's Combine at its dtype (integers wrap)
		}
		if v := c.in(0); v != nil && v.set && v.rt.DType() == ir.F64 && float64Reduce[c.n.opType] {
			x, err = v.rt, nil
		}
		if err != nil {
			return nil, err
		}
		since := int64(18)
		if c.n.opType == "ReduceSum" {
			since = 13
		}
		axes64, _, err := c.axesArg(since)
		if err != nil {
			return nil, err
		}
		keep := c.attrInt("keepdims", 1) != 0
		if len(axes64) == 0 && c.attrInt("noop_with_empty_axes", 0) != 0 {
			return one(rtValue(x))
		}
		s := x.Shape()
		axes := make([]int, 0, len(axes64))
		seen := make([]bool, len(s))
		for _, a := range axes64 {
			k, err := c.axisOf(a, len(s))
			if err != nil {
				return nil, err
			}
			if seen[k] {
				return nil, c.invalid("axis %d is named twice", k)
			}
			seen[k] = true
			axes = append(axes, k)
		}
		if len(s) == 0 {
			return one(rtValue(f(x.Reshape(ir.Shape{1}), keep, nil).Reshape(ir.Shape{})))
		}
		return one(rtValue(f(x, keep, axes)))
	}
}

// layerNormOp is LayerNormalization over the dimensions from axis on, as
// ONNX's reference computes it on the input flattened to [rows, cols]:
//
//	mean = sum(x, 1)/cols, d = x - mean, inv = 1/√(sum(d·d, 1)/cols + eps)
//	Y = (d·inv)·Scale + B
//
// which is the LayerNorm composite's sequence (rsqrt is 1/√, correctly
// rounded √ then division). Mean and InvStdDev are outputs 1 and 2, of
// the input's shape with 1 from axis on. Like the reference and ONNX
// Runtime, a row whose d·d overflows has InvStdDev 0 and Y = d·0 = 0
// (TestLayerNormOverflow); the composite's scaling (ir's LayerNorm) is
// not the ONNX op's arithmetic, so it is not used here.
func layerNormOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) == 0 {
		return nil, c.invalid("layer normalization of a scalar")
	}
	axis, err := c.axisOf(c.attrInt("axis", -1), len(s))
	if err != nil {
		return nil, err
	}
	if st := c.attrInt("stash_type", 1); st != 1 {
		return nil, c.refuse("stash_type %d (gpucc computes in float32)", st)
	}
	eps := c.attrFloat("epsilon", 1e-5)
	rows, cols := 1, 1
	reduced := append(ir.Shape{}, s...)
	for k, d := range s {
		if k < axis {
			rows *= d
		} else {
			cols *= d
			reduced[k] = 1
		}
	}
	m := reshape(x, ir.Shape{rows, cols})
	mean := m.Mean(true, 1)
	d := m.Sub(mean)
	inv := d.Mul(d).Mean(true, 1).AddScalar(eps).Rsqrt()
	y := reshape(d.Mul(inv), s)
	scale, err := c.rtIn(1)
	if err != nil {
		return nil, err
	}
	y = y.Mul(scale)
	if c.in(2) != nil {
		bias, err := c.rtIn(2)
		if err != nil {
			return nil, err
		}
		y = y.Add(bias)
	}
	return []value{rtValue(y), rtValue(reshape(mean, reduced)), rtValue(reshape(inv, reduced))}, nil
}

// foldInts folds fi left to right over the inputs when every one is an
// integer constant of one type (ok false otherwise, fi nil included).
func (c *importer) foldInts(fi func(a, b int64) int64) ([]value, bool, *ir.Error) {
	if fi == nil {
		return nil, false, nil
	}
	var ts []*Tensor
	for k := 0; k < c.nin(); k++ {
		v := c.in(k)
		if v == nil || v.set || !v.c.Type.isInt() || v.c.Type == Bool || v.c.Type != c.in(0).c.Type {
			return nil, false, nil
		}
		ts = append(ts, v.c)
	}
	dt := ts[0].Type
	r, err := c.elementwise(dt, func(x []number) (number, *ir.Error) {
		acc := x[0].i
		for _, y := range x[1:] {
			acc = wrapInt(dt, fi(acc, y.i))
		}
		return number{i: acc}, nil
	}, ts...)
	if err != nil {
		return nil, true, err
	}
	return []value{constValue(r)}, true, nil
}

// modOp folds Mod of integer constants: fmod 0 takes the divisor's sign
// (numpy's mod, Python's %), fmod 1 the dividend's (C's %). On float32 at
// run time it is refused: fmod's exact remainder needs a long division
// that no table op does.
func modOp(c *importer) ([]value, *ir.Error) {
	a, b := c.in(0), c.in(1)
	if a == nil || b == nil {
		return nil, c.invalid("needs two inputs")
	}
	if a.set || b.set || !a.c.Type.isInt() || a.c.Type == Bool {
		return nil, c.refuse("Mod of %v values (gpucc folds integer Mod at import; a float remainder needs a long division no table op does)", typeOf(a))
	}
	if b.c.Type != a.c.Type {
		return nil, c.invalid("operands of types %v and %v", a.c.Type, b.c.Type)
	}
	fmod := c.attrInt("fmod", 0) != 0
	dt := a.c.Type
	r, err := c.elementwise(dt, func(x []number) (number, *ir.Error) {
		if x[1].i == 0 {
			return number{}, c.invalid("integer modulo by zero")
		}
		m := x[0].i % x[1].i
		if !fmod && m != 0 && (m < 0) != (x[1].i < 0) {
			m += x[1].i
		}
		return number{i: wrapInt(dt, m)}, nil
	}, a.c, b.c)
	if err != nil {
		return nil, err
	}
	return one(constValue(r))
}

// maxPowExponent bounds Pow's constant integer exponents: x^n takes about
// 2·log2(n) rounded multiplications.
const maxPowExponent = 64

// powOp is Pow. Integer constants fold (wrapping, as the reference's
// fixed-width power; a negative exponent by the run time's rule, powInt's:
// 1 for a base of 1, ±1 for -1, 0 for another, and 0's is a division by
// zero, where the fold refused all 224 of TestFoldMatchesRunTime's). A float32 base with a constant exponent whose
// every element is an integer n, |n| ≤ 64, is computed by binary
// powering: x^n (for n < 0, (1/x)^|n|, 1/x correctly rounded), squarings
// and multiplications each rounded once, so its relative error is below
// about (|n| - 1)·2^-24 (exact for |n| ≤ 1, correctly rounded for |n| = 2;
// x^0 = 1 for every x, NaN included, as numpy's). Different exponents in
// one tensor are each computed and selected with a where. A run-time or
// non-integer exponent is refused: a general power needs a logarithm
// more accurate than float32's.
func powOp(c *importer) ([]value, *ir.Error) {
	a, b := c.in(0), c.in(1)
	if a == nil || b == nil {
		return nil, c.invalid("needs two inputs")
	}
	if !a.set && a.c.Type.isInt() && !b.set && b.c.Type.isInt() {
		dt := a.c.Type
		r, err := c.elementwise(dt, func(x []number) (number, *ir.Error) {
			if x[1].i < 0 { // the run time's rule (powInt): what the exact power truncates to
				switch x[0].i {
				case 1:
					return number{i: 1}, nil
				case -1:
					return number{i: 1 - 2*(x[1].i&1)}, nil
				case 0:
					return number{}, c.invalid("0 to the negative power %d: an integer division by zero", x[1].i)
				}
				return number{i: 0}, nil
			}
			p, base := int64(1), x[0].i
			for e := x[1].i; e > 0; e >>= 1 {
				if e&1 != 0 {
					p = wrapInt(dt, p*base)
				}
				base = wrapInt(dt, base*base)
			}
			return number{i: p}, nil
		}, a.c, b.c)
		if err != nil {
			return nil, err
		}
		return one(constValue(r))
	}
	if b.set {
		return c.powRuntime()
	}
	e := b.c
	exps := map[int64]bool{}
	ns := make([]int64, e.Len())
	for i := range ns {
		var n int64
		if e.Type.isInt() {
			n = e.Int64[i]
		} else {
			f := e.at(i).f
			if f != float64(int64(f)) {
				return c.powConst()
			}
			n = int64(f)
		}
		if n < -maxPowExponent || n > maxPowExponent {
			return c.powConst()
		}
		ns[i] = n
		exps[n] = true
	}
	if a.c != nil && a.c.Type.isInt() {
		return nil, c.refuse("an integer base with a float exponent")
	}
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	shape, ok := ir.BroadcastShape(x.Shape(), e.Shape)
	if !ok {
		return nil, c.invalid("shapes %v and %v do not broadcast", x.Shape(), e.Shape)
	}
	if e.Len() == 0 { // no exponent, no power: x broadcasts to empty
		return nil, c.refuse("an empty exponent (shape %v): an empty result; gpucc's tensors are not empty", e.Shape)
	}
	pow := func(n int64) ir.Tensor {
		if n == 0 {
			return c.b.Full(shape, 1)
		}
		base := x
		if n < 0 {
			base, n = c.b.Full(x.Shape(), 1).Div(x), -n
		}
		var p ir.Tensor
		have := false
		for ; n > 0; n >>= 1 {
			if n&1 != 0 {
				if have {
					p = p.Mul(base)
				} else {
					p, have = base, true
				}
			}
			if n > 1 {
				base = base.Mul(base)
			}
		}
		return reshape(p, x.Shape()).Broadcast(shape)
	}
	if len(exps) == 1 {
		y := pow(ns[0])
		return one(rtValue(reshape(y, shape)))
	}
	var y ir.Tensor
	first := true
	for _, n := range sortedKeys(exps) {
		p := pow(n)
		if first {
			y, first = p, false
			continue
		}
		m, err := c.newConst(Float32, e.Shape)
		if err != nil {
			return nil, err
		}
		for i, k := range ns {
			m.Float32[i] = float32(b2i(k == n))
		}
		mt, err := c.runtime(&value{c: m}, "the exponent's mask")
		if err != nil {
			return nil, err
		}
		y = where(mt, p, y)
	}
	return one(rtValue(y))
}

func sortedKeys(m map[int64]bool) []int64 {
	var ks []int64
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// typeOf names v's element type: a constant's, or float32 at run time.
func typeOf(v *value) DataType {
	if v.set {
		return Float32
	}
	return v.c.Type
}

// powRuntime is Pow with a run-time exponent: ir's pow (C's pow; an
// integer exponent up to ±64 by repeated squaring, as the constant
// exponents above) of a float32 base. An exponent of an integer dtype is
// cast to float32, which keeps its value up to 2^24; beyond, the float is
// even and the result's magnitude within pow's bound, and the sign of an
// odd exponent of a negative base (or -0) is put back from the integer's
// own low bit. A float16 or bfloat16 exponent is cast exactly.
func (c *importer) powRuntime() ([]value, *ir.Error) {
	if a, b := c.in(0), c.in(1); a.set && a.rt.DType().IsInt() && !a.isInt && !a.isBool && b.rt.DType().IsInt() {
		return c.powInt(a.rt, b.rt)
	}
	if a, b := c.in(0), c.in(1); a.set && (a.rt.DType().IsInt() && !a.isInt && !a.isBool || a.rt.DType() == ir.F64) && b.set && !b.rt.DType().IsInt() {
		// An integer (or float64) base with a float exponent: pow in
		// float64 of the exact values (each widened exactly), an integer
		// base's result truncated to its dtype, as ONNX's reference
		// computes np.power(x, y).astype(x.dtype); out of its range or NaN
		// fails the run (integer_fault).
		dt := a.rt.DType()
		x, y := a.rt, b.rt
		if dt != ir.F64 {
			x = x.Cast(ir.F64)
		}
		if y.DType() != ir.F64 {
			y = y.Cast(ir.F64)
		}
		r := x.Apply(ir.OpPow, y)
		if dt != ir.F64 {
			r = r.Cast(dt)
		}
		return one(rtValue(r))
	}
	if a := c.in(0); a.set && a.rt.DType() != ir.F32 || !a.set && a.c.Type != Float32 {
		return nil, c.refuse("a run-time exponent with a base of %v (gpucc computes pow of float32 and integer bases)", typeOfDType(a))
	}
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	y := c.in(1).rt
	dt := y.DType()
	if y.DType() != ir.F32 {
		y = y.Cast(ir.F32)
	}
	r := x.Apply(ir.OpPow, y)
	if !dt.IsInt() {
		return one(rtValue(r))
	}
	yi := c.in(1).rt
	s := yi.Shape()
	odd := yi.ApplyTo(dt, ir.OpBitAnd, c.b.FullOf(dt, s, 0, 1)).ApplyTo(ir.Bool, ir.OpEqual, c.b.FullOf(dt, s, 0, 1))
	big := yi.ApplyTo(ir.Bool, ir.OpGreater, c.b.FullOf(dt, s, 0, 1<<24))
	if lo, _ := dt.Range(); lo < 0 {
		big = big.ApplyTo(ir.Bool, ir.OpOr, c.b.FullOf(dt, s, 0, -1<<24).ApplyTo(ir.Bool, ir.OpGreater, yi))
	}
	flip := odd.ApplyTo(ir.Bool, ir.OpAnd, big).Cast(ir.F32)
	if !flip.Shape().Equal(r.Shape()) {
		flip = flip.Broadcast(r.Shape())
	}
	xs := x
	if !xs.Shape().Equal(r.Shape()) {
		xs = xs.Broadcast(r.Shape())
	}
	zero := c.b.Full(r.Shape(), 0)
	negative := zero.Apply(ir.OpGreater, xs).Maximum(zero.Apply(ir.OpGreater, c.b.Full(r.Shape(), 1).Div(xs))) // x < 0, or -0
	return one(rtValue(where(flip.Mul(negative), r.Neg(), r)))
}

// typeOfDType names v's element type.
func typeOfDType(v *value) string {
	if v.set {
		return v.rt.DType().String()
	}
	return v.c.Type.String()
}

// powConst is Pow of a float32 base by a constant exponent that is not
// an integer within ±64 (those unroll into products above): ir's pow of
// the exponent embedded as float32 (an integer constant's value rounded
// to float32 only beyond 2^24, where it is even and the result within
// pow's bound; its own low bit is then read at import).
func (c *importer) powConst() ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	e := c.in(1).c
	if e.Type == Float32 {
		y, err := c.runtime(c.in(1), "the exponent")
		if err != nil {
			return nil, err
		}
		return one(rtValue(x.Apply(ir.OpPow, y)))
	}
	if !e.Type.isInt() {
		return nil, c.refuse("an exponent of %v", e.Type)
	}
	f, err := c.newConst(Float32, e.Shape)
	if err != nil {
		return nil, err
	}
	odd, err := c.newConst(Float32, e.Shape)
	if err != nil {
		return nil, err
	}
	flip := false
	for i, n := range e.Int64 {
		f.Float32[i] = float32(n)
		if n&1 != 0 && int64(f.Float32[i]) != n {
			odd.Float32[i], flip = 1, true
		}
	}
	y, err := c.runtime(&value{c: f}, "the exponent")
	if err != nil {
		return nil, err
	}
	r := x.Apply(ir.OpPow, y)
	if !flip {
		return one(rtValue(r))
	}
	m, err := c.runtime(&value{c: odd}, "the exponent's parity")
	if err != nil {
		return nil, err
	}
	s := r.Shape()
	xs, ms := x, m
	if !xs.Shape().Equal(s) {
		xs = xs.Broadcast(s)
	}
	if !ms.Shape().Equal(s) {
		ms = ms.Broadcast(s)
	}
	zero := c.b.Full(s, 0)
	negative := zero.Apply(ir.OpGreater, xs).Maximum(zero.Apply(ir.OpGreater, c.b.Full(s, 1).Div(xs))) // x < 0, or -0
	return one(rtValue(where(ms.Mul(negative), r.Neg(), r)))
}

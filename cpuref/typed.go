package cpuref

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// Value is one node's value of any dtype: F holds a float dtype's elements
// (float16 and bfloat16 as float32 values already rounded to them), I an
// integer or bool dtype's (each within its range; bool 0 or 1) or
// float64's bits (ir.F64Bits).
type Value struct {
	DType ir.DType
	F     []float32
	I     []int64
}

// Len returns the number of elements.
func (v Value) Len() int {
	if v.DType.IsFloat() {
		return len(v.F)
	}
	return len(v.I)
}

// EvalTyped evaluates every node of a validated graph of any dtypes and
// returns the values, indexed by node id. It is the reference for typed
// graphs (see the package doc's "Dtypes"): a float32 node over float32
// operands is Eval's, bit for bit. A run with no right answer (an integer
// division or modulo by zero, a cast of NaN, ±Inf or an out-of-range float
// to an integer) fails with ir.CodeIntegerFault, naming the node, the op
// and the element.
func EvalTyped(g *ir.Graph) ([]Value, error) { return exact.evalTyped(g) }

// EvalTypedFlushed is EvalTyped on a GPU that flushes subnormals in its
// float32 programs: the float32 nodes over float32 operands (which the
// webgpu and webgl2 backends run as compiled float32 islands) are
// EvalFlushed's, the typed nodes EvalTyped's (the typed kernels keep
// subnormals). It is the one liberty the package doc states for float32,
// not the reference.
func EvalTypedFlushed(g *ir.Graph) ([]Value, error) { return arith{flush: true}.evalTyped(g) }

func (ar arith) evalTyped(g *ir.Graph) ([]Value, error) {
	vals := make([]Value, len(g.Nodes))
	floats := make([][]float32, len(g.Nodes)) // Eval's view: float32 nodes' values
	for i := range g.Nodes {
		v, err := ar.typedNode(g, i, vals, floats)
		if err != nil {
			return nil, err
		}
		vals[i] = v
		if v.DType == ir.F32 {
			floats[i] = v.F
		}
	}
	return vals, nil
}

// plainFloat reports whether node n and its operands are all float32 and its
// op has a float32 kernel: then Eval's rule computes it.
func plainFloat(g *ir.Graph, n *ir.Node) bool {
	if n.DType != ir.F32 || n.Op.Info().Typed {
		return false
	}
	for _, a := range n.Args {
		if g.Nodes[a].DType != ir.F32 {
			return false
		}
	}
	return true
}

func (ar arith) typedNode(g *ir.Graph, i int, vals []Value, floats [][]float32) (Value, error) {
	n := &g.Nodes[i]
	info := n.Op.Info()
	out := Value{DType: n.DType}
	if plainFloat(g, n) {
		out.F = ar.node(g, i, floats)
		return out, nil
	}
	arg := func(k int) Value { return vals[n.Args[k]] }
	switch {
	case n.Op == ir.OpInput:
		out.F, out.I = n.Data, n.Ints
		return out, nil
	case n.Op == ir.OpFull:
		if n.DType.IsFloat() {
			out.F = fill(n.Shape.Len(), n.Scalar)
		} else {
			out.I = fill(n.Shape.Len(), n.Ints[0])
		}
		return out, nil
	case info.View:
		src := viewSources(g, n)
		a := arg(0)
		if a.DType.IsFloat() {
			out.F = gather(a.F, src)
		} else {
			out.I = gather(a.I, src)
		}
		return out, nil
	case n.Op.IsReduction():
		return typedReduce(i, n.Op, arg(0), g.Nodes[n.Args[0]].Shape, n.Shape)
	case n.Op == ir.OpCast:
		return typedCast(i, arg(0), n.DType)
	case n.Op == ir.OpGather:
		return typedGather(i, g, n, arg(0), arg(1))
	case n.Op == ir.OpGatherElements:
		return typedGatherElements(i, g, n, arg(0), arg(1))
	case n.Op == ir.OpScatterND || n.Op == ir.OpScatterElements:
		return Scatter(i, n.Op, ir.ScatterOf(g, n), arg(0), arg(1), arg(2))
	case n.Op == ir.OpWhere:
		c, a, b := arg(0), arg(1), arg(2)
		if out.DType.IsFloat() {
			out.F = make([]float32, len(c.I))
			for k, v := range c.I {
				out.F[k] = pick(v != 0, a.F[k], b.F[k])
			}
		} else {
			out.I = make([]int64, len(c.I))
			for k, v := range c.I {
				out.I[k] = pick(v != 0, a.I[k], b.I[k])
			}
		}
		return out, nil
	case info.Elementwise && arg(0).DType.IsFloat64():
		return typedFloat64(n, arg), nil
	case info.Elementwise && arg(0).DType.IsFloat():
		return typedFloat(n, arg), nil
	case info.Elementwise:
		return typedInt(i, n, arg)
	}
	return Value{}, ir.Errorf(ir.CodeUnsupported, i, "dtype", "%v of %v has no reference yet", n.Op, arg(0).DType)
}

// typedFloat evaluates an elementwise op's float32 expression over float
// operands of dtype t (float16, bfloat16, or float32 giving bool), rounding
// each result to the node's dtype, or giving bool for a comparison.
func typedFloat(n *ir.Node, arg func(int) Value) Value {
	out := Value{DType: n.DType}
	a := arg(0).F
	f := make([]float32, len(a))
	if len(n.Args) == 2 {
		compile(n.Op.Info().Expr).runSlice(f, a, arg(1).F, 0, exact, nil)
	} else {
		compile(n.Op.Info().Expr).runSlice(f, a, nil, n.Scalar, exact, nil)
	}
	if n.DType == ir.Bool {
		out.I = make([]int64, len(f))
		for k, v := range f {
			out.I[k] = pick(v != 0, int64(1), 0)
		}
		return out
	}
	for k, v := range f {
		f[k] = n.DType.Round(v)
	}
	out.F = f
	return out
}

// typedInt evaluates an elementwise op's integer rule (ir.OpInfo.Int) and
// wraps each result to the node's dtype.
func typedInt(i int, n *ir.Node, arg func(int) Value) (Value, error) {
	info := n.Op.Info()
	out := Value{DType: n.DType, I: make([]int64, arg(0).Len())}
	t := arg(0).DType
	if info.Int == nil {
		return Value{}, ir.Errorf(ir.CodeInternal, i, "op", "%v has no integer rule for %v", n.Op, t)
	}
	a := arg(0).I
	var b []int64
	if len(n.Args) == 2 {
		b = arg(1).I
	}
	for k := range out.I {
		var y int64
		if b != nil {
			y = b[k]
		}
		v, ok := info.Int(t, a[k], y)
		if !ok {
			return Value{}, ir.Errorf(ir.CodeIntegerFault, i, "", "%v of %v: element %d divides %d by zero", n.Op, t, k, a[k])
		}
		if out.I[k] = n.DType.Wrap(v); !n.DType.InRange(out.I[k]) {
			return Value{}, beyondU64(i, n.Op, k)
		}
	}
	return out, nil
}

// beyondU64 is the refusal of a uint64 result of 2^63 or more, which has
// no int64 carrier: unsupported, naming the node, the op and the element.
func beyondU64(i int, op ir.Op, k int) error {
	return ir.Errorf(ir.CodeUnsupported, i, "", "%v of uint64: element %d is 2^63 or more, which gpucc's uint64 (carried in int64) does not hold", op, k)
}

// typedFloat64 evaluates an elementwise op over float64 operands by its
// row's float64 meaning (float64Row: IEEE binary64 arithmetic, ir.OpInfo.F64;
// exp, log and pow typedmath64.go's, the same bits on every host), giving
// float64 or, for a comparison, bool.
func typedFloat64(n *ir.Node, arg func(int) Value) Value {
	out := Value{DType: n.DType}
	a := arg(0).I
	var b []int64
	if len(n.Args) == 2 {
		b = arg(1).I
	}
	f := float64Row(n.Op)
	out.I = make([]int64, len(a))
	for k := range a {
		y := 0.0
		if b != nil {
			y = ir.F64Value(b[k])
		}
		v := f(ir.F64Value(a[k]), y)
		if n.DType == ir.Bool {
			out.I[k] = pick(v != 0, int64(1), 0)
		} else {
			out.I[k] = ir.F64Bits(v)
		}
	}
	return out
}

// typedGather is ONNX's Gather: each index wrapped once if negative, and
// one outside [-d, d) fails the run with invalid_input naming it.
func typedGather(i int, g *ir.Graph, n *ir.Node, data, idx Value) (Value, error) {
	ds := g.Nodes[n.Args[0]].Shape
	ax := ir.GatherAxis(n.Attrs, len(ds))
	wrapped, err := wrapIndices(i, n.Op, idx.I, ds[ax], ax)
	if err != nil {
		return Value{}, err
	}
	return take(n.DType, data, ir.GatherSources(ds, n.Shape, ax, wrapped)), nil
}

// typedGatherElements is ONNX's GatherElements: each output element is the
// data element at its own position with the axis coordinate its index
// (wrapped once if negative; one outside [-d, d) fails the run).
func typedGatherElements(i int, g *ir.Graph, n *ir.Node, data, idx Value) (Value, error) {
	ds := g.Nodes[n.Args[0]].Shape
	ax := ir.IndexAxis(n.Op, n.Attrs, len(ds))
	wrapped, err := wrapIndices(i, n.Op, idx.I, ds[ax], ax)
	if err != nil {
		return Value{}, err
	}
	return take(n.DType, data, ir.AlongAxisSources(ds, n.Shape, ax, wrapped)), nil
}

// wrapIndices returns the indices into an axis of d elements with each
// negative one counted from the end, or invalid_input naming the first one
// outside [-d, d) (its value and element): an indexed row never reads or
// writes out of bounds.
func wrapIndices(i int, op ir.Op, idx []int64, n, ax int) ([]int64, error) {
	d := int64(n)
	wrapped := make([]int64, len(idx))
	for k, v := range idx {
		if v < -d || v >= d {
			return nil, ir.Errorf(ir.CodeInvalidInput, i, "b", "%v: index %d (element %d) is outside [%d, %d) of axis %d", op, v, k, -d, d, ax)
		}
		if v < 0 {
			v += d
		}
		wrapped[k] = v
	}
	return wrapped, nil
}

// take returns a Value of dtype t whose element k is a's element src[k].
func take(t ir.DType, a Value, src []int) Value {
	out := Value{DType: t}
	if a.DType.IsFloat() {
		out.F = gather(a.F, src)
	} else {
		out.I = gather(a.I, src)
	}
	return out
}

// typedCast is ONNX's Cast of every element (ir.Convert).
func typedCast(i int, a Value, to ir.DType) (Value, error) {
	out := Value{DType: to}
	m := a.Len()
	if to.IsFloat() {
		out.F = make([]float32, m)
	} else {
		out.I = make([]int64, m)
	}
	for k := range m {
		var f float32
		var x int64
		if a.DType.IsFloat() {
			f = a.F[k]
		} else {
			x = a.I[k]
		}
		g, y, ok := ir.Convert(a.DType, to, f, x)
		if !ok && to == ir.U64 && (a.DType.IsInt() || a.DType == ir.Bool) {
			return Value{}, beyondU64(i, ir.OpCast, k)
		}
		if !ok {
			return Value{}, ir.Errorf(ir.CodeIntegerFault, i, "", "cast of %v to %v: element %d is NaN, infinite or outside %v's range", a.DType, to, k, to)
		}
		if to.IsFloat() {
			out.F[k] = g
		} else {
			out.I[k] = y
		}
	}
	return out, nil
}

// typedReduce reduces a typed value by op's rule: float dtypes by the
// reference tree of the row's Combine, each combination rounded to the
// dtype; float64 by the same tree of the row's F64; integer dtypes by the
// row's Combine's integer rule, wrapping, which is associative and
// commutative (wrapping add, max, min), so any order gives the tree's
// value (a uint64 result of 2^63 or more is refused).
func typedReduce(i int, op ir.Op, a Value, arg, keep ir.Shape) (Value, error) {
	red := ir.ReductionOf(arg, keep)
	out := Value{DType: a.DType}
	comb := op.Info().Combine
	if a.DType.IsFloat64() {
		return reduce64(op, a, red), nil
	}
	if a.DType.IsFloat() {
		p := 1
		for p < red.Leaves {
			p *= 2
		}
		x := compile(comb.Info().Expr)
		pad := math.Float32frombits(op.Info().Identity)
		leaves := make([]float32, p)
		out.F = make([]float32, red.Outputs)
		for o := range red.Outputs {
			base := ir.Offset(red.Kept, o)
			for r := range p {
				leaves[r] = pad
				if r < red.Leaves {
					leaves[r] = a.F[base+ir.Offset(red.Reduced, r)]
				}
			}
			for w := p / 2; w >= 1; w /= 2 { // contiguous pairs, level by level
				for k := range w {
					leaves[k] = a.DType.Round(x.run(leaves[2*k], leaves[2*k+1], exact))
				}
			}
			out.F[o] = leaves[0]
		}
		return out, nil
	}
	rule := comb.Info().Int
	out.I = make([]int64, red.Outputs)
	for o := range red.Outputs {
		base := ir.Offset(red.Kept, o)
		acc := a.I[base]
		for r := 1; r < red.Leaves; r++ {
			acc, _ = rule(a.DType, acc, a.I[base+ir.Offset(red.Reduced, r)])
			acc = a.DType.Wrap(acc)
		}
		if !a.DType.InRange(acc) {
			return Value{}, beyondU64(i, op, o)
		}
		out.I[o] = acc
	}
	return out, nil
}

// reduce64 is typedReduce of float64: each output's leaves padded with the
// row's identity to a power of two, combined by the row's F64 in
// contiguous pairs, level by level (float32's reference tree).
func reduce64(op ir.Op, a Value, red ir.Reduction) Value {
	out := Value{DType: a.DType, I: make([]int64, red.Outputs)}
	p := 1
	for p < red.Leaves {
		p *= 2
	}
	f := op.Info().F64
	pad := float64(math.Float32frombits(op.Info().Identity)) // -0 or -Inf: exact
	leaves := make([]float64, p)
	for o := range red.Outputs {
		base := ir.Offset(red.Kept, o)
		for r := range p {
			leaves[r] = pad
			if r < red.Leaves {
				leaves[r] = ir.F64Value(a.I[base+ir.Offset(red.Reduced, r)])
			}
		}
		for w := p / 2; w >= 1; w /= 2 {
			for k := range w {
				leaves[k] = f(leaves[2*k], leaves[2*k+1])
			}
		}
		out.I[o] = ir.F64Bits(leaves[0])
	}
	return out
}

// ViewSources returns, for a view node n of g (transpose, permute,
// broadcast, reshape), the element of its argument each output element is:
// the reference's index map, which a target may embed as a table.
func ViewSources(g *ir.Graph, n *ir.Node) []int { return viewSources(g, n) }

// viewSources is ViewSources.
func viewSources(g *ir.Graph, n *ir.Node) []int {
	from := g.Nodes[n.Args[0]].Shape
	switch n.Op {
	case ir.OpTranspose:
		perm := make([]int, len(from))
		for d := range perm {
			perm[d] = d
		}
		r := len(perm)
		perm[r-2], perm[r-1] = r-1, r-2
		return ir.PermuteSources(from, perm)
	case ir.OpPermute:
		return ir.PermuteSources(from, n.Op.Attr(n.Attrs, "perm"))
	}
	src := make([]int, n.Shape.Len())
	if n.Op == ir.OpReshape { // the same elements in the same order
		for k := range src {
			src[k] = k
		}
		return src
	}
	// broadcast: Broadcast's index walk.
	off := len(n.Shape) - len(from)
	for i := range src {
		at, rest, inner := 0, i, 1
		for d := len(n.Shape) - 1; d >= off; d-- {
			c := rest % n.Shape[d]
			rest /= n.Shape[d]
			if from[d-off] != 1 {
				at += c * inner
			}
			inner *= from[d-off]
		}
		src[i] = at
	}
	return src
}

func gather[T any](x []T, src []int) []T {
	out := make([]T, len(src))
	for k, j := range src {
		out[k] = x[j]
	}
	return out
}

func fill[T any](n int, v T) []T {
	out := make([]T, n)
	for k := range out {
		out[k] = v
	}
	return out
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

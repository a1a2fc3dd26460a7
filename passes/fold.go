package passes

import (
	"math"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// fold replaces every node whose arguments are all fulls by a full. Any
// subgraph that depends on no input is made of fulls, and the value of an
// op over uniform tensors is uniform, so a full is always the result. Each
// rule computes that one value with cpuref's own functions, so folding is
// bit-identical to evaluating at run time.
//
// A value that overflows to ±Inf or becomes NaN is not folded (a full
// may hold one only where the host allows non-finite values,
// ir.Limits.NonFinite, which the passes do not know): its node stays and
// computes the same value at run time, where later ops (positive, relu)
// may hide it again and an output that keeps it is reported non-finite.
func fold(st *State) error {
	g := st.Graph
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Op == ir.OpInput || n.Op == ir.OpFull {
			continue
		}
		vals := make([]float32, len(n.Args))
		constant := true
		for k, a := range n.Args {
			arg := &g.Nodes[a]
			constant = constant && arg.Op == ir.OpFull
			vals[k] = arg.Scalar
		}
		if !constant {
			continue
		}
		v, ok := foldValue(g, n, vals)
		if !ok || math.IsInf(float64(v), 0) || v != v {
			continue
		}
		*n = ir.Node{Op: ir.OpFull, Shape: n.Shape, Scalar: v}
	}
	return nil
}

// foldValue is the value of every element of n when argument k is a full of
// vals[k], or false when n's elements are not all one value (a padded
// convolution: its edges have taps in the padding).
func foldValue(g *ir.Graph, n *ir.Node, vals []float32) (float32, bool) {
	if x := n.Op.Info().Expr; x != nil {
		b := n.Scalar
		if len(vals) == 2 {
			b = vals[1]
		}
		return cpuref.EvalX(x, vals[0], b, false), true
	}
	if n.Op.IsReduction() { // each output reduces the same count of copies
		return cpuref.ReduceFull(n.Op, vals[0], g.Nodes[n.Args[0]].Shape.Len()/n.Shape.Len()), true
	}
	switch n.Op {
	case ir.OpTranspose, ir.OpPermute, ir.OpBroadcast, ir.OpReshape:
		return vals[0], true
	case ir.OpMatmul:
		a := g.Nodes[n.Args[0]].Shape
		k := a[len(a)-1]
		return cpuref.Matmul(repeat(vals[0], k), repeat(vals[1], k), 1, k, 1)[0], true
	case ir.OpConv2D:
		c := ir.Conv2DOf(g.Nodes[n.Args[0]].Shape, g.Nodes[n.Args[1]].Shape, n.Attrs)
		if c.PT != 0 || c.PL != 0 || c.PB != 0 || c.PR != 0 {
			return 0, false
		}
		// Unpadded, every output sums the same products in the same order.
		k := c.Taps()
		return cpuref.Matmul(repeat(vals[0], k), repeat(vals[1], k), 1, k, 1)[0], true
	case ir.OpConvTranspose2D:
		return 0, false // outputs sum different counts of products
	case ir.OpResize2D:
		return 0, false // linear weights differ per output
	case ir.OpMaxPool2D:
		// Undilated, every window holds a tap of x (the pads are below
		// the window), and the maximum of copies of v is v.
		if c := ir.Pool2DOf(g.Nodes[n.Args[0]].Shape, n.Attrs); c.DH != 1 || c.DW != 1 {
			return 0, false
		}
		return vals[0], true
	case ir.OpPad:
		// Every element is a copy of the full's, or the constant.
		if p := ir.PadOf(g.Nodes[n.Args[0]].Shape, n.Attrs); p.Mode == ir.PadConstant && math.Float32bits(p.Value) != math.Float32bits(vals[0]) {
			return 0, false
		}
		return vals[0], true
	case ir.OpMaxPool2DGrad:
		return 0, false // elements are selected by different counts of windows
	case ir.OpAttention:
		return 0, false // causal rows see different counts of keys
	case ir.OpLife:
		// In a uniform torus every cell sees 0 or 8 live neighbours whatever
		// the grid's size, so a 3×3 grid has the same answer.
		return cpuref.Life(repeat(vals[0], 9), 3, 3)[0], true
	}
	panic("fold: unexpected op " + n.Op.String())
}

func repeat(v float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

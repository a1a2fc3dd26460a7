package ir

// maxpool2d_grad: the gradient of maxpool2d with respect to its input,
// routed to each window's selected tap.

// The selected tap of a window, which the row's reference
// (cpuref.MaxPool2DGrad) and every kernel compute the same way: walking the window's taps inside x in (kh, kw) ascending order with
// the forward's accumulator (acc = maximum(acc, v) from -Inf), the
// selected tap is the first one, and then each tap at which acc's bits
// change. Because maximum returns one of its operands (-0 < +0, the first
// NaN), that is the first tap, in (kh, kw) order, whose bits are the
// window's maximum: ties go to the earliest tap, +0 beats -0, the first
// NaN wins, and a window of -Inf selects its first tap. A window with no
// tap inside x (dilation stepping over it) selects none. PyTorch also
// routes ties to the first maximum in scan order.

// maxpool2dGradShape is maxpool2d_grad's shape rule: arg0 is maxpool2d's
// x, with attributes maxpool2d accepts for it, and arg1 the gradient of
// its output, of the output's shape; the result has x's shape.
func maxpool2dGradShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	out, err := maxpool2dShape(node, op, args[:1], nil, attrs)
	if err != nil {
		return nil, err
	}
	if !args[1].Equal(out) {
		return nil, Errorf(CodeInvalidGraph, node, "b", "maxpool2d_grad of x %v needs the gradient of maxpool2d's output %v, got %v", args[0], out, args[1])
	}
	return args[0], nil
}

// maxpool2dGradCost is, per element of x, a window's taps for each window
// that may hold it: x elements × (KH·KW)².
func maxpool2dGradCost(_ []Shape, out Shape, attrs []int) int64 {
	k := OpMaxPool2D.Attr(attrs, "kernel_shape")
	if len(k) != 2 {
		return int64(out.Len())
	}
	t := SatMul(int64(k[0]), int64(k[1]))
	return SatMul(int64(out.Len()), SatMul(t, t))
}

// maxpoolGrad is maxpool2d's rule: the upstream gradient of each window
// goes to its selected tap (maxpool2d_grad over x and g, the same
// attributes).
func maxpoolGrad(d Diff, k int) (Val, bool) {
	return d.ApplyAttrs(OpMaxPool2DGrad, d.Attrs(), d.Arg(0), d.Grad()), true
}

// validatePoolGrad checks a pool_grad kernel: x and the gradient as its
// first two operands, attributes maxpool2d_grad's shape rule accepts for
// them, and a Shape that is x's.
func validatePoolGrad(k *Kernel) string {
	if len(k.Inputs) < 2 {
		return "pool_grad needs 2 operands"
	}
	if err := checkAttrs(-1, OpMaxPool2DGrad, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "pool_grad attributes: " + err.Msg
	}
	out, err := maxpool2dGradShape(-1, OpMaxPool2DGrad, []Shape{k.Inputs[0].Shape, k.Inputs[1].Shape}, nil, k.Attrs)
	if err != nil {
		return "pool_grad: " + err.Msg
	}
	if !out.Equal(k.Shape) {
		return "pool_grad of " + k.Inputs[0].Shape.String() + " gives " + out.String() + ", kernel shape is " + k.Shape.String()
	}
	return ""
}

// MaxPool2DGrad returns maxpool2d_grad of t (x [N,C,H,W]) and g (the
// gradient of maxpool2d's output) with maxpool2d's attributes given by
// name: g routed to each window's selected tap, of x's shape.
func (t Tensor) MaxPool2DGrad(g Tensor, attrs map[string][]int) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpMaxPool2DGrad, attrs)
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpMaxPool2DGrad, a, g)
}

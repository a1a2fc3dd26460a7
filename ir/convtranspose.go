package ir

// ConvTranspose2D is the geometry of a conv_transpose2d node (ONNX
// ConvTranspose, NCHW): input x [N,C,H,W], weight w [C,M/Group,KH,KW],
// output [N,M,OH,OW] with OH = SH·(H-1) + OPH + (KH-1)·DH + 1 - PT - PB
// (OW likewise), from strides [SH,SW], pads [PT,PL,PB,PR] (top, left,
// bottom, right: rows and columns cropped from the full output),
// dilations [DH,DW], group and output_padding [OPH,OPW] (rows and columns
// added at the bottom and right). Input channel c belongs to group
// c / CG and feeds output channels g·MG … g·MG+MG-1.
//
// Input element x[n,c,ih,iw] reaches output [n, g·MG+mm, ih·SH-PT+kh·DH,
// iw·SW-PL+kw·DW] through w[c,mm,kh,kw]: the transpose (adjoint) of
// conv2d with the same strides, pads, dilations and group, which is why
// conv2d's input gradient is this op (see the row's comment in op.go).
type ConvTranspose2D struct {
	N, C, H, W     int
	M, KH, KW      int
	Group, CG, MG  int // groups; input and output channels per group
	SH, SW, DH, DW int
	PT, PL, PB, PR int
	OPH, OPW       int
	OH, OW         int
}

// convTranspose2dAttrs are conv_transpose2d's attributes, ONNX
// ConvTranspose's (auto_pad and output_shape are resolved to pads and
// output_padding by the importer; kernel_shape is the weight's).
var convTranspose2dAttrs = []AttrSpec{
	{Name: "strides", Len: 2, Default: []int{1, 1}},
	{Name: "pads", Len: 4, Default: []int{0, 0, 0, 0}},
	{Name: "dilations", Len: 2, Default: []int{1, 1}},
	{Name: "group", Len: 1, Default: []int{1}},
	{Name: "output_padding", Len: 2, Default: []int{0, 0}},
}

// ConvTranspose2DOf returns the geometry of conv_transpose2d over x and w
// with attrs (a validated node's: the shape rule checked them).
func ConvTranspose2DOf(x, w Shape, attrs []int) ConvTranspose2D {
	op := OpConvTranspose2D
	s, p, d, g, o := op.Attr(attrs, "strides"), op.Attr(attrs, "pads"), op.Attr(attrs, "dilations"), op.Attr(attrs, "group"), op.Attr(attrs, "output_padding")
	c := ConvTranspose2D{N: x[0], C: x[1], H: x[2], W: x[3], KH: w[2], KW: w[3],
		Group: g[0], SH: s[0], SW: s[1], DH: d[0], DW: d[1], PT: p[0], PL: p[1], PB: p[2], PR: p[3], OPH: o[0], OPW: o[1]}
	c.CG, c.MG = c.C/c.Group, w[1]
	c.M = c.MG * c.Group
	c.OH = c.SH*(c.H-1) + c.OPH + (c.KH-1)*c.DH + 1 - c.PT - c.PB
	c.OW = c.SW*(c.W-1) + c.OPW + (c.KW-1)*c.DW + 1 - c.PL - c.PR
	return c
}

// Out returns the output shape [N,M,OH,OW].
func (c ConvTranspose2D) Out() Shape { return Shape{c.N, c.M, c.OH, c.OW} }

// Taps returns the (c, kh, kw) combinations each output visits: CG·KH·KW
// (of which only those landing on an input element add a product).
func (c ConvTranspose2D) Taps() int { return c.CG * c.KH * c.KW }

// convTranspose2dShape is conv_transpose2d's shape rule: x of rank 4, w of
// rank 4 with w[0] = x[1] and group dividing it; strides and dilations 1
// to 2^20, pads and output_padding 0 to 2^20; an output of at least 1×1.
func convTranspose2dShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	x, w := args[0], args[1]
	bad := func(field, format string, a ...any) (Shape, *Error) {
		return nil, Errorf(CodeInvalidGraph, node, field, format, a...)
	}
	if len(x) != 4 || len(w) != 4 {
		return bad("a", "conv_transpose2d needs x [N,C,H,W] and w [C,M/group,kH,kW], got %v and %v", x, w)
	}
	for _, name := range []string{"strides", "dilations"} {
		for _, v := range op.Attr(attrs, name) {
			if v < 1 || v > 1<<20 {
				return bad(name, "conv_transpose2d %s must be 1 to 2^20, got %v", name, op.Attr(attrs, name))
			}
		}
	}
	for _, name := range []string{"pads", "output_padding"} {
		for _, v := range op.Attr(attrs, name) {
			if v < 0 || v > 1<<20 {
				return bad(name, "conv_transpose2d %s must be 0 to 2^20, got %v", name, op.Attr(attrs, name))
			}
		}
	}
	g := op.Attr(attrs, "group")[0]
	if g < 1 || x[1]%g != 0 {
		return bad("group", "conv_transpose2d group %d must be ≥ 1 and divide the input's %d channels", g, x[1])
	}
	if w[0] != x[1] {
		return bad("b", "conv_transpose2d weight %v must have x's %d input channels first, got %d", w, x[1], w[0])
	}
	c := ConvTranspose2DOf(x, w, attrs)
	if c.OH < 1 || c.OW < 1 {
		return bad("pads", "conv_transpose2d output %dx%d is empty: pads %v crop more than the full output", c.OH, c.OW, op.Attr(attrs, "pads"))
	}
	return c.Out(), nil
}

// convTranspose2dCost is 2 operations per visited tap: out elements ×
// CG·KH·KW × 2 (an upper bound: with strides > 1 most taps add nothing).
func convTranspose2dCost(a []Shape, out Shape) int64 {
	if len(a) < 2 || len(a[0]) != 4 || len(a[1]) != 4 || a[1][1] < 1 {
		return int64(out.Len())
	}
	cg := int64(a[0][1]) / max(int64(out[1])/int64(a[1][1]), 1)
	return SatMul(SatMul(2, int64(out.Len())), cg*int64(a[1][2])*int64(a[1][3]))
}

// ConvTranspose2D returns conv_transpose2d of t (x [N,C,H,W]) and w
// ([C,M/group,kH,kW]) with the attributes given by name (strides, pads,
// dilations, group, output_padding; those left out take their defaults).
func (t Tensor) ConvTranspose2D(w Tensor, attrs map[string][]int) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpConvTranspose2D, attrs)
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpConvTranspose2D, a, w)
}

// validateConvTranspose checks a conv_transpose kernel: x and the weight
// as its first two operands, attributes that conv_transpose2d's shape rule
// accepts for them, and a Shape that is its output.
func validateConvTranspose(k *Kernel) string {
	if len(k.Inputs) < 2 {
		return "conv_transpose needs 2 operands"
	}
	x, w := k.Inputs[0].Shape, k.Inputs[1].Shape
	if err := checkAttrs(-1, OpConvTranspose2D, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "conv_transpose attributes: " + err.Msg
	}
	out, err := convTranspose2dShape(-1, OpConvTranspose2D, []Shape{x, w}, nil, k.Attrs)
	if err != nil {
		return "conv_transpose: " + err.Msg
	}
	if !out.Equal(k.Shape) {
		return "conv_transpose of " + x.String() + " and " + w.String() + " gives " + out.String() + ", kernel shape is " + k.Shape.String()
	}
	return ""
}

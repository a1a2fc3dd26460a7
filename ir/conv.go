package ir

// Conv2D is the geometry of a conv2d node: input x [N,C,H,W], weight w
// [M,C/Group,KH,KW], output [N,M,OH,OW], from its shapes and attributes
// (strides [SH,SW], pads [PT,PL,PB,PR] = top, left, bottom, right,
// dilations [DH,DW], group). Output channel m belongs to group
// m / (M/Group) and reads input channels g·CG … g·CG+CG-1.
type Conv2D struct {
	N, C, H, W     int
	M, KH, KW      int
	Group, CG, MG  int // groups; input and output channels per group
	SH, SW, DH, DW int
	PT, PL, PB, PR int
	OH, OW         int
}

// conv2dAttrs are conv2d's attributes, ONNX Conv's (auto_pad is resolved
// to pads by the importer).
var conv2dAttrs = []AttrSpec{
	{Name: "strides", Len: 2, Default: []int{1, 1}},
	{Name: "pads", Len: 4, Default: []int{0, 0, 0, 0}},
	{Name: "dilations", Len: 2, Default: []int{1, 1}},
	{Name: "group", Len: 1, Default: []int{1}},
}

// Conv2DOf returns the geometry of conv2d over x and w with attrs (a
// validated node's: the shape rule checked them).
func Conv2DOf(x, w Shape, attrs []int) Conv2D {
	s, p, d, g := OpConv2D.Attr(attrs, "strides"), OpConv2D.Attr(attrs, "pads"), OpConv2D.Attr(attrs, "dilations"), OpConv2D.Attr(attrs, "group")
	c := Conv2D{N: x[0], C: x[1], H: x[2], W: x[3], M: w[0], KH: w[2], KW: w[3],
		Group: g[0], SH: s[0], SW: s[1], DH: d[0], DW: d[1], PT: p[0], PL: p[1], PB: p[2], PR: p[3]}
	c.CG, c.MG = c.C/c.Group, c.M/c.Group
	c.OH = (c.H+c.PT+c.PB-(c.KH-1)*c.DH-1)/c.SH + 1
	c.OW = (c.W+c.PL+c.PR-(c.KW-1)*c.DW-1)/c.SW + 1
	return c
}

// Out returns the output shape [N,M,OH,OW].
func (c Conv2D) Out() Shape { return Shape{c.N, c.M, c.OH, c.OW} }

// Taps returns the products summed into each output: CG·KH·KW.
func (c Conv2D) Taps() int { return c.CG * c.KH * c.KW }

// conv2dShape is conv2d's shape rule: x of rank 4, w of rank 4 with
// w[1]·group = x[1] and group dividing w[0]; strides and dilations ≥ 1,
// pads ≥ 0; the dilated kernel fits the padded input.
func conv2dShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	x, w := args[0], args[1]
	bad := func(field, format string, a ...any) (Shape, *Error) {
		return nil, Errorf(CodeInvalidGraph, node, field, format, a...)
	}
	if len(x) != 4 || len(w) != 4 {
		return bad("a", "conv2d needs x [N,C,H,W] and w [M,C/group,kH,kW], got %v and %v", x, w)
	}
	for _, name := range []string{"strides", "dilations"} {
		for _, v := range op.Attr(attrs, name) {
			if v < 1 {
				return bad(name, "conv2d %s must be ≥ 1, got %v", name, op.Attr(attrs, name))
			}
		}
	}
	for _, v := range op.Attr(attrs, "pads") {
		if v < 0 || v > 1<<20 {
			return bad("pads", "conv2d pads must be 0 to 2^20, got %v", op.Attr(attrs, "pads"))
		}
	}
	g := op.Attr(attrs, "group")[0]
	if g < 1 || x[1]%g != 0 || w[0]%g != 0 {
		return bad("group", "conv2d group %d must be ≥ 1 and divide the input's %d and the output's %d channels", g, x[1], w[0])
	}
	if w[1]*g != x[1] {
		return bad("b", "conv2d weight %v has %d input channels per group; x %v with group %d has %d", w, w[1], x, g, x[1]/g)
	}
	c := Conv2DOf(x, w, attrs)
	if (c.KH-1)*c.DH+1 > c.H+c.PT+c.PB || (c.KW-1)*c.DW+1 > c.W+c.PL+c.PR {
		return bad("b", "conv2d kernel %dx%d dilated by %v is larger than the padded input %dx%d", c.KH, c.KW, op.Attr(attrs, "dilations"), c.H+c.PT+c.PB, c.W+c.PL+c.PR)
	}
	return c.Out(), nil
}

// conv2dCost is 2 operations per product: out elements × CG·KH·KW × 2.
func conv2dCost(a []Shape, out Shape) int64 {
	if len(a) < 2 || len(a[1]) != 4 {
		return int64(out.Len())
	}
	return SatMul(SatMul(2, int64(out.Len())), int64(a[1][1])*int64(a[1][2])*int64(a[1][3]))
}

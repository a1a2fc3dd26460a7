package ir

// Pool2D is the geometry of a maxpool2d node: x [N,C,H,W], a KH×KW
// window (kernel_shape) moved by strides [SH,SW] over x padded by pads
// [PT,PL,PB,PR] (top, left, bottom, right), its taps dilations [DH,DW]
// apart; output [N,C,OH,OW].
type Pool2D struct {
	N, C, H, W     int
	KH, KW         int
	SH, SW, DH, DW int
	PT, PL, PB, PR int
	OH, OW         int
}

// maxpool2dAttrs are maxpool2d's attributes, ONNX MaxPool's (auto_pad
// and ceil_mode are resolved to pads by the importer).
var maxpool2dAttrs = []AttrSpec{
	{Name: "kernel_shape", Len: 2},
	{Name: "strides", Len: 2, Default: []int{1, 1}},
	{Name: "pads", Len: 4, Default: []int{0, 0, 0, 0}},
	{Name: "dilations", Len: 2, Default: []int{1, 1}},
}

// Pool2DOf returns the geometry of maxpool2d over x with attrs (a
// validated node's).
func Pool2DOf(x Shape, attrs []int) Pool2D {
	k, s, p, d := OpMaxPool2D.Attr(attrs, "kernel_shape"), OpMaxPool2D.Attr(attrs, "strides"), OpMaxPool2D.Attr(attrs, "pads"), OpMaxPool2D.Attr(attrs, "dilations")
	c := Pool2D{N: x[0], C: x[1], H: x[2], W: x[3], KH: k[0], KW: k[1],
		SH: s[0], SW: s[1], DH: d[0], DW: d[1], PT: p[0], PL: p[1], PB: p[2], PR: p[3]}
	c.OH = (c.H+c.PT+c.PB-(c.KH-1)*c.DH-1)/c.SH + 1
	c.OW = (c.W+c.PL+c.PR-(c.KW-1)*c.DW-1)/c.SW + 1
	return c
}

// Out returns the output shape [N,C,OH,OW].
func (c Pool2D) Out() Shape { return Shape{c.N, c.C, c.OH, c.OW} }

// maxpool2dShape is maxpool2d's shape rule: x of rank 4, a window of at
// least 1×1, strides and dilations ≥ 1, and pads ≥ 0 and below the
// dilated window on each side (ONNX's rule), so that the window always
// overlaps the input.
func maxpool2dShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	x := args[0]
	bad := func(field, format string, a ...any) (Shape, *Error) {
		return nil, Errorf(CodeInvalidGraph, node, field, format, a...)
	}
	if len(x) != 4 {
		return bad("a", "maxpool2d needs x [N,C,H,W], got %v", x)
	}
	for _, name := range []string{"kernel_shape", "strides", "dilations"} {
		for _, v := range op.Attr(attrs, name) {
			if v < 1 {
				return bad(name, "maxpool2d %s must be ≥ 1, got %v", name, op.Attr(attrs, name))
			}
		}
	}
	k, d, p := op.Attr(attrs, "kernel_shape"), op.Attr(attrs, "dilations"), op.Attr(attrs, "pads")
	ext := []int{(k[0]-1)*d[0] + 1, (k[1]-1)*d[1] + 1, (k[0]-1)*d[0] + 1, (k[1]-1)*d[1] + 1}
	for j, v := range p {
		if v < 0 || v >= ext[j] {
			return bad("pads", "maxpool2d pads %v: each must be ≥ 0 and below the dilated window %dx%d", p, ext[0], ext[1])
		}
	}
	c := Pool2DOf(x, attrs)
	if ext[0] > c.H+c.PT+c.PB || ext[1] > c.W+c.PL+c.PR {
		return bad("kernel_shape", "maxpool2d window %v dilated by %v is larger than the padded input %dx%d", k, d, c.H+c.PT+c.PB, c.W+c.PL+c.PR)
	}
	return c.Out(), nil
}

// maxpool2dCost is one comparison per tap: out elements × KH·KW.
func maxpool2dCost(_ []Shape, out Shape, attrs []int) int64 {
	k := OpMaxPool2D.Attr(attrs, "kernel_shape")
	if len(k) != 2 {
		return int64(out.Len())
	}
	return SatMul(int64(out.Len()), SatMul(int64(k[0]), int64(k[1])))
}

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

// conv2dGrad is conv2d's rule: argument 0 (x) gets conv2dInputGrad,
// argument 1 (w) conv2dWeightGrad.
func conv2dGrad(d Diff, k int) (Val, bool) {
	x, w := d.Arg(0), d.Arg(1)
	c := Conv2DOf(d.Shape(x), d.Shape(w), d.Attrs())
	if k == 0 {
		return conv2dInputGrad(d, c, w, d.Grad()), true
	}
	return conv2dWeightGrad(d, c, x, d.Grad()), true
}

// rest returns the rows (columns) of the padded input past the last
// window's last tap: (H + pT + pB - (kH-1)·dH - 1) mod sH, which the
// forward never reads.
func (c Conv2D) rest() (rh, rw int) {
	rh = c.H + c.PT + c.PB - (c.KH-1)*c.DH - 1 - (c.OH-1)*c.SH
	rw = c.W + c.PL + c.PR - (c.KW-1)*c.DW - 1 - (c.OW-1)*c.SW
	return rh, rw
}

// conv2dInputGrad is ∂loss/∂x of a conv2d node: the transposed
// convolution of g with conv2d's own weight and attributes,
//
//	dx[n,c,h,w] = Σ over (m of c's group, kh, kw) of g[n,m,oh,ow] · w[m,c',kh,kw]
//
// for the taps where h = oh·sH - pT + kh·dH (and w likewise) — which is
// conv_transpose2d (its row's comment), output_padding adding back the
// rows past the last window so that dx has x's shape. Each element is one
// accumulator from +0 over (m, kh, kw) ascending.
func conv2dInputGrad(d Diff, c Conv2D, w, g Val) Val {
	rh, rw := c.rest()
	attrs, err := packAttrs(-1, OpConvTranspose2D, map[string][]int{"strides": {c.SH, c.SW}, "dilations": {c.DH, c.DW},
		"pads": {c.PT, c.PL, c.PB, c.PR}, "group": {c.Group}, "output_padding": {rh, rw}})
	if err != nil {
		panic("ir: conv2d's input gradient attributes: " + err.Error()) // every name is conv_transpose2d's
	}
	return d.ApplyAttrs(OpConvTranspose2D, attrs, g, w)
}

// conv2dWeightGrad is ∂loss/∂w of a conv2d node (x [N,C,H,W], w
// [M,C/G,KH,KW], G groups) with upstream gradient g [N,M,OH,OW]:
//
//	dw[m,c,kh,kw] = Σ over (n, oh, ow) of g[n,m,oh,ow] · x[n, (m/MG)·CG+c, oh·SH-PT+kh·DH, ow·SW-PL+kw·DW]
//
// which is itself a conv2d, with the batch as the reduced channels and the
// roles of stride and dilation swapped:
//
//	x' = reshape(permute(reshape(x, [N,G,CG,H,W]), [2,1,0,3,4]), [CG, G·N, H, W])
//	g' = reshape(permute(reshape(g, [N,G,MG,OH,OW]), [1,2,0,3,4]), [M, N, OH, OW])
//	r  = conv2d(x', g', strides [DH,DW], dilations [SH,SW], pads [PT,PL,PB',PR'], group G)  [CG,M,KH',KW']
//	dw = permute(r, [1,0,2,3])
//
// so each element is one accumulator from +0 over (n, oh, ow) ascending,
// with cpuref's rounding (the products are x·g, as PyTorch's are). The
// bottom and right pads shrink by the rows the forward's last window does
// not reach (stride remainders), so that KH' = KH; where even no padding
// leaves rows of x beyond the last window (KH' > KH), r is cut to its
// first KH×KW taps by cropTaps. A group-1 conv skips the 5-D reshapes.
func conv2dWeightGrad(d Diff, c Conv2D, x, g Val) Val {
	if c.Group == 1 {
		x = permute(d, x, 1, 0, 2, 3)
		g = permute(d, g, 1, 0, 2, 3)
	} else {
		x = reshape(d, permute(d, reshape(d, x, Shape{c.N, c.Group, c.CG, c.H, c.W}), 2, 1, 0, 3, 4), Shape{c.CG, c.Group * c.N, c.H, c.W})
		g = reshape(d, permute(d, reshape(d, g, Shape{c.N, c.Group, c.MG, c.OH, c.OW}), 1, 2, 0, 3, 4), Shape{c.M, c.N, c.OH, c.OW})
	}
	// The rows past the last window come off the bottom (right) pad.
	rh, rw := c.rest()
	pb, pr := max(c.PB-rh, 0), max(c.PR-rw, 0)
	attrs, err := packAttrs(-1, OpConv2D, map[string][]int{"strides": {c.DH, c.DW}, "dilations": {c.SH, c.SW},
		"pads": {c.PT, c.PL, pb, pr}, "group": {c.Group}})
	if err != nil {
		panic("ir: conv2d's weight gradient attributes: " + err.Error()) // all in range by the forward's
	}
	r := d.ApplyAttrs(OpConv2D, attrs, x, g)
	if s := d.Shape(r); s[2] != c.KH || s[3] != c.KW {
		r = cropTaps(d, r, c.KH, c.KW)
	}
	return permute(d, r, 1, 0, 2, 3)
}

// cropTaps returns the first kh×kw of the last two axes of v ([A,B,H',W'],
// H' ≥ kh, W' ≥ kw) as a conv2d of v (as [A·B,1,H',W']) with the one-hot
// kernel e [1,1,H'-kh+1,W'-kw+1] (1 at [0,0], +0 elsewhere), itself a
// conv2d of a 1 padded with zeros. Each output is +0 + v·1 + v'·0 + …:
// v exactly when v is finite and not -0 — which holds for v a conv2d's
// output (an accumulator from +0 is never -0) that is finite (a step's
// non-finite parameters are refused anyway).
func cropTaps(d Diff, v Val, kh, kw int) Val {
	s := d.Shape(v)
	eh, ew := s[2]-kh+1, s[3]-kw+1
	one := d.Full(Shape{1, 1, 1, 1}, 1)
	pads, err := packAttrs(-1, OpConv2D, map[string][]int{"pads": {0, 0, eh - 1, ew - 1}})
	if err != nil {
		panic("ir: cropTaps: " + err.Error())
	}
	e := d.ApplyAttrs(OpConv2D, pads, one, one)
	none, _ := packAttrs(-1, OpConv2D, nil)
	out := d.ApplyAttrs(OpConv2D, none, reshape(d, v, Shape{s[0] * s[1], 1, s[2], s[3]}), e)
	return reshape(d, out, Shape{s[0], s[1], kh, kw})
}

// permute returns v with its axes in the order perm (a permute node).
func permute(d Diff, v Val, perm ...int) Val {
	return d.ApplyAttrs(OpPermute, append([]int{len(perm)}, perm...), v)
}

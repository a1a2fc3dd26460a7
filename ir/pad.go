package ir

import "math"

// pad: ONNX Pad, a copy of x into a larger tensor whose border is a
// constant or taken from x by reflection, by its edge or by wrapping.

// The pad modes (the mode attribute), ONNX Pad's.
const (
	PadConstant = 0 // the border is the constant value_bits
	PadReflect  = 1 // x mirrored about its first and last element (numpy's "reflect": the edge is not repeated)
	PadEdge     = 2 // the nearest element of x
	PadWrap     = 3 // x repeated (numpy's "wrap")
)

// MaxPadRank is the largest rank pad takes.
const MaxPadRank = 4

// padAttrs are pad's attributes: pads, the count of elements added before
// each axis and then after each axis (ONNX's order: 2·rank values; a
// negative one removes that many elements instead, a crop, as ONNX's Pad
// does, leaving at least one along each axis), the mode, and the constant of mode PadConstant as the bits of a
// float32 in two 16-bit halves, high first (any float32, -0 and NaN
// included: one attribute value holds at most 2^31-1).
var padAttrs = []AttrSpec{
	{Name: "pads", Len: 0},
	{Name: "mode", Len: 1, Default: []int{PadConstant}},
	{Name: "value_bits", Len: 2, Default: []int{0, 0}},
}

// Pad is the geometry of a pad node: output element o reads, along each
// axis d, element Src(d, o[d]) of x, or is the constant where that is -1.
type Pad struct {
	In, Out Shape
	Begin   []int // elements added before each axis
	Mode    int
	Value   float32 // the constant (mode PadConstant)
}

// PadOf returns the geometry of pad over x with attrs (a validated
// node's).
func PadOf(x Shape, attrs []int) Pad {
	pads, mode, vb := OpPad.Attr(attrs, "pads"), OpPad.Attr(attrs, "mode")[0], OpPad.Attr(attrs, "value_bits")
	p := Pad{In: x, Out: make(Shape, len(x)), Begin: pads[:len(x)], Mode: mode, Value: math.Float32frombits(uint32(vb[0])<<16 | uint32(vb[1]))}
	for d := range x {
		p.Out[d] = x[d] + pads[d] + pads[len(x)+d]
	}
	return p
}

// Src returns the element of x along axis d that output index o reads,
// or -1 (the constant, mode PadConstant only). A crop shifts the index
// into x; the other modes' borders mirror, clamp or wrap about x's own
// ends, not the cropped ones. Reflect and wrap repeat
// with periods 2(n-1) and n, as numpy's pad does for borders wider than
// x; an axis of one element reads it everywhere.
func (p Pad) Src(d, o int) int {
	n, i := p.In[d], o-p.Begin[d]
	switch p.Mode {
	case PadConstant:
		if i < 0 || i >= n {
			return -1
		}
		return i
	case PadEdge:
		return min(max(i, 0), n-1)
	case PadWrap:
		return ((i % n) + n) % n
	}
	if n == 1 { // PadReflect
		return 0
	}
	per := 2 * (n - 1)
	j := ((i % per) + per) % per
	if j >= n {
		j = per - j
	}
	return j
}

// Sources returns, per output element (row-major over Out), the element
// of x (row-major over In) it copies, or -1 for the constant.
func (p Pad) Sources() []int {
	r := len(p.Out)
	src := make([][]int, r) // per axis, the source index of each output index
	stride := make([]int, r)
	s := 1
	for d := r - 1; d >= 0; d-- {
		src[d] = make([]int, p.Out[d])
		for o := range src[d] {
			src[d][o] = p.Src(d, o)
		}
		stride[d], s = s, s*p.In[d]
	}
	out := make([]int, p.Out.Len())
	for i := range out {
		off, rem := 0, i
		for d := r - 1; d >= 0; d-- {
			j := src[d][rem%p.Out[d]]
			rem /= p.Out[d]
			if j < 0 {
				off = -1
				break
			}
			off += j * stride[d]
		}
		out[i] = off
	}
	return out
}

// padShape is pad's shape rule: x of rank 1 to MaxPadRank, 2·rank pads
// (a negative one crops) leaving each axis at least one element, a mode
// of the four; the result is x widened (or cropped) by the pads.
func padShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	x := args[0]
	bad := func(field, format string, a ...any) (Shape, *Error) {
		return nil, Errorf(CodeInvalidGraph, node, field, format, a...)
	}
	if len(x) < 1 || len(x) > MaxPadRank {
		return bad("a", "pad takes x of rank 1 to %d, got %v", MaxPadRank, x)
	}
	pads := op.Attr(attrs, "pads")
	if len(pads) != 2*len(x) {
		return bad("pads", "pad of x %v needs %d pads (before each axis, then after each), got %v", x, 2*len(x), pads)
	}
	for d, n := range x {
		if b, e := pads[d], pads[len(x)+d]; -b >= n || -e >= n || n+b+e < 1 {
			return bad("pads", "pads %v crop axis %d of x %v to nothing (or past its other end)", pads, d, x)
		}
	}
	if m := op.Attr(attrs, "mode")[0]; m < PadConstant || m > PadWrap {
		return bad("mode", "pad mode must be 0 (constant), 1 (reflect), 2 (edge) or 3 (wrap), got %d", m)
	}
	for _, h := range op.Attr(attrs, "value_bits") {
		if h < 0 || h > 0xffff {
			return bad("value_bits", "pad value_bits must be two 16-bit halves, got %v", op.Attr(attrs, "value_bits"))
		}
	}
	return PadOf(x, attrs).Out, nil
}

// validatePad checks a pad kernel: x as its operand, attributes that
// pad's shape rule accepts for it, and a Shape that is its output.
func validatePad(k *Kernel) string {
	if len(k.Inputs) < 1 {
		return "pad needs an operand"
	}
	if err := checkAttrs(-1, OpPad, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "pad attributes: " + err.Msg
	}
	out, err := padShape(-1, OpPad, []Shape{k.Inputs[0].Shape}, nil, k.Attrs)
	if err != nil {
		return "pad: " + err.Msg
	}
	if !out.Equal(k.Shape) {
		return "pad of " + k.Inputs[0].Shape.String() + " gives " + out.String() + ", kernel shape is " + k.Shape.String()
	}
	return ""
}

// Pad returns pad of t: pads elements before each axis, then after each
// (2·rank values, ONNX's order), filled by mode (PadConstant with value,
// PadReflect, PadEdge or PadWrap).
func (t Tensor) Pad(pads []int, mode int, value float32) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpPad, PadAttrs(pads, mode, value))
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpPad, a)
}

// PadAttrs returns pad's attributes by name for pads, mode and the
// constant value.
func PadAttrs(pads []int, mode int, value float32) map[string][]int {
	b := math.Float32bits(value)
	return map[string][]int{"pads": pads, "mode": {mode}, "value_bits": {int(b >> 16), int(b & 0xffff)}}
}

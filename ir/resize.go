package ir

import "math"

// Resize2D is the geometry of a resize2d node (ONNX Resize over the last
// two axes of x [N,C,H,W], nearest or linear): output [N,C,OH,OW] and, per
// axis, the source taps of each output row (column) and their weights,
// derived from the attributes by ResizeTaps. Nearest reads one tap (I0);
// linear two (I0, I1) with weights W0, W1.
type Resize2D struct {
	N, C, H, W int
	OH, OW     int
	Linear     bool
	Rows, Cols ResizeAxis
}

// ResizeAxis is one axis's taps: for output index o, source indices
// I0[o], I1[o] (edge-clamped into the input) and float32 weights W0[o],
// W1[o] (linear only: nil for nearest, which reads I0).
type ResizeAxis struct {
	I0, I1 []int
	W0, W1 []float32
}

// MaxResize bounds each output axis of resize2d: the kernels embed the
// taps of each axis as a table in their source, four values an output
// row or column.
const MaxResize = 1 << 14

// The resize2d attribute values.
const (
	ResizeNearest = 0
	ResizeLinear  = 1

	ResizeHalfPixel        = 0 // (o + 0.5)/scale - 0.5
	ResizeAsymmetric       = 1 // o/scale
	ResizeAlignCorners     = 2 // o·(in-1)/(scale·in - 1), 0 when scale·in = 1
	ResizePytorchHalfPixel = 3 // as half_pixel, but -0.5 when the output has one element
	ResizeTFHalfPixelForNN = 4 // (o + 0.5)/scale

	ResizeRoundPreferFloor = 0
	ResizeRoundPreferCeil  = 1
	ResizeFloor            = 2
	ResizeCeil             = 3
)

// resize2dAttrs are resize2d's attributes: the output's spatial size, the
// mode (0 nearest, 1 linear), ONNX's coordinate_transformation_mode
// (0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel,
// 4 tf_half_pixel_for_nn), nearest_mode (0 round_prefer_floor,
// 1 round_prefer_ceil, 2 floor, 3 ceil) and the scales as float32 bits
// (positive and finite; 0 for out/in, what ONNX's sizes input means).
var resize2dAttrs = []AttrSpec{
	{Name: "sizes", Len: 2},
	{Name: "mode", Len: 1, Default: []int{ResizeNearest}},
	{Name: "coordinate_mode", Len: 1, Default: []int{ResizeHalfPixel}},
	{Name: "nearest_mode", Len: 1, Default: []int{ResizeRoundPreferFloor}},
	{Name: "scale_bits", Len: 2, Default: []int{0, 0}},
}

// Resize2DOf returns the geometry of resize2d over x with attrs (a
// validated node's).
func Resize2DOf(x Shape, attrs []int) Resize2D {
	op := OpResize2D
	s, mode, coord, near, sb := op.Attr(attrs, "sizes"), op.Attr(attrs, "mode")[0], op.Attr(attrs, "coordinate_mode")[0], op.Attr(attrs, "nearest_mode")[0], op.Attr(attrs, "scale_bits")
	r := Resize2D{N: x[0], C: x[1], H: x[2], W: x[3], OH: s[0], OW: s[1], Linear: mode == ResizeLinear}
	r.Rows = ResizeTaps(r.H, r.OH, uint32(sb[0]), mode, coord, near)
	r.Cols = ResizeTaps(r.W, r.OW, uint32(sb[1]), mode, coord, near)
	return r
}

// Out returns the output shape [N,C,OH,OW].
func (r Resize2D) Out() Shape { return Shape{r.N, r.C, r.OH, r.OW} }

// Linear reports whether the axis interpolates between two taps (else
// it reads I0).
func (a ResizeAxis) Linear() bool { return a.W0 != nil }

// ResizeTaps computes one axis's taps as ONNX 1.12's reference does, in
// float64 with every operation rounded on its own (so no platform fuses
// them): scale is the float32 scaleBits, or out/in when they are 0; the
// source coordinate x of output o is the coordinate mode's; the taps are
// floor(x) and floor(x)+1, or x-1 and x with weights 0 and 1 when x is an
// integer, clamped into [0, in) (the reference's edge padding); linear
// weights are float32(1 - ratio) and float32(ratio), ratio = x - floor(x)
// (1 for an integer x); nearest keeps the one tap its mode picks (the
// second for an integer x; round_prefer_floor the second when ratio >
// 0.5, round_prefer_ceil when ≥ 0.5, floor the first, ceil the second).
// An axis of one input element is a copy (no weights, W0 and W1 nil),
// linear or not: (1-ratio)·v + ratio·v is v but for rounding, and a
// compiler that sees both taps read the same element may factor the two
// products (lavapipe's NIR does). Every backend's kernel and cpuref read
// these tables, so they agree.
func ResizeTaps(in, out int, scaleBits uint32, mode, coord, near int) ResizeAxis {
	scale := float64(out) / float64(in)
	if scaleBits != 0 {
		scale = float64(math.Float32frombits(scaleBits))
	}
	width := float64(scale * float64(in)) // the reference's output_width, a float
	a := ResizeAxis{I0: make([]int, out), I1: make([]int, out)}
	if in == 1 { // every tap is the one element: a copy, linear or not
		mode = ResizeNearest
	}
	if mode == ResizeLinear {
		a.W0, a.W1 = make([]float32, out), make([]float32, out)
	}
	clamp := func(i int) int { return min(max(i, 0), in-1) }
	for o := range out {
		x := float64(o)
		var src float64
		switch coord {
		case ResizeAsymmetric:
			src = x / scale
		case ResizeAlignCorners:
			if width == 1 {
				src = 0
			} else {
				src = float64(x*float64(in-1)) / float64(width-1)
			}
		case ResizePytorchHalfPixel:
			if width == 1 {
				src = -0.5
			} else {
				src = float64(float64(x+0.5)/scale) - 0.5
			}
		case ResizeTFHalfPixelForNN:
			src = float64(x+0.5) / scale
		default: // half_pixel
			src = float64(float64(x+0.5)/scale) - 0.5
		}
		lo := math.Floor(src)
		ratio := src - lo
		i0 := int(lo)
		if ratio == 0 { // an integer coordinate: taps x-1, x, coefficients 0, 1
			ratio, i0 = 1, i0-1
		}
		first := false // nearest: which tap
		switch near {
		case ResizeRoundPreferFloor:
			first = ratio <= 0.5
		case ResizeRoundPreferCeil:
			first = ratio < 0.5
		case ResizeFloor:
			first = ratio != 1
		}
		a.I0[o], a.I1[o] = clamp(i0), clamp(i0+1)
		if mode == ResizeLinear {
			a.W0[o], a.W1[o] = float32(1-ratio), float32(ratio)
		} else if !first {
			a.I0[o] = a.I1[o]
		}
	}
	return a
}

// resize2dShape is resize2d's shape rule: x of rank 4; sizes 1 to
// MaxResize (the kernels embed a table per axis);
// mode, coordinate_mode and nearest_mode among their values; each scale
// 0 or the bits of a positive finite float32.
func resize2dShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	x := args[0]
	bad := func(field, format string, a ...any) (Shape, *Error) {
		return nil, Errorf(CodeInvalidGraph, node, field, format, a...)
	}
	if len(x) != 4 {
		return bad("a", "resize2d needs x [N,C,H,W], got %v", x)
	}
	for _, v := range op.Attr(attrs, "sizes") {
		if v < 1 || v > MaxResize {
			return bad("sizes", "resize2d sizes must be 1 to %d, got %v", MaxResize, op.Attr(attrs, "sizes"))
		}
	}
	if m := op.Attr(attrs, "mode")[0]; m != ResizeNearest && m != ResizeLinear {
		return bad("mode", "resize2d mode must be 0 (nearest) or 1 (linear), got %d", m)
	}
	if m := op.Attr(attrs, "coordinate_mode")[0]; m < 0 || m > ResizeTFHalfPixelForNN {
		return bad("coordinate_mode", "resize2d coordinate_mode must be 0 to 4, got %d", m)
	}
	if m := op.Attr(attrs, "nearest_mode")[0]; m < 0 || m > ResizeCeil {
		return bad("nearest_mode", "resize2d nearest_mode must be 0 to 3, got %d", m)
	}
	for _, b := range op.Attr(attrs, "scale_bits") {
		if b < 0 || b >= 0x7f800000 || b != 0 && b < 0x00800000 {
			return bad("scale_bits", "resize2d scale_bits %v: each must be 0 or the bits of a positive, normal, finite float32", op.Attr(attrs, "scale_bits"))
		}
	}
	s := op.Attr(attrs, "sizes")
	return Shape{x[0], x[1], s[0], s[1]}, nil
}

// resize2dCost is, per output, one load (nearest) or six operations
// (linear: four products and three adds, rounded).
func resize2dCost(_ []Shape, out Shape, attrs []int) int64 {
	if m := OpResize2D.Attr(attrs, "mode"); len(m) == 1 && m[0] == ResizeLinear {
		return SatMul(7, int64(out.Len()))
	}
	return int64(out.Len())
}

// Resize2D returns resize2d of t (x [N,C,H,W]) with the attributes given
// by name (sizes, required; mode, coordinate_mode, nearest_mode,
// scale_bits).
func (t Tensor) Resize2D(attrs map[string][]int) Tensor {
	if t.b == nil {
		return Tensor{}
	}
	a, err := packAttrs(len(t.b.g.Nodes), OpResize2D, attrs)
	if err != nil {
		if t.b.err == nil {
			t.b.err = err
		}
		return Tensor{t.b, -1}
	}
	return t.ApplyAttrs(OpResize2D, a)
}

// validateResize checks a resize kernel: x as its first operand,
// attributes that resize2d's shape rule accepts, and a Shape that is its
// output.
func validateResize(k *Kernel) string {
	if len(k.Inputs) < 1 {
		return "resize needs an operand"
	}
	x := k.Inputs[0].Shape
	if err := checkAttrs(-1, OpResize2D, k.Attrs, Limits{MaxAttrValues: len(k.Attrs)}); err != nil {
		return "resize attributes: " + err.Msg
	}
	out, err := resize2dShape(-1, OpResize2D, []Shape{x}, nil, k.Attrs)
	if err != nil {
		return "resize: " + err.Msg
	}
	if !out.Equal(k.Shape) {
		return "resize of " + x.String() + " gives " + out.String() + ", kernel shape is " + k.Shape.String()
	}
	return ""
}

package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// padModes maps Pad's mode attribute onto pad's.
var padModes = map[string]int{"constant": ir.PadConstant, "reflect": ir.PadReflect, "edge": ir.PadEdge, "wrap": ir.PadWrap}

// padOp imports Pad: every mode (constant, reflect, edge, wrap), x of
// rank 1 to 4, pads and the constant known at import (attributes before
// opset 11, inputs from it on), axes (opset 18) naming the axes that pads
// cover. A run-time x becomes a pad node; a constant x, of any type, is
// padded at import (data movement: ir.Pad.Sources, the kernels' map).
// Reflect and wrap borders wider than the axis repeat, as numpy's pad
// (ONNX's reference) does. A negative pad crops, as ONNX says. Refused by
// name: a crop in a mode other than constant, a crop to nothing, and a constant that is not one value of x's
// type (one finite float32 for a run-time x).
func padOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	folded := v.c != nil && !v.set // padded at import
	s := v.shape()
	r := len(s)
	if r < 1 || r > ir.MaxPadRank {
		return nil, c.refuse("input of rank %d (shape %v); gpucc pads ranks 1 to %d", r, s, ir.MaxPadRank)
	}
	modeName := c.attrStr("mode", "constant")
	mode, ok := padModes[modeName]
	if !ok {
		return nil, c.invalid("mode %s is not one of ONNX's (constant, reflect, edge, wrap)", ir.Quote(modeName))
	}
	raw, cv, err := c.padInputs()
	if err != nil {
		return nil, err
	}
	axes := make([]int, r)
	for d := range axes {
		axes[d] = d
	}
	if c.opset >= 18 && c.in(3) != nil {
		a, err := c.ints(3, "axes")
		if err != nil {
			return nil, err
		}
		axes = axes[:0]
		for _, d := range a {
			if d < int64(-r) || d >= int64(r) {
				return nil, c.invalid("axis %d is outside a rank-%d input", d, r)
			}
			axes = append(axes, int((d+int64(r))%int64(r)))
		}
	}
	if len(raw) != 2*len(axes) {
		return nil, c.invalid("pads has %d values for %d axes; it needs 2 per axis", len(raw), len(axes))
	}
	pads := make([]int, 2*r)
	seen := make([]bool, r)
	for k, d := range axes {
		if seen[d] {
			return nil, c.invalid("axis %d is named twice in axes", d)
		}
		seen[d] = true
		b, e := raw[k], raw[len(axes)+k]
		if max(b, -b, e, -e) > ir.MaxAttrMagnitude {
			return nil, c.refuse("pads %v: each must be at most %d in magnitude", raw, ir.MaxAttrMagnitude)
		}
		if (b < 0 || e < 0) && mode != ir.PadConstant {
			return nil, c.refuse("pads %v: a crop in mode %s (whether the border mirrors x before or after the crop is not settled between ONNX's reference and runtimes); gpucc crops in mode constant", raw, modeName)
		}
		if -b >= int64(s[d]) || -e >= int64(s[d]) || int64(s[d])+b+e < 1 {
			return nil, c.refuse("pads %v crop axis %d of %v to nothing; gpucc's tensors are not empty", raw, d, s)
		}
		pads[d], pads[r+d] = int(b), int(e)
	}
	if folded {
		return c.padConst(v.c, pads, mode, cv)
	}
	if rv := c.in(2); c.opset >= 11 && rv != nil && rv.set || v.set && v.rt.DType() != ir.F32 && !v.isBool && !v.isInt {
		return c.padGather(pads, mode, cv)
	}
	value := float32(0)
	if cv != nil {
		if cv.Type != Float32 || cv.Len() != 1 {
			return nil, c.refuse("constant_value of type %v and %d values; gpucc pads run-time float32 tensors with one float32", cv.Type, cv.Len())
		}
		value = cv.Float32[0]
	}
	if math.IsInf(float64(value), 0) || value != value {
		return nil, c.refuse("constant_value %v; gpucc's graphs carry finite values only", value)
	}
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	return one(rtValue(x.Pad(pads, mode, value)))
}

// padInputs returns Pad's pads and its constant (nil for the default
// zero): attributes before opset 11 (pads, named paddings in opset 1, and
// value), inputs from it on.
func (c *importer) padInputs() ([]int64, *Tensor, *ir.Error) {
	if c.opset < 11 {
		raw, _ := c.attrInts("pads")
		if c.opset < 2 {
			raw, _ = c.attrInts("paddings")
		}
		cv := &Tensor{Type: Float32, Float32: []float32{c.attrFloat("value", 0)}}
		return raw, cv, nil
	}
	raw, err := c.ints(1, "pads")
	if err != nil {
		return nil, nil, err
	}
	if v := c.in(2); v == nil || v.set { // a run-time constant: padOp selects it in
		return raw, nil, nil
	}
	cv, err := c.konst(2, "constant_value")
	if err != nil {
		return nil, nil, err
	}
	return raw, cv, nil
}

// padConst pads the constant t at import: each element is t's at
// ir.Pad.Sources, or the constant cv (of t's type; nil for zero).
func (c *importer) padConst(t *Tensor, pads []int, mode int, cv *Tensor) ([]value, *ir.Error) {
	if t.Type != Float32 && t.Type != Float64 && !t.Type.isInt() {
		return nil, c.refuse("a constant input of type %v", t.Type)
	}
	if cv != nil && (cv.Type != t.Type || cv.Len() != 1) {
		return nil, c.invalid("constant_value of type %v and %d values for an input of type %v", cv.Type, cv.Len(), t.Type)
	}
	attrs, perr := ir.PackAttrs(ir.OpPad, ir.PadAttrs(pads, mode, 0))
	if perr != nil {
		return nil, c.invalid("%v", perr)
	}
	p := ir.PadOf(ir.Shape(t.Shape), attrs)
	out, err := c.newConst(t.Type, p.Out)
	if err != nil {
		return nil, err
	}
	for i, j := range p.Sources() {
		switch {
		case t.Type == Float32 && j < 0 && cv != nil:
			out.Float32[i] = cv.Float32[0]
		case t.Type == Float32 && j >= 0:
			out.Float32[i] = t.Float32[j]
		case t.Type == Float64 && j < 0 && cv != nil:
			out.Float64[i] = cv.Float64[0]
		case t.Type == Float64 && j >= 0:
			out.Float64[i] = t.Float64[j]
		case j < 0 && cv != nil:
			out.Int64[i] = cv.Int64[0]
		case j >= 0:
			out.Int64[i] = t.Int64[j]
		}
	}
	return one(constValue(out))
}

// padGather pads a run-time x of any dtype, or with a constant given at
// run time, as a gather of x's elements at ir.Pad.Sources (a constant
// index table of the output's size), the constant selected in where a
// source is outside x: the same elements as pad's kernel, moved, never
// computed.
func (c *importer) padGather(pads []int, mode int, cv *Tensor) ([]value, *ir.Error) {
	x, err := c.typedAny(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	attrs, perr := ir.PackAttrs(ir.OpPad, ir.PadAttrs(pads, mode, 0))
	if perr != nil {
		return nil, c.invalid("%v", perr)
	}
	p := ir.PadOf(s, attrs)
	if _, err := c.elements("the padded output", p.Out); err != nil {
		return nil, err
	}
	src := p.Sources()
	idx, outside := make([]int64, len(src)), make([]int64, len(src))
	any := false
	for i, j := range src {
		if j < 0 {
			outside[i], any = 1, true
			continue
		}
		idx[i] = int64(j)
	}
	out := ir.Shape(p.Out)
	y := x.Reshape(ir.Shape{s.Len()}).Gather(c.b.TypedInput("", ir.I64, ir.Shape{len(idx)}, nil, idx), 0).Reshape(out)
	if !any {
		return one(rtValue(y))
	}
	var k ir.Tensor
	switch rv := c.in(2); {
	case c.opset >= 11 && rv != nil && rv.set:
		if k, err = c.typedAny(2); err != nil {
			return nil, err
		}
		if k.DType() != x.DType() || k.Shape().Len() != 1 {
			return nil, c.invalid("constant_value of %v %v for an input of %v", k.DType(), k.Shape(), x.DType())
		}
		k = k.Reshape(ir.Shape{}).Broadcast(out)
	case cv != nil && c.opset < 11: // the value attribute, a float
		v := cv.Float32[0]
		switch {
		case x.DType().IsFloat() && x.DType().Holds(v):
			k = c.b.FullOf(x.DType(), out, v, 0)
		case !x.DType().IsFloat() && v == float32(int64(v)) && inRange(x.DType(), int64(v)):
			k = c.b.FullOf(x.DType(), out, 0, int64(v))
		default:
			return nil, c.refuse("value %v is not one of %v's values", v, x.DType())
		}
	case cv != nil:
		if k, err = c.typedOperand(2, x.DType()); err != nil {
			return nil, err
		}
		if k.Shape().Len() != 1 {
			return nil, c.invalid("constant_value of %d values", k.Shape().Len())
		}
		k = k.Reshape(ir.Shape{}).Broadcast(out)
	default:
		k = c.b.FullOf(x.DType(), out, 0, 0)
	}
	m := c.b.TypedInput("", ir.Bool, out, nil, outside)
	return one(rtValue(m.Where(k, y)))
}

// inRange reports whether dtype t holds the integer v.
func inRange(t ir.DType, v int64) bool {
	lo, hi := t.Range()
	return v >= lo && v <= hi
}

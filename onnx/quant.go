package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// The quantization ops (ONNX DequantizeLinear, QuantizeLinear,
// DynamicQuantizeLinear) as the float32 operations of ONNX's formulas, in
// their order, over run-time typed tensors; and the window functions,
// constants of their size.

// typedAny returns input k as a run-time tensor of its own dtype (a
// constant embedded as one).
func (c *importer) typedAny(k int) (ir.Tensor, *ir.Error) {
	v := c.in(k)
	switch {
	case v == nil:
		return ir.Tensor{}, c.invalid("input %d is missing", k)
	case v.isInt:
		return ir.Tensor{}, c.refuse("input %d is an index tensor computed at run time as float32 (the importer's ArgMax)", k)
	case v.set && v.isBool:
		return v.rt.Cast(ir.Bool), nil
	case v.set:
		return v.rt, nil
	}
	dt, ok := v.c.Type.irDType()
	if !ok {
		return ir.Tensor{}, c.refuse("input %d, a constant of element type %v", k, v.c.Type)
	}
	return c.typedOperand(k, dt)
}

// quantParam returns input k (a scale or zero point: a scalar, or one
// value per index of x's axis, attribute axis, default 1) shaped to
// broadcast against x of rank r: [d, 1, …, 1] for a 1-D one.
func (c *importer) quantParam(k, r int) (ir.Tensor, *ir.Error) {
	p, err := c.typedAny(k)
	if err != nil {
		return ir.Tensor{}, err
	}
	s := p.Shape()
	if s.Len() == 1 {
		return p.Reshape(ir.Shape{}), nil
	}
	if len(s) != 1 {
		return ir.Tensor{}, c.invalid("input %d has shape %v: a scalar or one value per index of the axis", k, s)
	}
	axis, err := c.axisOf(c.attrInt("axis", 1), r)
	if err != nil {
		return ir.Tensor{}, err
	}
	t := ir.Shape{s[0]}
	for range r - axis - 1 {
		t = append(t, 1)
	}
	return p.Reshape(t), nil
}

// dequantizeLinearOp is (float32(x) - float32(x_zero_point)) · x_scale,
// ONNX's reference order; x of uint8, int8 or int32 (whose values beyond
// 2^24 round to float32, as the formula says).
func dequantizeLinearOp(c *importer) ([]value, *ir.Error) {
	x, err := c.typedAny(0)
	if err != nil {
		return nil, err
	}
	switch x.DType() {
	case ir.U8, ir.I8, ir.I32:
	default:
		return nil, c.refuse("DequantizeLinear of %v (gpucc reads uint8, int8 and int32)", x.DType())
	}
	r := len(x.Shape())
	scale, err := c.quantParam(1, r)
	if err != nil {
		return nil, err
	}
	if scale.DType() != ir.F32 {
		return nil, c.refuse("a scale of %v (gpucc reads float32)", scale.DType())
	}
	y := x.Cast(ir.F32)
	if v := c.in(2); v != nil {
		zp, err := c.quantParam(2, r)
		if err != nil {
			return nil, err
		}
		if zp.DType() != x.DType() {
			return nil, c.invalid("a zero point of %v for x of %v", zp.DType(), x.DType())
		}
		y = y.Sub(zp.Cast(ir.F32))
	}
	return one(rtValue(y.Mul(scale)))
}

// quantize is saturate(round(x / scale) + zp) in zp's dtype (uint8 or
// int8): the quotient correctly rounded, rounded to an integer ties to
// even, the zero point added in float32, clamped to the dtype's range,
// then cast (exactly). NaN fails the run at the cast (no integer holds it).
func quantize(x, scale, zp ir.Tensor, dt ir.DType) ir.Tensor {
	q := x.Div(scale).Apply(ir.OpRound).Add(zp.Cast(ir.F32))
	lo, hi := dt.Range()
	return q.MaximumScalar(float32(lo)).MinimumScalar(float32(hi)).Cast(dt)
}

// quantizeLinearOp is QuantizeLinear: quantize(x, y_scale, y_zero_point),
// the zero point's dtype the result's (uint8 and 0 when it is absent).
func quantizeLinearOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	r := len(x.Shape())
	scale, err := c.quantParam(1, r)
	if err != nil {
		return nil, err
	}
	if scale.DType() != ir.F32 {
		return nil, c.refuse("a scale of %v (gpucc reads float32)", scale.DType())
	}
	zp := c.b.FullOf(ir.U8, ir.Shape{}, 0, 0)
	if c.in(2) != nil {
		if zp, err = c.quantParam(2, r); err != nil {
			return nil, err
		}
	}
	if dt := zp.DType(); dt != ir.U8 && dt != ir.I8 {
		return nil, c.refuse("a zero point of %v (gpucc quantizes to uint8 and int8)", dt)
	}
	return one(rtValue(quantize(x, scale, zp, zp.DType())))
}

// dynamicQuantizeLinearOp is ONNX's formula: lo = min(0, min x), hi =
// max(0, max x), y_scale = (hi - lo) / 255, y_zero_point =
// saturate(round((0 - lo) / y_scale)), y = quantize(x, y_scale,
// y_zero_point) in uint8. x all zeros gives y_scale 0 and fails the run
// at the cast of 0/0.
func dynamicQuantizeLinearOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	lo := x.Neg().MaxAxes(false).Neg().MinimumScalar(0)
	hi := x.MaxAxes(false).MaximumScalar(0)
	scale := hi.Sub(lo).DivScalar(255)
	zp := c.b.Full(ir.Shape{}, 0).Sub(lo).Div(scale).Apply(ir.OpRound).MaximumScalar(0).MinimumScalar(255).Cast(ir.U8)
	return []value{rtValue(quantize(x, scale, zp, ir.U8)), rtValue(scale), rtValue(zp)}, nil
}

// windowOp is HannWindow, HammingWindow or BlackmanWindow of a size known
// at import (it decides the shape): (a0 - a1·cos(2πn/N)) + a2·cos(4πn/N), N
// the size (periodic) or one less, in float64, each value rounded once to
// float32 (ONNX's reference computes in float64 too).
func windowOp(a0, a1, a2 float64) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		if dt := c.attrInt("output_datatype", int64(Float32)); dt != int64(Float32) {
			return nil, c.refuse("output_datatype %v (gpucc gives float32 windows)", DataType(dt))
		}
		size, err := c.ints(0, "size")
		if err != nil {
			return nil, err
		}
		if len(size) != 1 || size[0] < 1 || size[0] > 1<<24 {
			return nil, c.invalid("size %v: one value from 1 to 2^24", size)
		}
		n := int(size[0])
		den := float64(n)
		if c.attrInt("periodic", 1) == 0 {
			den--
		}
		t, err := c.newConst(Float32, []int{n})
		if err != nil {
			return nil, err
		}
		for i := range n {
			c1, c2 := 1.0, 1.0 // size 1, symmetric: n/N is 0/0, numpy's NaN no window
			if den > 0 {
				c1, c2 = math.Cos(2*math.Pi*float64(i)/den), math.Cos(4*math.Pi*float64(i)/den)
			}
			v := a0 - a1*c1 // the reference's order: Blackman's ends are -1.4e-17, not 0
			v += a2 * c2
			t.Float32[i] = float32(v)
		}
		return one(constValue(t))
	}
}

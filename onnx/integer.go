package onnx

import "github.com/gpucc/gpucc/ir"

// maxExactTerms is the most products of two 8-bit values (each at most
// 255² in magnitude after the zero points) whose float32 sum is exact in
// any order: 258 · 65025 < 2^24.
const maxExactTerms = 258

// integerOp is MatMulInteger (conv false) or ConvInteger: each of x and w
// less its zero point (a scalar; absent is 0), as float32, through the
// float32 matmul or conv rule, then cast to int32. Every partial sum is an
// integer below 2^24, so float32 adds it exactly in any order; a product
// of more than 258 terms per output, whose sums could round, is refused by
// name.
func integerOp(conv bool) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		var fs [2]ir.Tensor
		for k := range fs {
			t, err := c.typedAny(k)
			if err != nil {
				return nil, err
			}
			if t.DType() != ir.U8 && t.DType() != ir.I8 {
				return nil, c.refuse("input %d of %v (gpucc reads uint8 and int8)", k, t.DType())
			}
			fs[k] = t.Cast(ir.F32)
			if c.in(k+2) != nil {
				zp, err := c.typedAny(k + 2)
				if err != nil {
					return nil, err
				}
				if zp.DType() != t.DType() || zp.Shape().Len() != 1 {
					return nil, c.refuse("zero point %d of %v %v: gpucc takes one of the input's dtype", k, zp.DType(), zp.Shape())
				}
				fs[k] = fs[k].Sub(zp.Reshape(ir.Shape{}).Cast(ir.F32))
			}
		}
		// The products per output: matmul's K, B's rows (its only
		// dimension at rank 1); conv's C/group · kernel. A w of a rank the
		// op cannot take (a scalar, which indexed ws[0] out of range: found
		// by FuzzLoadOps) is left to the float32 rule to refuse.
		ws, terms := fs[1].Shape(), 1
		switch {
		case conv && len(ws) >= 2:
			terms = ir.Shape(ws[1:]).Len()
		case !conv && len(ws) >= 2:
			terms = ws[len(ws)-2]
		case !conv && len(ws) == 1:
			terms = ws[0]
		}
		if terms > maxExactTerms {
			return nil, c.refuse("%d products per output (float32 sums them exactly up to %d; an int32 accumulator is not a kernel yet)", terms, maxExactTerms)
		}
		saved, vals := c.n.inputs, c.vals
		c.n.inputs = []string{"\x00integer x", "\x00integer w"}
		c.vals = map[string]*value{c.n.inputs[0]: {rt: fs[0], set: true}, c.n.inputs[1]: {rt: fs[1], set: true}}
		var out []value
		var err *ir.Error
		if conv {
			out, err = convOp(c)
		} else {
			out, err = matmulOp(c)
		}
		c.n.inputs, c.vals = saved, vals
		if err != nil {
			return nil, err
		}
		return one(rtValue(out[0].rt.Cast(ir.I32)))
	}
}

// exactInF32 runs rule, a float32 rule that only selects among its
// input's values (MaxPool), on input 0 of a dtype whose every value
// float32 holds exactly (uint8, int8, float16, bfloat16): cast to float32,
// the rule, and each output cast back, which is exact too. A constant
// input of such a dtype is embedded as one (the rule refused it: the
// node test test_maxpool_2d_uint8, whose input the harness fixes).
func exactInF32(rule func(c *importer) ([]value, *ir.Error)) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		v := c.in(0)
		if v != nil && !v.set && v.c != nil {
			if t, ok := v.c.Type.irDType(); ok && (t == ir.U8 || t == ir.I8 || t == ir.F16 || t == ir.BF16) {
				x, err := c.typedOperand(0, t)
				if err != nil {
					return nil, err
				}
				v = &value{rt: x, set: true}
			}
		}
		if !v.set || v.isBool || v.isInt {
			return rule(c)
		}
		dt := v.rt.DType()
		switch dt {
		case ir.U8, ir.I8, ir.F16, ir.BF16:
		default:
			return rule(c)
		}
		saved, vals := c.n.inputs[0], c.vals
		c.n.inputs[0] = "\x00exact x"
		c.vals = map[string]*value{c.n.inputs[0]: {rt: v.rt.Cast(ir.F32), set: true}}
		for _, name := range c.n.inputs[1:] {
			if name != "" {
				c.vals[name] = vals[name]
			}
		}
		out, err := rule(c)
		c.n.inputs[0], c.vals = saved, vals
		if err != nil {
			return nil, err
		}
		for k := range out {
			if out[k].set && !out[k].isBool && !out[k].isInt {
				out[k] = rtValue(out[k].rt.Cast(dt))
			}
		}
		return out, nil
	}
}

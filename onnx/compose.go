package onnx

import (
	"github.com/gpucc/gpucc/ir"
)

// Ops composed exactly of table ops, each written as ONNX's reference
// (numpy) computes it. where(c, a, b) is mask(c, a) + mask(1 - c, b),
// the chosen operand bit for bit; isNaN(x) is 1 - equal(x, x).

func where(c, a, b ir.Tensor) ir.Tensor {
	return c.Apply(ir.OpMask, a).Add(not(c).Apply(ir.OpMask, b))
}

func isNaN(x ir.Tensor) ir.Tensor { return not(x.Apply(ir.OpEqual, x)) }

func (c *importer) zeros(s ir.Shape) ir.Tensor { return c.b.Full(s, 0) }

// signOp is numpy's sign: -1, +0 (for ±0) or 1, NaN for NaN:
// positive(x) - positive(-x), x itself where x is NaN.
func signOp(c *importer) ([]value, *ir.Error) {
	if v := c.in(0); !v.set && v.c.Type.isInt() && v.c.Type != Bool {
		return unaryInt(nil, func(x int64) int64 { return b2i(x > 0) - b2i(x < 0) })(c)
	}
	return c.unaryOp(func(b *ir.Builder, x ir.Tensor) ir.Tensor {
		s := x.Positive().Sub(x.Neg().Positive())
		return where(isNaN(x), x, s)
	})
}

// isNaNOp is 1 - equal(x, x).
func isNaNOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	return one(boolValue(isNaN(x)))
}

// isInfOp: x - x is NaN exactly where x is ±Inf or NaN, so ±Inf is
// equal(x, x)·isNaN(x - x), kept where x > 0 (detect_positive) or x < 0
// (detect_negative).
func isInfOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	inf := x.Apply(ir.OpEqual, x).Mul(isNaN(x.Sub(x)))
	pos, neg := c.attrInt("detect_positive", 1) != 0, c.attrInt("detect_negative", 1) != 0
	switch {
	case pos && neg:
	case pos:
		inf = inf.Mul(x.Positive())
	case neg:
		inf = inf.Mul(x.Neg().Positive())
	default:
		inf = c.zeros(x.Shape())
	}
	return one(boolValue(inf))
}

// celuOp is max(0, x) + min(0, alpha·(e^(x/alpha) - 1)), the reference's
// order.
func celuOp(c *importer) ([]value, *ir.Error) {
	alpha := c.attrFloat("alpha", 1)
	return c.unaryOp(func(b *ir.Builder, x ir.Tensor) ir.Tensor {
		return x.MaximumScalar(0).Add(x.DivScalar(alpha).Exp().SubScalar(1).MulScalar(alpha).MinimumScalar(0))
	})
}

// hardSwishOp is x·max(0, min(1, x/6 + 0.5)) (alpha 1/6 as float32).
func hardSwishOp(c *importer) ([]value, *ir.Error) {
	return c.unaryOp(func(b *ir.Builder, x ir.Tensor) ir.Tensor {
		return x.Mul(x.MulScalar(1.0 / 6).AddScalar(0.5).MinimumScalar(1).MaximumScalar(0))
	})
}

// shrinkOp is x + bias where x < -lambd, x - bias where x > lambd, else 0
// (0 for NaN, as the reference's where gives).
func shrinkOp(c *importer) ([]value, *ir.Error) {
	bias, lambd := c.attrFloat("bias", 0), c.attrFloat("lambd", 0.5)
	return c.unaryOp(func(b *ir.Builder, x ir.Tensor) ir.Tensor {
		s := x.Shape()
		lo := b.Full(s, -lambd).Apply(ir.OpGreater, x)
		hi := x.Apply(ir.OpGreater, b.Full(s, lambd))
		return where(lo, x.AddScalar(bias), where(hi, x.SubScalar(bias), b.Full(s, 0)))
	})
}

// triluOp is numpy's triu (upper) or tril of the last two axes with the
// diagonal offset k: where(keep, x, 0), keep a constant of [N, M].
func triluOp(c *importer) ([]value, *ir.Error) {
	v := c.in(0)
	s := ir.Shape(v.shape())
	if len(s) < 2 {
		return nil, c.invalid("trilu of rank %d", len(s))
	}
	k := int64(0)
	if c.in(1) != nil {
		ks, err := c.ints(1, "k")
		if err != nil {
			return nil, err
		}
		if len(ks) != 1 {
			return nil, c.invalid("k has %d elements, not one", len(ks))
		}
		k = ks[0]
	}
	upper := c.attrInt("upper", 1) != 0
	n, m := s[len(s)-2], s[len(s)-1]
	kept := func(i int) bool {
		d := int64(i%m) - int64(i/m%n)
		return upper && d >= k || !upper && d <= k
	}
	if !v.set { // a constant folds: its kept elements, zeros elsewhere
		r, err := c.newConst(v.c.Type, v.c.Shape)
		if err != nil {
			return nil, err
		}
		for i := 0; i < r.Len(); i++ {
			if kept(i) {
				r.set(i, v.c.at(i))
			}
		}
		return one(constValue(r))
	}
	x := v.rt
	keep, err := c.newConst(Float32, []int{n, m})
	if err != nil {
		return nil, err
	}
	for i := range keep.Float32 {
		keep.Float32[i] = float32(b2i(kept(i)))
	}
	kt, err := c.runtime(&value{c: keep}, "the kept triangle")
	if err != nil {
		return nil, err
	}
	return one(rtValue(where(kt, x, c.zeros(s))))
}

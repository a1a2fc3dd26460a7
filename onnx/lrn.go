package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// lrnOp is ONNX LRN over the channels of x [N, C, …]: the sum of squares
// over each channel's window (floor((size-1)/2) below, ceil above,
// clipped to the channels) as a matmul by a constant band of ones (the
// products exact, summed in ascending channel order as the reference),
// then x / (bias + float32(alpha/size)·sum)^beta with ir's pow.
func lrnOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) < 3 {
		return nil, c.invalid("input of rank %d; LRN takes [N, C, D1, …]", len(s))
	}
	size := c.attrInt("size", 0)
	if size < 1 {
		return nil, c.invalid("size %d: LRN needs a positive size", size)
	}
	ch := s[1]
	band := make([]float32, ch*ch)
	lo, hi := int((size-1)/2), int((size-1+1)/2)
	for i := range ch {
		for j := max(0, i-lo); j <= min(ch-1, i+hi); j++ {
			band[i*ch+j] = 1
		}
	}
	rest := ir.Shape(s[2:]).Len()
	sq := x.Mul(x).Reshape(ir.Shape{s[0], ch, rest})
	sum := c.b.Input(ir.Shape{ch, ch}, band).MatMul(sq).Reshape(s)
	alpha := float32(float64(c.attrFloat("alpha", 1e-4)) / float64(size))
	d := sum.MulScalar(alpha).AddScalar(c.attrFloat("bias", 1))
	beta := c.attrFloat("beta", 0.75)
	if math.IsNaN(float64(beta)) || math.IsInf(float64(beta), 0) {
		return nil, c.invalid("beta %v is not finite", beta)
	}
	return one(rtValue(x.Div(d.Apply(ir.OpPow, c.b.Full(s, beta)))))
}

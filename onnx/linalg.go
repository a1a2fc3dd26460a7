package onnx

import (
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// detOp is ONNX Det of float32 matrices [..., n, n] for n ≤ 3, by the
// cofactor expansion along the first row, each product and sum rounded
// in float32 (n = 2: a·d - b·c); larger matrices are refused by name (a
// pivoted elimination picks its pivots by value: not done).
func detOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	if len(s) < 2 || s[len(s)-1] != s[len(s)-2] {
		return nil, c.invalid("Det of shape %v: square matrices in the last two axes", s)
	}
	n := s[len(s)-1]
	if n > 3 {
		return nil, c.refuse("Det of %d×%d matrices (gpucc expands 1×1 to 3×3 by cofactors)", n, n)
	}
	batch := ir.Shape(s[:len(s)-2])
	flat := x.Reshape(append(slices.Clone(batch), n*n))
	e := func(k int) ir.Tensor {
		return flat.Gather(c.b.TypedInput("", ir.I64, ir.Shape{1}, nil, []int64{int64(k)}), -1).Reshape(batch)
	}
	var d ir.Tensor
	switch n {
	case 1:
		d = e(0)
	case 2:
		d = e(0).Mul(e(3)).Sub(e(1).Mul(e(2)))
	default:
		m := func(a, b, c, dd int) ir.Tensor { return e(a).Mul(e(dd)).Sub(e(b).Mul(e(c))) }
		d = e(0).Mul(m(4, 5, 7, 8)).Sub(e(1).Mul(m(3, 5, 6, 8))).Add(e(2).Mul(m(3, 4, 6, 7)))
	}
	return one(rtValue(d))
}

// dftOp is ONNX DFT (opset 17) along an axis that is, the last
// (complex) axis set aside, the second-to-last or the last: matmuls by
// constant cos and sin matrices computed in float64 (each entry rounded
// once), real = C·re + S·im and imaginary = C·im - S·re (+S for the
// inverse, which also divides by N), each sum in float32 matmul order.
// dft_length and onesided are refused by name.
func dftOp(c *importer) ([]value, *ir.Error) {
	if c.in(1) != nil {
		return nil, c.refuse("dft_length is not supported (the signal's own length is)")
	}
	if c.attrInt("onesided", 0) != 0 {
		return nil, c.refuse("onesided is not supported")
	}
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	r := len(s)
	if r < 3 || s[r-1] != 1 && s[r-1] != 2 {
		return nil, c.invalid("DFT of shape %v: [batch, …, signal, …, 1 or 2]", s)
	}
	axis := int(c.attrInt("axis", 1))
	if axis < 0 {
		axis += r
	}
	if axis != r-2 && axis != r-3 {
		return nil, c.refuse("DFT along axis %d of shape %v (gpucc transforms the last axis before the complex one, or the one before it)", axis, s)
	}
	n := s[axis]
	inverse := c.attrInt("inverse", 0) != 0
	cs, sn := make([]float32, n*n), make([]float32, n*n)
	for k := range n {
		for j := range n {
			a := 2 * math.Pi * float64(k*j%n) / float64(n)
			cv, sv := math.Cos(a), math.Sin(a)
			if inverse {
				cv, sv = cv/float64(n), -sv/float64(n)
			}
			cs[k*n+j], sn[k*n+j] = float32(cv), float32(sv)
		}
	}
	cm, sm := c.b.Input(ir.Shape{n, n}, cs), c.b.Input(ir.Shape{n, n}, sn)
	inner := s[:r-1]
	part := func(k int) ir.Tensor {
		return x.Gather(c.b.TypedInput("", ir.I64, ir.Shape{1}, nil, []int64{int64(k)}), -1).Reshape(inner)
	}
	apply := func(m, v ir.Tensor) ir.Tensor {
		if axis == r-3 {
			return m.MatMul(v)
		}
		return v.MatMul(m.T())
	}
	re := part(0)
	yr, yi := apply(cm, re), apply(sm, re).Neg() // e^{-iθ}: re·cos, -re·sin
	if s[r-1] == 2 {
		im := part(1)
		yr = yr.Add(apply(sm, im))
		yi = yi.Add(apply(cm, im))
	}
	out := append(slices.Clone(ir.Shape(inner)), 1)
	y, err := c.concatTensors([]ir.Tensor{yr.Reshape(out), yi.Reshape(out)}, r-1)
	if err != nil {
		return nil, err
	}
	return one(rtValue(y))
}

// upsampleOp is Upsample (opsets 7-9, which Resize replaced) of a 4-D X
// over its last two axes: the output floor(in·scale), nearest (floor of
// x/scale) or linear with the asymmetric coordinates Resize's opset 10
// gave it, as resize2d. Scales from the attribute (opset 7) or the
// input, which decides the shape.
func upsampleOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	var scales []float32
	if c.in(1) != nil {
		t, err := c.konst(1, "scales")
		if err != nil {
			return nil, err
		}
		if t.Type != Float32 {
			return nil, c.invalid("scales of type %v", t.Type)
		}
		scales = t.Float32
	} else if a := c.attr("scales"); a != nil {
		scales = a.floats
	}
	s := x.Shape()
	if len(s) != 4 || len(scales) != 4 {
		return nil, c.refuse("Upsample of rank %d with %d scales (gpucc resizes 4-D tensors over their last two axes)", len(s), len(scales))
	}
	if scales[0] != 1 || scales[1] != 1 {
		return nil, c.refuse("scales %v resize the batch or channel axis; gpucc resizes the last two", scales)
	}
	mode, ok := resizeModes[c.attrStr("mode", "nearest")]
	if !ok {
		return nil, c.refuse("mode %s is not supported", ir.Quote(c.attrStr("mode", "nearest")))
	}
	out, bits := []int{0, 0}, []int{0, 0}
	for j := range 2 {
		f := scales[2+j]
		b := math.Float32bits(f)
		if !(f > 0) || b >= 0x7f800000 || b < 0x00800000 {
			return nil, c.invalid("scale %v must be positive, normal and finite", f)
		}
		n := math.Floor(float64(f) * float64(s[2+j]))
		if n < 1 || n > ir.MaxResize {
			return nil, c.refuse("scale %v gives an output of %v along an axis of %d; gpucc needs 1 to %d", f, n, s[2+j], ir.MaxResize)
		}
		out[j], bits[j] = int(n), int(b)
	}
	return one(rtValue(x.Resize2D(map[string][]int{"sizes": out, "mode": {mode}, "coordinate_mode": {ir.ResizeAsymmetric},
		"nearest_mode": {ir.ResizeFloor}, "scale_bits": bits})))
}

package onnx

import "math"

// cubicCoeffs are the weights of the four neighbours floor(x)-1 …
// floor(x)+2 at fraction r (ONNX's reference: Keys' kernel with a).
func cubicCoeffs(r, a float64) [4]float64 {
	s := 1 - r
	return [4]float64{
		((a*(r+1)-5*a)*(r+1)+8*a)*(r+1) - 4*a,
		((a+2)*r-(a+3))*r*r + 1,
		((a+2)*s-(a+3))*s*s + 1,
		((a*(s+1)-5*a)*(s+1)+8*a)*(s+1) - 4*a,
	}
}

// cubicMatrix is the [out, in] matrix of a cubic resize of one axis, as
// ONNX's reference computes each output (in float64, then rounded once to
// float32): the source coordinate x of output o by the coordinate mode
// (scale the given scale, or out/in for sizes), its four neighbours
// (from floor(x)-1; an integer x takes x-2 … x+1 at fraction 1), each
// clamped to the axis (the reference's edge padding), or with
// exclude_outside dropped and the others' weights scaled to sum to 1.
func cubicMatrix(in, out int, scale float64, mode string, a float64, exclude bool) []float32 {
	m := make([]float64, out*in)
	width := scale * float64(in)
	for o := range out {
		x := float64(o)
		switch mode {
		case "align_corners":
			if width == 1 {
				x = 0
			} else {
				x = x * float64(in-1) / (width - 1)
			}
		case "asymmetric":
			x /= scale
		case "pytorch_half_pixel":
			if width == 1 {
				x = -0.5
			} else {
				x = (x+0.5)/scale - 0.5
			}
		default: // half_pixel
			x = (x+0.5)/scale - 0.5
		}
		base := math.Floor(x)
		r := x - base
		if r == 0 {
			r, base = 1, base-1
		}
		c := cubicCoeffs(r, a)
		if exclude {
			sum := 0.0
			for t := range 4 {
				if j := int(base) - 1 + t; j < 0 || j >= in {
					c[t] = 0
				}
				sum += c[t]
			}
			for t := range c {
				c[t] /= sum
			}
		}
		for t := range 4 {
			j := min(max(int(base)-1+t, 0), in-1)
			m[o*in+j] += c[t]
		}
	}
	f := make([]float32, len(m))
	for i, v := range m {
		f[i] = float32(v)
	}
	return f
}

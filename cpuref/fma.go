package cpuref

import "math"

// fma returns x·y + z rounded once to float32 (ties to even), as
// ir.XFma defines it; a flushing arith flushes its operands and result as
// it does for add, sub and mul. x·y is exact in float64 (48 bits), and
// s + t = x·y + z exactly (TwoSum; no float32 operand takes float64 near
// its limits), so s rounded to odd (its last bit set when t is not zero
// and s's is clear: s is then not x·y + z) keeps the sticky bit that
// float32(s) needs to round once: float64(x)*float64(y) + float64(z)
// rounded to float64 first and then to float32 is wrong where the first
// rounding lands on a float32 midpoint (TestFMA).
func (ar arith) fma(x, y, z float32) float32 {
	x, y, z = ar.f(x), ar.f(y), ar.f(z)
	return ar.f(fma32(x, y, z))
}

func fma32(x, y, z float32) float32 {
	p, c := float64(x)*float64(y), float64(z)
	s := p + c
	if math.IsInf(s, 0) || math.IsNaN(s) || math.IsInf(p, 0) || math.IsInf(c, 0) {
		return float32(s) // Inf and NaN operands (and Inf - Inf) as IEEE's fma gives them
	}
	pp := s - c
	t := (p - pp) + (c - (s - pp)) // TwoSum: s + t = p + c exactly
	if t != 0 && math.Float64bits(s)&1 == 0 {
		if (t > 0) == (s > 0) {
			s = math.Float64frombits(math.Float64bits(s) + 1) // away from zero, toward t
		} else {
			s = math.Float64frombits(math.Float64bits(s) - 1)
		}
	}
	return float32(s)
}

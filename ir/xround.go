package ir

// floorX is the largest integer not above x, exactly, in u32 steps: for
// 1 ≤ |x| < 2^23 the fraction bits are cleared (truncation toward zero)
// and a negative x that had a fraction gets 1 subtracted (exact at that
// magnitude); |x| < 1 gives +0, -0 for -0, and -1 for a negative x;
// |x| ≥ 2^23 (already an integer), ±Inf and NaN are x. Shift counts stay
// below 32 on every path, as X requires.
func floorX(x *X) *X {
	b := x.AsBits()
	abs := b.And(U(0x7fffffff))
	neg := b.Shr(U(31)).UEq(U(1))
	small := abs.ULt(U(0x3f800000)) // |x| < 1
	big := U(0x4affffff).ULt(abs)   // |x| ≥ 2^23, ±Inf, NaN
	shift := If(small, U(0), If(big, U(0), abs.Shr(U(23)).USub(U(127))))
	mask := U(0x7fffff).Shr(shift) // the fraction bits of 1 ≤ |x| < 2^23
	trunc := b.And(mask.Xor(U(0xffffffff))).AsFloat()
	mid := If(neg, If(b.And(mask).UEq(U(0)), trunc, trunc.Sub(F(1))), trunc)
	below1 := If(neg, If(abs.UEq(U(0)), x, F(-1)), F(0))
	return If(big, x, If(small, below1, mid))
}

// ceilX is -floor(-x): the smallest integer not below x (-0 for -1 < x ≤ -0).
func ceilX(x *X) *X { return negX(floorX(negX(x))) }

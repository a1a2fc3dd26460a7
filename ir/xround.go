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

// roundX is x rounded to the nearest integer, ties to even (numpy's
// round), exactly: |x| ≤ 0.5 gives a zero of x's sign, 0.5 < |x| < 1 gives
// ±1; for 1 ≤ |x| < 2^23 the magnitude's integer part t (fraction bits
// cleared) and fraction f = |x| - t (exact) give t + 1 where f > 0.5, or
// f = 0.5 and t is odd, else t; the sign is put back. |x| ≥ 2^23, ±Inf
// and NaN are x. Shift counts stay below 32 on every path.
func roundX(x *X) *X {
	b := x.AsBits()
	sign := b.And(U(signBit))
	abs := b.And(U(0x7fffffff))
	big := U(0x4affffff).ULt(abs)      // |x| ≥ 2^23, ±Inf, NaN
	half := abs.ULt(U(0x3f000001))     // |x| ≤ 0.5
	belowOne := abs.ULt(U(0x3f800000)) // |x| < 1
	shift := If(belowOne, U(0), If(big, U(0), abs.Shr(U(23)).USub(U(127))))
	t := abs.And(U(0x7fffff).Shr(shift).Xor(U(0xffffffff))).AsFloat()
	f := abs.AsFloat().Sub(t)
	// even: the units bit of t is clear (bit 23-shift of the significand; for shift 0
	// (t = 1) bit 23 is the exponent's lowest, 1 for 127: odd, as 1 is).
	even := abs.And(U(0x800000).Shr(shift)).UEq(U(0))
	up := If(f.Gt(F(0.5)), F(1), If(f.Eq(F(0.5)), If(even, F(0), F(1)), F(0)))
	mag := If(belowOne, F(1), t.Add(up))
	return If(big, x, If(half, sign.AsFloat(), sign.Or(mag.AsBits()).AsFloat()))
}

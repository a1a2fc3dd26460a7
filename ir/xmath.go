package ir

import "math"

// This file defines the elementwise ops that IEEE hardware does not round
// the same way everywhere (division, square root, exp, log, tanh) as
// expressions of float32 add, sub and mul, comparisons, selects and u32
// integer operations (see X). cpuref's package doc states what each one
// computes and how accurate it is.

// bool helpers: bools become u32 0/1 to combine.
func b2u(c *X) *X           { return If(c, U(1), U(0)) }
func bnot(c *X) *X          { return b2u(c).UEq(U(0)) }
func bor(c, d *X) *X        { return U(0).ULt(b2u(c).Or(b2u(d))) }
func band(c, d *X) *X       { return U(0).ULt(b2u(c).And(b2u(d))) }
func uge(x, y *X) *X        { return bnot(x.ULt(y)) }
func umin(x, y *X) *X       { return If(x.ULt(y), x, y) }
func shl(x *X, n uint32) *X { return x.Shl(U(n)) }
func shr(x *X, n uint32) *X { return x.Shr(U(n)) }

const (
	signBit = 0x80000000
	absMask = 0x7fffffff
	expInf  = 0x7f800000
	qNaN    = 0x7fc00000
)

// fclass holds the bit facts of a float operand.
type fclass struct {
	bits, abs, sign *X // sign: the sign bit in place
	nan, inf, zero  *X // bools
}

func classify(x *X) fclass {
	b := x.AsBits()
	abs := b.And(U(absMask))
	return fclass{bits: b, abs: abs, sign: b.And(U(signBit)),
		nan: U(expInf).ULt(abs), inf: abs.UEq(U(expInf)), zero: abs.UEq(U(0))}
}

// normalize24 shifts m (0 < m < 2^24) left until bit 23 is set and
// returns it and the shift.
func normalize24(m *X) (*X, *X) {
	s := U(0)
	for _, st := range []struct{ below, by uint32 }{{1 << 8, 16}, {1 << 16, 8}, {1 << 20, 4}, {1 << 22, 2}, {1 << 23, 1}} {
		c := m.ULt(U(st.below))
		m = If(c, shl(m, st.by), m)
		s = If(c, s.UAdd(U(st.by)), s)
	}
	return m, s
}

// unpack returns the significand of a finite non-zero float as a 24-bit
// integer with bit 23 set, and its biased exponent plus 64 (subnormals
// normalised: their exponent goes below 1), so |x| = m·2^(e-64-127-23).
func unpack(c fclass) (m, e *X) {
	ef := shr(c.bits, 23).And(U(0xff))
	frac := c.bits.And(U(0x7fffff))
	sub := ef.UEq(U(0))
	m, s := normalize24(If(sub, frac, frac.Or(U(0x800000))))
	return m, If(sub, U(65), ef.UAdd(U(64))).USub(s)
}

// Division and square root below are float32 arithmetic on significands
// in [1, 2) (or [1, 4)), where no value is subnormal, so a GPU that flushes
// subnormals computes them alike: a reciprocal (square-root) estimate by
// Newton's iteration, one correction to a faithful candidate, then the
// exact remainder by Dekker's product (error-free without a fused
// multiply-add: the targets' renderers keep every product's own rounding,
// see codegen.Lang.Keep) decides the correctly rounded result. Integer steps
// only take floats apart and put them together. xmath_test.go proves them
// equal, bit for bit, to the long division and digit-by-digit root they
// replaced.

// sigExp returns, for a finite non-zero float with magnitude bits abs,
// its significand as a float in [1, 2) and its biased exponent as a u32
// (a subnormal's is 0 or below, wrapped: its fraction becomes a normal
// float, frac·2^-23 = x·2^126, exactly), so that |x| = s·2^(e-127).
// Zeros, infinities and NaN give garbage.
func sigExp(abs *X) (s, e *X) {
	sub := abs.ULt(U(0x800000))
	t := abs.Or(U(0x3f800000)).AsFloat().Sub(F(1))
	w := If(sub, t.AsBits(), abs)
	s = w.And(U(0x7fffff)).Or(U(0x3f800000)).AsFloat()
	return s, shr(w, 23).USub(If(sub, U(126), U(0)))
}

// opaque is the constant v as a bitcast, which renderers treat as a value,
// not a literal: a subtrahend they keep (codegen.Lang.Keep), so that no
// compiler folds (x + c) - c into x where a target has no constant slots
// to hide c in (GLSL).
func opaque(v float32) *X { return U(math.Float32bits(v)).AsFloat() }

// split is Veltkamp's: x = hi + lo exactly, hi with the upper 12 bits of
// x's significand and lo with at most 12 (the sign included), so that the
// product of two halves is exact. x must be far from overflow.
func split(x *X) (hi, lo *X) {
	c := x.Mul(F(4097))
	hi = c.Sub(c.Sub(x))
	return hi, x.Sub(hi)
}

// twoProd is Dekker's product: p = x·y rounded and e with p + e = x·y
// exactly, from the splits of x and y (no underflow).
func twoProd(x, xh, xl, y, yh, yl *X) (p, e *X) {
	p = x.Mul(y)
	e = xh.Mul(yh).Sub(p).Add(xh.Mul(yl)).Add(xl.Mul(yh)).Add(xl.Mul(yl))
	return p, e
}

// quotient24 returns Q = A/B for A, B in [1, 2) correctly rounded to 24
// bits (c24, in [½, 2]; steps 1-3 of divBody) and half a unit toward Q
// from c24 (±½, or 0 where Q = c24).
func quotient24(A, B *X) (c24, toward *X) {
	hB, lB := split(B)
	return quotient24By(A, B, recip(B), hB, lB)
}

// recip is y ≈ 1/B for B in [1, 2): 24/17 - 8/17·B (relative error ≤
// 1/17), then two Newton steps y += y·(1 - B·y): error ≤ 1.3e-5.
func recip(B *X) *X {
	y := F(24.0 / 17).Sub(F(8.0 / 17).Mul(B))
	for i := 0; i < 2; i++ {
		y = y.Add(y.Mul(F(1).Sub(B.Mul(y))))
	}
	return y
}

// quotient24By is quotient24 given the divisor's parts: y = recip(B) and
// B's split hB + lB, which depend on B alone (a rows kernel computes them
// once a row: DivRowFast).
func quotient24By(A, B, y, hB, lB *X) (c24, toward *X) {
	hq, _ := split(A.Mul(y))
	rem := A.Sub(hq.Mul(hB)).Sub(hq.Mul(lB))
	q1 := hq.Add(rem.Mul(y))
	h1, l1 := split(q1)
	p, e := twoProd(q1, h1, l1, B, hB, lB)
	return round24(q1, B, A.Sub(p).Sub(e))
}

// round24 is step 3 of divBody: given a faithful q1 of Q = A/B (in [½,
// 2]) and the exact remainder r = A - q1·B, Q correctly rounded to 24
// bits and half a unit toward Q from it (±½, or 0 where Q = c24).
func round24(q1, B, r *X) (c24, toward *X) {
	// the spacing of floats above q1 (in [½, 2]) and below it
	qb := q1.AsBits()
	ulp := qb.And(U(expInf)).USub(U(23 << 23)).AsFloat()
	ulpDown := qb.USub(U(1)).And(U(expInf)).USub(U(23 << 23)).AsFloat()
	r2 := r.Add(r)
	up := r2.Gt(ulp.Mul(B))
	down := F(0).Gt(r2.Add(ulpDown.Mul(B)))
	c24 = If(up, q1.Add(ulp), If(down, q1.Sub(ulpDown), q1))
	// half a unit toward Q from c24: the sign of Q - c24
	toward = If(up, F(-0.5), If(down, F(0.5), If(r.Gt(F(0)), F(0.5), If(F(0).Gt(r), F(-0.5), F(0)))))
	return c24, toward
}

// divNormalBody is a / b for positive normal a and b whose quotient is
// normal: divBody without its signs, subnormals, overflow and special
// operands, the same bits there. tanh's only division is one (2 over
// e^2|x| + 1 with |x| in [0.625, 9.1), in [2.5e-8, 0.45]); on other
// operands it gives garbage, which tanh's selects drop.
func divNormalBody(a, b *X, fused bool) *X {
	ab, bb := a.AsBits(), b.AsBits()
	A := ab.And(U(0x7fffff)).Or(U(0x3f800000)).AsFloat()
	B := bb.And(U(0x7fffff)).Or(U(0x3f800000)).AsFloat()
	c24, _ := quotient(A, B, fused)
	return c24.AsBits().UAdd(shl(shr(ab, 23).USub(shr(bb, 23)), 23)).AsFloat()
}

// divRowFast is divBody for a normal divisor b that many numerators
// share, given B (b's significand in [1, 2)), y = recip(B), B's split
// hB + lB and E = 2^(eb-127) (b's exponent bits), which a rows kernel
// computes once a row (DivRowB, DivRowY, DivRowHi, DivRowLo, DivRowE),
// for the common case only: a normal and a/b normal, where it is
// divBody's normal path, node for node (its quotient24, and its exponent
// sum as bits: c24's plus a's less b's, the result's exponent field in
// [1, 254] exactly where divBody's x is in [513, 766]), and +0 elsewhere
// (divBody gives +0 only where a is ±0 or the quotient underflows, never
// for such operands), where the caller takes divBody instead: a branch
// that costs a warp nothing while its numerators are normal. A b that is
// not normal is the caller's to send to divBody (once a row). That drops,
// a numerator, the reciprocal and the split of B, the subnormal
// rounding and the special operands' selects: 31 float, 16 u32, 4 selects
// and 4 compares instead of 53, 32, 22 and 16 (TestDivRowFastCounts).
func divRowFast(a, b, B, y, hB, lB, E *X, fused bool) *X {
	ab := a.AsBits()
	aAbs := ab.And(U(absMask))
	A := ab.And(U(0x7fffff)).Or(U(0x3f800000)).AsFloat()
	var c24 *X
	if fused {
		c24, _ = quotient24Fused(A, B, y)
	} else {
		c24, _ = quotient24By(A, B, y, hB, lB)
	}
	// c24·2^(ea-eb) as bits, wrapping: exponent field ce + ea - eb, in
	// [127-254, 128+254-1] for normal a and b, so a field outside [1, 254]
	// wraps below 2^23 or lands at 255·2^23 or above
	n := c24.AsBits().UAdd(aAbs.And(U(expInf))).USub(E.AsBits())
	res := n.Or(ab.Xor(b.AsBits()).And(U(signBit))).AsFloat()
	normal := func(v *X) *X { return v.USub(U(0x800000)).ULt(U(0x7f000000)) }
	res = If(normal(n), res, F(0))
	return If(normal(aAbs), res, F(0))
}

// divBody is a / b, correctly rounded (ties to even, subnormal results
// included). For significands A, B in [1, 2) and k = ea - eb, a/b =
// Q·2^k with Q = A/B in (½, 2):
//
//  1. y ≈ 1/B: 24/17 - 8/17·B (relative error ≤ 1/17), then two Newton
//     steps y += y·(1 - B·y): error ≤ 1.3e-5.
//  2. q0 = A·y; hq, its upper 12 bits, is within 2^-11.8 of Q. The
//     remainder A - hq·B is A - hq·hB (exact, 12×12 bits, Sterbenz) minus
//     hq·lB (exact), one rounding; q1 = hq + rem·y is within ½ ulp +
//     2^-28 of Q, so faithful: Q lies between q1's neighbours.
//  3. r = A - q1·B is then a float (|r| < ulp(q1)·B, a multiple of
//     ulp(q1)·2^-23), and (A - p) - e with Dekker's p + e = q1·B gives it
//     exactly (A - p by Sterbenz). Q is above q1's upper midpoint iff
//     2r > ulp·B, below the lower one iff 2r + ulp'·B < 0 (ulp' = ulp/2
//     when q1 is a power of two; a rounded sum keeps its exact value's
//     sign). Q is never a midpoint (a 25-bit odd significand times B has
//     more than 24 bits), so c24, the chosen one of q1 - ulp', q1,
//     q1 + ulp, is Q correctly rounded to 24 bits, and the side of Q from
//     c24 is known.
//  4. A normal result is c24 with k added to its exponent (±Inf past the
//     largest). A subnormal one is the integer n = Q·2^(149+k) rounded:
//     z = c24·2^(149+k) (exact, normal) rounded by (z + 2^23) whose bits
//     less 0x4b000000 are n. No half-integer lies strictly between
//     Q·2^(149+k) and z (each is a point of c24's 24-bit grid scaled), so
//     this is Q's rounding unless z is a half-integer itself and Q is not
//     c24: then z moves half a unit toward Q before rounding.
//  5. Zeros, infinities and NaN operands select their IEEE results.
func divBody(a, b *X, fused bool) *X {
	ab, bb := a.AsBits(), b.AsBits()
	aAbs, bAbs := ab.And(U(absMask)), bb.And(U(absMask))
	sign := ab.Xor(bb).And(U(signBit))
	A, ea := sigExp(aAbs)
	B, eb := sigExp(bAbs)
	c24, toward := quotient(A, B, fused)
	kOff := ea.UAdd(U(512)).USub(eb) // k + 512
	cb24 := c24.AsBits()
	x := shr(cb24, 23).UAdd(kOff) // the result's biased exponent + 512
	// a subnormal result: k clamped to -152 (every Q rounds to 0 from there)
	kc := If(kOff.ULt(U(512-152)), U(512-152), kOff)
	z := c24.Mul(shl(kc.USub(U(236)), 23).AsFloat()) // c24·2^(149+k), in [2^-4, 2^23]
	t := z.Add(F(1 << 23)).Sub(opaque(1 << 23)).Sub(z)
	z = If(F(0.5).Eq(t.AsBits().And(U(absMask)).AsFloat()), z.Add(toward), z)
	subBits := z.Add(F(1 << 23)).AsBits().USub(U(0x4b000000))
	normBits := cb24.UAdd(shl(kOff.USub(U(512)), 23))
	res := If(U(766).ULt(x), U(expInf), If(x.ULt(U(513)), subBits, normBits)).Or(sign).AsFloat()
	// zeros, infinities and NaN: each select overrides the ones before
	aZero, bZero := aAbs.UEq(U(0)), bAbs.UEq(U(0))
	aBig, bBig := U(0x7f7fffff).ULt(aAbs), U(0x7f7fffff).ULt(bAbs) // ±Inf or NaN
	zero, inf, nan := sign.AsFloat(), sign.Or(U(expInf)).AsFloat(), FBits(qNaN)
	res = If(aZero, zero, res)
	res = If(bBig, zero, res)
	res = If(bZero, If(aZero, nan, inf), res)
	res = If(aBig, If(bBig, nan, inf), res)
	res = If(U(expInf).ULt(aAbs), nan, res)
	return If(U(expInf).ULt(bAbs), nan, res)
}

// sqrtBody is √x, correctly rounded. x = M·2^(2h) with M in [1, 4):
//
//  1. y ≈ 1/√M: 0x5f3759df minus half M's bits (error ≤ 3.5%), then two
//     Newton steps y·(1.5 - ½M·y²): error ≤ 4.8e-6.
//  2. q0 = M·y; r0 = M - q0² from Dekker's square (one rounding);
//     q1 = q0 + r0·y/2 is within ½ ulp + 2^-33 of √M, so faithful, and
//     in [1, 2 - 2^-23] (√M < 2 - 2^-24: RN keeps it there).
//  3. With q1² = p + e (Dekker), d = M - p is exact and a multiple of
//     u = 2^-23, |e| ≤ u, and T = u·q1 lies in [u, 2u). √M is above q1's
//     upper midpoint iff M - q1² - T > u²/4; both sides are multiples of
//     u² but for u²/4, so iff d - T > e; d - T is exact where it can
//     matter (d in [0, 3u]) and beyond the bounds of e elsewhere, so the
//     rounded comparison is exact. Likewise √M is below the lower
//     midpoint iff d + T ≤ e. √M is never a midpoint.
//  4. The result is the chosen candidate with h added to its exponent:
//     never subnormal, never overflowing.
func sqrtBody(x *X) *X {
	xb := x.AsBits()
	s, e := sigExp(xb.And(U(absMask)))
	M := If(e.And(U(1)).UEq(U(0)), s.Add(s), s) // e-127, the true exponent, is odd: M in [2, 4)
	y := U(0x5f3759df).USub(shr(M.AsBits(), 1)).AsFloat()
	halfM := M.Mul(F(0.5))
	for i := 0; i < 2; i++ {
		y = y.Mul(F(1.5).Sub(halfM.Mul(y.Mul(y))))
	}
	q0 := M.Mul(y)
	p0, e0 := square(q0)
	q1 := q0.Add(M.Sub(p0).Sub(e0).Mul(y.Mul(F(0.5))))
	p, err := square(q1)
	d := M.Sub(p)
	t := q1.Mul(F(0x1p-23))
	up := d.Sub(t).Gt(err)
	down := err.Ge(d.Add(t))
	v := If(up, q1.Add(F(0x1p-23)), If(down, q1.Sub(F(0x1p-23)), q1))
	half := shr(e.UAdd(U(65)), 1).USub(U(96)) // ⌊(e-127)/2⌋ (e+65 > 0)
	res := v.AsBits().UAdd(shl(half, 23)).AsFloat()
	res = If(U(0x7f7ffffe).ULt(xb.USub(U(1))), x, res)                     // ±0, +Inf, NaN (and every negative, for now)
	return If(xb.USub(U(0x80000001)).ULt(U(0x7f800000)), FBits(qNaN), res) // x < 0: from -min subnormal to -Inf
}

// square is Dekker's x·x = p + e exactly (x far from overflow and
// underflow).
func square(x *X) (p, e *X) {
	h, l := split(x)
	p = x.Mul(x)
	e = h.Mul(h).Sub(p).Add(h.Add(h).Mul(l)).Add(l.Mul(l))
	return p, e
}

// exp2k returns 2^k for k+256 = kOff in [106, 384] as (a, b) with a·b =
// 2^k, both normal floats, so that y·a·b rounds only in its last product.
func exp2k(kOff *X) (*X, *X) {
	h := shr(kOff, 1)
	return shl(h.USub(U(1)), 23).AsFloat(), shl(kOff.USub(h).USub(U(1)), 23).AsFloat()
}

// kFloat returns the float of the integer kOff-256 (kOff < 2^22), exactly.
func kFloat(kOff *X) *X {
	return U(0x4b000000).UAdd(kOff).AsFloat().Sub(F(8388608 + 256))
}

// roundInt returns round(y)+256 (halves away from zero) for |y| < 255.
func roundInt(y *X) *X {
	c := classify(y)
	ey := shr(c.bits, 23).And(U(0xff))
	my := c.bits.And(U(0x7fffff)).Or(U(0x800000))
	sh := If(ey.ULt(U(119)), U(31), U(150).USub(ey))
	mag := my.UAdd(U(1).Shl(sh.USub(U(1)))).Shr(sh)
	return If(c.sign.UEq(U(0)), U(256).UAdd(mag), U(256).USub(mag))
}

// poly returns c[0]·xⁿ⁻¹ + … + c[n-1] by Horner's rule, each step rounded.
func poly(x *X, c ...float32) *X {
	p := F(c[0])
	for _, k := range c[1:] {
		p = p.Mul(x).Add(F(k))
	}
	return p
}

// expBody is eˣ: x = k·ln2 + r, |r| ≤ ln2/2 (Cody and Waite), eʳ by Cephes'
// expf polynomial, then 2^k in two exact factors. k = round(x·log2 e),
// halves away from zero: |x·log2 e| + 2^23 rounds it to nearest even (its
// bits less 0x4b000000 are the integer), and a fraction of exactly ½ adds
// one (integerK: by u32 steps on y's bits instead, roundInt, the same k).
// x > 89 gives +Inf, x < -104 +0, NaN x.
func expBody(x *X, integerK bool) *X {
	xb := x.AsBits()
	over := xb.USub(U(0x42b20001)).ULt(U(0x7f800000 - 0x42b20000)) // 89 < x ≤ +Inf
	under := U(0xc2d00000).ULt(xb)                                 // x < -104 (and -NaN)
	// roundInt's variable shifts need a bounded x; the float steps take any
	// x, and the selects below override what they give outside the range
	// (and for NaN): two selects fewer.
	xc := x
	if integerK {
		xc = If(over, F(0), If(under, F(0), x))
	}
	y := xc.Mul(F(math.Log2E))
	kOff := roundInt(y) // k + 256
	if !integerK {
		yb := y.AsBits()
		ay := yb.And(U(absMask)).AsFloat()
		s := ay.Add(F(1 << 23))
		tie := ay.Sub(s.Sub(opaque(1 << 23))).Eq(F(0.5))
		m := s.AsBits().USub(U(0x4b000000)).UAdd(If(tie, U(1), U(0))) // |k|
		kOff = If(U(absMask).ULt(yb), U(256).USub(m), U(256).UAdd(m))
	}
	k := kFloat(kOff)
	r := xc.Sub(k.Mul(F(0.693359375))).Sub(k.Mul(F(-2.12194440e-4)))
	z := r.Mul(r)
	p := poly(r, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
	a, b := exp2k(kOff)
	v := p.Mul(z).Add(r).Add(F(1)).Mul(a).Mul(b)
	v = If(over, FBits(expInf), v)
	v = If(under, F(0), v)
	return If(U(expInf).ULt(xb.And(U(absMask))), x, v)
}

// logBody is ln x: x = m·2^k with m in [√½, √2), ln m by Cephes' logf
// polynomial in f = m-1, k·ln2 added in two parts. log(±0) = -Inf,
// log(+Inf) = +Inf, NaN for x < 0, log(NaN) = x.
func logBody(x *X) *X {
	xb := x.AsBits()
	abs := xb.And(U(absMask))
	s, e := sigExp(abs)
	frac := s.AsBits().And(U(0x7fffff))
	big := U(0x3504f3).ULt(frac) // m > √2
	mf := If(big, U(0x3f000000), U(0x3f800000)).Or(frac).AsFloat()
	k := kFloat(e.UAdd(If(big, U(130), U(129)))) // k + 256
	f := mf.Sub(F(1))
	z := f.Mul(f)
	p := poly(f, 7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
		-1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
	y := p.Mul(f).Mul(z)
	y = y.Add(k.Mul(F(-2.12194440e-4)))
	y = y.Add(z.Mul(F(-0.5)))
	v := f.Add(y).Add(k.Mul(F(0.693359375)))
	v = If(U(0x7f7fffff).ULt(xb), x, v)                               // +Inf, NaN (and every negative, for now)
	v = If(xb.USub(U(0x80000001)).ULt(U(0x7f800000)), FBits(qNaN), v) // x < 0: from -min subnormal to -Inf
	return If(abs.UEq(U(0)), FBits(signBit|expInf), v)
}

// tanhBody is tanh x: Cephes' tanhf polynomial below 0.625, else
// 1 - 2/(e^{2|x|}+1) with expX and divNormalFn (divX's bits there); ±1
// from 9.1 on.
func tanhBody(x *X) *X {
	c := classify(x)
	ax := c.abs.AsFloat() // tanh is odd: the magnitude from |x|, then x's sign
	s := ax.Mul(ax)
	small := poly(s, -5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1).
		Mul(s).Mul(ax).Add(ax)
	e := expX(ax.Mul(F(2)))
	large := F(1).Sub(Call(divNormalFn, F(2), e.Add(F(1))))
	v := If(c.abs.ULt(U(0x3f200000)), small, // |x| < 0.625
		If(c.abs.ULt(U(0x4111999a)), large, F(1))) // |x| < 9.1
	return If(c.nan, x, c.sign.Or(v.AsBits()).AsFloat())
}

// erfBody is erf x, odd, from |x|: below 0.875, x + x·P(x²) (erf(x)/x - 1
// fitted as a polynomial in s = x², so that the rounding of P is scaled
// by its size, at most 0.12, against the result's); from 0.875 to the
// saturation point 1 - Q(|x| - c), Q a degree-9 fit of erfc on each of
// [0.875, 1.75), [1.75, 2.5), [2.5, 3.9192059) around c = 1.3125, 2.125,
// 3.25 (erfc is below 0.22 there, so its rounding is scaled down too); ±1 from
// 3.9192059 (0x407ad445, the least float whose erf rounds to 1) on and
// for ±Inf. Horner's rule with each step rounded; the fits are least
// squares in float64 rounded to float32 coefficients.
func erfBody(x *X) *X {
	c := classify(x)
	ax := c.abs.AsFloat()
	s := ax.Mul(ax)
	small := ax.Add(ax.Mul(poly(s, 8.776226e-05, -0.0008232923, 0.0052085086, -0.026862236, 0.11283744, -0.37612638, 0.12837917)))
	tail := func(mid float32, q ...float32) *X { return F(1).Sub(poly(ax.Sub(F(mid)), q...)) }
	t1 := tail(1.3125, -0.0011358858, 0.0048250635, -0.00095174205, -0.022245081, 0.038973957, 0.01962781, -0.16425866, 0.2644931, -0.20151852, 0.06343143)
	t2 := tail(2.125, 0.00025558984, -0.0013414087, 0.0018737793, 0.0018165164, -0.012495743, 0.02636106, -0.033037398, 0.02622424, -0.01234082, 0.0026540293)
	t3 := tail(3.25, -2.0943853e-05, 8.2563834e-05, -0.00017276678, 0.00026343457, -0.00031314217, 0.0002865561, -0.00019587156, 9.486641e-05, -2.9187418e-05, 4.3027494e-06)
	v := If(c.abs.ULt(U(0x3f600000)), small, // |x| < 0.875
		If(c.abs.ULt(U(0x3fe00000)), t1, // < 1.75
			If(c.abs.ULt(U(0x40200000)), t2, // < 2.5
				If(c.abs.ULt(U(0x407ad445)), t3, F(1))))) // < 3.9192059
	return If(c.nan, x, c.sign.Or(v.AsBits()).AsFloat())
}

// negX is -x: the sign bit flipped (also of zeros and NaN).
func negX(x *X) *X { return x.AsBits().Xor(U(signBit)).AsFloat() }

// orderKey maps float bits to a u32 whose unsigned order is the float
// order, with -0 below +0.
func orderKey(c fclass) *X {
	return If(c.sign.UEq(U(0)), c.bits.Or(U(signBit)), c.bits.Xor(U(0xffffffff)))
}

// maxNegBody is maximum(x, -x) (layer norm's max|x - mean|, elementwise):
// x for a NaN x (pick keeps its first operand's NaN), else |x|, the sign
// bit cleared (+0 for ±0: -0 < +0). Three nodes instead of pick's 18
// (TestMaxNeg compares them on every float32 with GPUCC_XMATH_ALL=1).
func maxNegBody(x *X) *X {
	abs := x.AsBits().And(U(absMask))
	return If(U(expInf).ULt(abs), x, abs.AsFloat())
}

// MaxNeg is maxNegBody as a function: a target may compute
// maximum(x, neg(x)) by it (codegen/wgsl's rows kernels do).
var MaxNeg = &Func{Name: "max_neg", Params: 1, Body: maxNegBody(Arg(0))}

// maxX and minX: the larger (smaller) operand, -0 < +0, NaN if either is.
func maxX(a, b *X) *X { return pick(a, b, true) }
func minX(a, b *X) *X { return pick(a, b, false) }

func pick(a, b *X, larger bool) *X {
	ca, cb := classify(a), classify(b)
	ka, kb := orderKey(ca), orderKey(cb)
	lt := ka.ULt(kb)
	if !larger {
		lt = kb.ULt(ka)
	}
	v := If(lt, b, a)
	return If(ca.nan, a, If(cb.nan, b, v))
}

// divFn is divBody as a function: ops call it, and targets emit it once.
var divFn = &Func{Name: "div", Params: 2, Body: divBody(Arg(0), Arg(1), false)}

// divX is a call of divFn.
func divX(a, b *X) *X { return Call(divFn, a, b) }

// divNormalFn is divNormalBody as a function, tanh's division.
var divNormalFn = &Func{Name: "div_normal", Params: 2, Body: divNormalBody(Arg(0), Arg(1), false)}

// DivRowFast and the divisor's parts it takes (DivRowB, DivRowY,
// DivRowHi, DivRowLo, DivRowE, each of b) are division by a divisor that
// many numerators share, for a rows kernel that computes the parts once a
// row: for a normal b (DivRowOK(b) is 1, else 0),
// DivRowFast(a, b, DivRowB(b), DivRowY(b), DivRowHi(b), DivRowLo(b),
// DivRowE(b)) is div(a, b) or, outside the common case (divRowFast), +0,
// where the caller must compute div(a, b). TestDivRowFast checks it
// against div.
var (
	DivRowB    = &Func{Name: "div_row_b", Params: 1, Body: divRowB(Arg(0))}
	DivRowY    = &Func{Name: "div_row_y", Params: 1, Body: recip(divRowB(Arg(0)))}
	DivRowHi   = &Func{Name: "div_row_hi", Params: 1, Body: divRowHi(Arg(0))}
	DivRowLo   = &Func{Name: "div_row_lo", Params: 1, Body: divRowLo(Arg(0))}
	DivRowE    = &Func{Name: "div_row_e", Params: 1, Body: Arg(0).AsBits().And(U(expInf)).AsFloat()}
	DivRowOK   = &Func{Name: "div_row_ok", Params: 1, Body: If(Arg(0).AsBits().And(U(absMask)).USub(U(0x800000)).ULt(U(0x7f000000)), F(1), F(0))}
	DivRowFast = &Func{Name: "div_row", Params: 7, Body: divRowFast(Arg(0), Arg(1), Arg(2), Arg(3), Arg(4), Arg(5), Arg(6), false)}
	// DivFn is the table's division, which DivRowFast's callers fall back on.
	DivFn = divFn
)

// DivByOne is div(a, 1): a, but the quiet NaN for a NaN a (the exact
// quotient of every other a, subnormals, zeros and infinities included,
// is a itself). A rows kernel divides by it where a per-row divisor is 1
// (layer norm's scale, max(max|x - mean|·2^-40, 1), but for rows whose
// spread passes 2^40). TestDivByOne checks it on every float32 with
// GPUCC_XMATH_ALL=1.
var DivByOne = &Func{Name: "div_one", Params: 1, Body: If(U(expInf).ULt(Arg(0).AsBits().And(U(absMask))), FBits(qNaN), Arg(0))}

// divRowB is b's significand in [1, 2) for a normal b (sigExp's).
func divRowB(b *X) *X {
	return b.AsBits().And(U(0x7fffff)).Or(U(0x3f800000)).AsFloat()
}

func divRowHi(b *X) *X { h, _ := split(divRowB(b)); return h }
func divRowLo(b *X) *X { _, l := split(divRowB(b)); return l }

// sqrtFn is sqrtBody as a function: ops call it, and targets emit it once.
var sqrtFn = &Func{Name: "sqrt", Params: 1, Body: sqrtBody(Arg(0))}

// sqrtX is a call of sqrtFn.
func sqrtX(x *X) *X { return Call(sqrtFn, x) }

// expFn is expBody as a function: ops call it, and targets emit it once.
var expFn = &Func{Name: "exp", Params: 1, Body: expBody(Arg(0), false)}

// ExpIntegerK is exp with k rounded by u32 steps on y's bits (roundInt)
// instead of float ones: the same bits as the table's exp for every input
// (xmath_test.go), for targets where a chain of float adds costs more than
// the integer steps (a CPU's latency): C gives it as exp's Lang.Native.
var ExpIntegerK = &Func{Name: "exp", Params: 1, Body: expBody(Arg(0), true)}

// expX is a call of expFn.
func expX(x *X) *X { return Call(expFn, x) }

// logFn is logBody as a function: ops call it, and targets emit it once.
var logFn = &Func{Name: "log", Params: 1, Body: logBody(Arg(0))}

// logX is a call of logFn.
func logX(x *X) *X { return Call(logFn, x) }

// tanhFn is tanhBody as a function: ops call it, and targets emit it once.
var tanhFn = &Func{Name: "tanh", Params: 1, Body: tanhBody(Arg(0))}

// tanhX is a call of tanhFn.
func tanhX(x *X) *X { return Call(tanhFn, x) }

// erfFn is erfBody as a function: ops call it, and targets emit it once.
var erfFn = &Func{Name: "erf", Params: 1, Body: erfBody(Arg(0))}

// erfX is a call of erfFn.
func erfX(x *X) *X { return Call(erfFn, x) }

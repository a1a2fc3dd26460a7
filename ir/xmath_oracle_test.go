package ir

import "math"

// The integer definitions of division, square root, exp and log that xmath.go's
// float ones replaced, kept as the oracle xmath_test.go compares them
// with: they define the bits, and the new ones must give the same for
// every input.

// roundPack returns the float sign·q·2^(be-127-25) rounded to nearest,
// ties to even: q has its leading bit at bit 25 (26 bits), sticky says
// whether bits below q are lost, and beOff is be+512. It rounds once,
// also into the subnormal range, and overflows to ±Inf.
func roundPack(sign, beOff, q, sticky *X) *X {
	normal := uge(beOff, U(513))
	sh := umin(U(513).USub(beOff), U(26))
	drop := If(normal, U(2), U(2).UAdd(sh)) // bits of q below the result
	keep := q.Shr(drop)
	lost := q.And(U(1).Shl(drop).USub(U(1)))
	half := U(1).Shl(drop.USub(U(1)))
	tie := lost.UEq(half)
	up := bor(half.ULt(lost), band(tie, bor(sticky, keep.And(U(1)).UEq(U(1)))))
	exp := If(normal, shl(beOff.USub(U(513)), 23), U(0))
	bits := exp.UAdd(keep).UAdd(b2u(up))
	over := uge(beOff, U(512+255))
	return sign.Or(If(over, U(expInf), bits)).AsFloat()
}

// oldDivBody is a / b, correctly rounded: long division of the significands.
func oldDivBody(a, b *X) *X {
	ca, cb := classify(a), classify(b)
	sign := ca.sign.Xor(cb.sign)
	ma, ea := unpack(ca)
	mb, eb := unpack(cb)
	lt := ma.ULt(mb)
	r := If(lt, shl(ma, 1), ma) // r/mb in [1, 2)
	q := U(0)
	for i := 0; i < 26; i++ {
		ge := uge(r, mb)
		q = shl(q, 1).Or(b2u(ge))
		r = shl(If(ge, r.USub(mb), r), 1)
	}
	beOff := ea.UAdd(U(512 + 127)).USub(eb).USub(b2u(lt))
	v := roundPack(sign, beOff, q, bnot(r.UEq(U(0))))
	nan := bor(bor(ca.nan, cb.nan), bor(band(ca.inf, cb.inf), band(ca.zero, cb.zero)))
	inf := bor(ca.inf, cb.zero)
	zero := bor(ca.zero, cb.inf)
	v = If(zero, sign.AsFloat(), v)
	v = If(inf, sign.Or(U(expInf)).AsFloat(), v)
	return If(nan, FBits(qNaN), v)
}

// oldSqrtBody is √x, correctly rounded: the digit-by-digit integer square root.
func oldSqrtBody(x *X) *X {
	c := classify(x)
	m, e := unpack(c)
	// e-64 is the biased exponent; the true exponent e-191 must be even.
	odd := e.And(U(1)).UEq(U(0))
	m = If(odd, shl(m, 1), m)
	// q = ⌊√(m·2^27)⌋: 26 bits. The radicand's pairs of bits, from the
	// top: m's 25 bits sit at bits 27..51, then zeros.
	r, q := U(0), U(0)
	for i := 0; i < 26; i++ {
		var pair *X
		switch {
		case 23-2*i >= 0:
			pair = m.Shr(U(uint32(23 - 2*i))).And(U(3))
		case i == 12:
			pair = shl(m.And(U(1)), 1)
		default:
			pair = U(0)
		}
		r = shl(r, 2).Or(pair)
		t := shl(q, 2).Or(U(1))
		ge := uge(r, t)
		r = If(ge, r.USub(t), r)
		q = shl(q, 1).Or(b2u(ge))
	}
	w := e.UAdd(U(512 - 191)).USub(b2u(odd)) // 2·(true exponent / 2) + 512
	v := roundPack(U(0), shr(w, 1).UAdd(U(383)), q, bnot(r.UEq(U(0))))
	special := bor(bor(c.nan, c.zero), bor(c.inf, bnot(c.sign.UEq(U(0)))))
	neg := band(bnot(c.sign.UEq(U(0))), bnot(bor(c.zero, c.nan)))
	return If(special, If(neg, FBits(qNaN), x), v)
}

// oldExpBody is eˣ: x = k·ln2 + r, |r| ≤ ln2/2 (Cody and Waite), eʳ by Cephes'
// expf polynomial, then 2^k in two exact factors.
func oldExpBody(x *X) *X {
	c := classify(x)
	pos := c.sign.UEq(U(0))
	over := band(pos, U(0x42b20000).ULt(c.abs))        // x > 89
	under := band(bnot(pos), U(0x42d00000).ULt(c.abs)) // x < -104
	out := bor(bor(over, under), c.nan)
	xc := If(out, F(0), x)
	kOff := roundInt(xc.Mul(F(math.Log2E)))
	k := kFloat(kOff)
	r := xc.Sub(k.Mul(F(0.693359375))).Sub(k.Mul(F(-2.12194440e-4)))
	z := r.Mul(r)
	p := poly(r, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
	y := p.Mul(z).Add(r).Add(F(1))
	a, b := exp2k(kOff)
	v := y.Mul(a).Mul(b)
	v = If(over, FBits(expInf), v)
	v = If(under, F(0), v)
	return If(c.nan, x, v)
}

// oldLogBody is ln x: x = m·2^k with m in [√½, √2), ln m by Cephes' logf
// polynomial in f = m-1, k·ln2 added in two parts.
func oldLogBody(x *X) *X {
	c := classify(x)
	m, e := unpack(c)
	frac := m.And(U(0x7fffff))
	big := U(0x3504f3).ULt(frac) // m > √2
	mf := If(big, U(0x3f000000), U(0x3f800000)).Or(frac).AsFloat()
	k := kFloat(e.UAdd(U(256 - 191)).UAdd(b2u(big)))
	f := mf.Sub(F(1))
	z := f.Mul(f)
	p := poly(f, 7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
		-1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
	y := p.Mul(f).Mul(z)
	y = y.Add(k.Mul(F(-2.12194440e-4)))
	y = y.Add(z.Mul(F(-0.5)))
	v := f.Add(y).Add(k.Mul(F(0.693359375)))
	neg := band(bnot(c.sign.UEq(U(0))), bnot(c.zero))
	v = If(c.zero, FBits(signBit|expInf), v)
	v = If(c.inf, x, v)
	return If(bor(c.nan, neg), If(c.nan, x, FBits(qNaN)), v)
}

// The oracle as functions, for ir_test.
var (
	OldDiv  = &Func{Name: "old_div", Params: 2, Body: oldDivBody(Arg(0), Arg(1))}
	OldSqrt = &Func{Name: "old_sqrt", Params: 1, Body: oldSqrtBody(Arg(0))}
	OldExp  = &Func{Name: "old_exp", Params: 1, Body: oldExpBody(Arg(0))}
	OldLog  = &Func{Name: "old_log", Params: 1, Body: oldLogBody(Arg(0))}
	NewExp  = expFn
	NewLog  = logFn
	NewDiv  = divFn
	NewDivN = divNormalFn
	NewSqrt = sqrtFn
)

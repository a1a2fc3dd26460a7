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

// divBody is a / b, correctly rounded: long division of the significands.
func divBody(a, b *X) *X {
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

// sqrtBody is √x, correctly rounded: the digit-by-digit integer square root.
func sqrtBody(x *X) *X {
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
// expf polynomial, then 2^k in two exact factors.
func expBody(x *X) *X {
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

// logBody is ln x: x = m·2^k with m in [√½, √2), ln m by Cephes' logf
// polynomial in f = m-1, k·ln2 added in two parts.
func logBody(x *X) *X {
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

// tanhBody is tanh x: Cephes' tanhf polynomial below 0.625, else
// 1 - 2/(e^{2|x|}+1) with expX and divX; ±1 from 9.1 on.
func tanhBody(x *X) *X {
	c := classify(x)
	ax := c.abs.AsFloat() // tanh is odd: the magnitude from |x|, then x's sign
	s := ax.Mul(ax)
	small := poly(s, -5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1).
		Mul(s).Mul(ax).Add(ax)
	e := expX(ax.Mul(F(2)))
	large := F(1).Sub(divX(F(2), e.Add(F(1))))
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
var divFn = &Func{Name: "div", Params: 2, Body: divBody(Arg(0), Arg(1))}

// divX is a call of divFn.
func divX(a, b *X) *X { return Call(divFn, a, b) }

// sqrtFn is sqrtBody as a function: ops call it, and targets emit it once.
var sqrtFn = &Func{Name: "sqrt", Params: 1, Body: sqrtBody(Arg(0))}

// sqrtX is a call of sqrtFn.
func sqrtX(x *X) *X { return Call(sqrtFn, x) }

// expFn is expBody as a function: ops call it, and targets emit it once.
var expFn = &Func{Name: "exp", Params: 1, Body: expBody(Arg(0))}

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

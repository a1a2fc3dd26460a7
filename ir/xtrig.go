package ir

import (
	"math"
	"math/big"
)

// This file defines pow and the trigonometric and hyperbolic ops (ONNX
// Pow, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh)
// as expressions of float32 add, sub and mul, selects and u32 steps, with
// the primitives of xmath.go (division, square root, exp, log), so that
// every target computes cpuref's bits. The polynomials are Cephes'
// single-precision ones (sinf, cosf, atanf, asinf, sinhf, asinhf, acoshf,
// atanhf), each Horner step rounded. cpuref's package doc states what
// each computes and how accurate it is (xtrig_test.go measures it).

// absF is |x| (the sign bit cleared), flipSign x with its sign bit
// xor'ed with sign (a u32 holding 0 or the sign bit).
func absF(x *X) *X           { return x.AsBits().And(U(absMask)).AsFloat() }
func flipSign(x, sign *X) *X { return x.AsBits().Xor(sign).AsFloat() }

// TrigMax is the bound of sin, cos and tan's argument reduction: for
// |x| < TrigMax, k = round(|x|·2/π) < 2^17 and |x| - k·π/2 is computed
// from π/2 in parts of 7 bits, each product k·part exact; from TrigMax
// on (and at ±Inf) the result is NaN, never an unreduced guess.
const TrigMax = 205887.0 // < 2^17·π/2 (205887.416)

// halfPiParts are π/2 in trigParts parts, the first trigParts-1 of 7
// significant bits and the last rounded to 24 bits, summing to π/2
// within 2^-73.
const trigParts = 8

var halfPiParts = func() [trigParts]float32 {
	pi, _, err := big.ParseFloat("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798", 10, 400, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	rest := new(big.Float).SetPrec(400).Quo(pi, big.NewFloat(2))
	var parts [trigParts]float32
	for i := range parts {
		f, _ := rest.Float64()
		if i < trigParts-1 { // keep the 7 leading bits of the float
			e := math.Ilogb(f)
			q := math.Ldexp(1, e-6)
			f = math.Round(f/q) * q
		}
		parts[i] = float32(f)
		rest.Sub(rest, new(big.Float).SetPrec(400).SetFloat64(float64(parts[i])))
	}
	return parts
}()

// trigReduce returns, for a = |x| < TrigMax, r = a - k·π/2 (|r| ≤ π/4
// and a little) and the quadrant k mod 4 as a u32. k = round(a·2/π) by
// adding 1.5·2^23 (the sum's low bits are k). Each product k·part is
// exact and each subtraction's rounding error is kept (Knuth's two-sum)
// and added back at the end, so that r is a - k·π/2 rounded once more,
// within 2^-73·k, also where most of a cancels (the closest float32
// below TrigMax, 52516.434, is 1.6e-8 from 33433·π/2).
func trigReduce(a *X) (r, q *X) {
	s := a.Mul(F(float32(2 / math.Pi))).Add(F(12582912))
	q = s.AsBits().And(U(3))
	k := s.Sub(opaque(12582912))
	r = a
	var errs *X
	for _, p := range halfPiParts {
		b := negX(k.Mul(F(p)))
		sum := r.Add(b)
		bb := sum.Sub(r)
		e := r.Sub(sum.Sub(bb)).Add(b.Sub(bb))
		if errs == nil {
			errs = e
		} else {
			errs = errs.Add(e)
		}
		r = sum
	}
	return r.Add(errs), q
}

// sinPoly and cosPoly are Cephes' sinf and cosf polynomials on
// [-π/4, π/4].
func sinPoly(r *X) *X {
	z := r.Mul(r)
	return poly(z, -1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1).Mul(z).Mul(r).Add(r)
}

// cos is Horner's rule all the way, (((c₁z + c₂)z + c₃)z - ½)z + 1, not
// Cephes' z²·P(z) - ½z + 1: a product with a repeated factor (P·z·z) is
// one lavapipe's compiler regroups (1793 of 16406 sines 1 ULP off there).
func cosPoly(r *X) *X {
	z := r.Mul(r)
	return poly(z, 2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2, -0.5, 1)
}

// tanPoly is Cephes' tanf polynomial on [-π/4, π/4].
func tanPoly(r *X) *X {
	z := r.Mul(r)
	return poly(z, 9.38540185543e-3, 3.11992232697e-3, 2.44301354525e-2, 5.34112807005e-2, 1.33387994085e-1, 3.33331568548e-1).
		Mul(z).Mul(r).Add(r)
}

// cotTaylor is cot r on [-π/4, π/4] by its Taylor series, 1/r (correctly
// rounded) less r·P(r²), P's terms to r¹² (the next is below 6e-10 there):
// the correction is at most a fifth of 1/r, so its rounding shrinks.
func cotTaylor(r *X) *X {
	z := r.Mul(r)
	p := poly(z, float32(4.0/18243225), float32(1382.0/638512875), float32(2.0/93555), float32(1.0/4725), float32(2.0/945), float32(1.0/45), float32(1.0/3))
	return divX(F(1), r).Sub(r.Mul(p))
}

// trigBody is sin (which 0), cos (1) or tan (2) of x: |x| reduced by
// trigReduce, the polynomial of the quadrant, the sign of the quadrant
// (and of x for the odd sin and tan); NaN at ±Inf and |x| ≥ TrigMax.
func trigBody(x *X, which int) *X {
	c := classify(x)
	a := c.abs.AsFloat()
	inRange := c.abs.ULt(U(math.Float32bits(TrigMax)))
	a = If(inRange, a, F(0))
	r, q := trigReduce(a)
	odd := q.And(U(1)).UEq(U(1))
	s, co := sinPoly(r), cosPoly(r)
	var v *X
	switch which {
	case 0: // q: S, C, -S, -C
		v = flipSign(If(odd, co, s), q.And(U(2)).Shl(U(30)).Xor(c.sign))
	case 1: // q: C, -S, -C, S
		v = flipSign(If(odd, s, co), q.UAdd(U(1)).And(U(2)).Shl(U(30)))
	default: // q even: tan r; odd: -cot r
		v = flipSign(If(odd, negX(cotTaylor(r)), tanPoly(r)), c.sign)
	}
	return If(c.nan, x, If(inRange, v, FBits(qNaN)))
}

// atanBody is Cephes' atanf: |x| above tan 3π/8 as π/2 + atan(-1/|x|),
// above tan π/8 as π/4 + atan((|x|-1)/(|x|+1)), then the polynomial; x's
// sign, NaN kept.
func atanBody(x *X) *X {
	c := classify(x)
	a := c.abs.AsFloat()
	far := a.Gt(F(2.414213562373095))
	mid := a.Gt(F(0.4142135623730950))
	t := If(far, negX(divX(F(1), a)), If(mid, divX(a.Sub(F(1)), a.Add(F(1))), a))
	// y0 = π/2, π/4 or 0 in two parts: its float32 and the rest, added
	// to the polynomial's small value before the one rounding at y0
	y0 := If(far, F(math.Pi/2), If(mid, F(math.Pi/4), F(0)))
	y0lo := If(far, F(float32(math.Pi/2-float64(float32(math.Pi/2)))), If(mid, F(float32(math.Pi/4-float64(float32(math.Pi/4)))), F(0)))
	z := t.Mul(t)
	v := y0.Add(poly(z, 8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1).Mul(z).Mul(t).Add(t).Add(y0lo))
	return If(c.nan, x, flipSign(v, c.sign))
}

// piLo is π less its float32, which the inverse functions add to the
// small term before the one rounding at π (π/2: piLo/2).
const piLo = float32(math.Pi - float64(float32(math.Pi)))

// asinPoly is Cephes' asinf polynomial in t with z = t²: asin t for
// |t| ≤ ½.
func asinPoly(t, z *X) *X {
	return poly(z, 4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1).Mul(z).Mul(t).Add(t)
}

// asinBody is Cephes' asinf: above ½, π/2 - 2·asin √((1-|x|)/2) (the
// doubling makes it 2.13 ULP just above ½); x's sign; NaN beyond ±1 and
// at NaN.
func asinBody(x *X) *X {
	c := classify(x)
	a := c.abs.AsFloat()
	far := a.Gt(F(0.5))
	zb := F(1).Sub(a).Mul(F(0.5))
	t := If(far, sqrtX(zb), a)
	p := asinPoly(t, If(far, zb, a.Mul(a)))
	v := If(far, F(math.Pi/2).Sub(p.Add(p).Sub(F(piLo/2))), p)
	v = If(c.nan, x, flipSign(v, c.sign))
	return If(a.Gt(F(1)), FBits(qNaN), v)
}

// acosBody is Cephes' acosf: below -½, π - 2·asin √((1+x)/2); above ½,
// 2·asin √((1-x)/2); else π/2 - asin x; NaN beyond ±1 and at NaN.
func acosBody(x *X) *X {
	c := classify(x)
	lo, hi := F(-0.5).Gt(x), x.Gt(F(0.5))
	zb := If(lo, F(1).Add(x), F(1).Sub(x)).Mul(F(0.5))
	t := If(bor(lo, hi), sqrtX(zb), x)
	p := asinPoly(t, If(bor(lo, hi), zb, x.Mul(x)))
	v := If(lo, F(math.Pi).Sub(p.Add(p).Sub(F(piLo))), If(hi, p.Add(p), F(math.Pi/2).Sub(p.Sub(F(piLo/2)))))
	v = If(c.abs.AsFloat().Gt(F(1)), FBits(qNaN), v)
	return If(c.nan, x, v)
}

// sinhCosh is sinh (odd) or cosh of x: sinh by Cephes' polynomial up to
// |x| = 1; then e^|x|/2 ∓ ½/e^|x| (exp, division); above 88, where e^|x|
// overflows before its half does, (e^{|x|/2}/2)·e^{|x|/2}. NaN kept.
func sinhCosh(x *X, odd bool) *X {
	c := classify(x)
	a := c.abs.AsFloat()
	e := expX(a)
	inv := divX(F(0.5), e)
	h := e.Mul(F(0.5))
	w := expX(a.Mul(F(0.5)))
	huge := w.Mul(F(0.5)).Mul(w)
	var v *X
	if odd {
		z := a.Mul(a)
		small := poly(z, 2.03721912945e-4, 8.33028376239e-3, 1.66667160211e-1).Mul(z).Mul(a).Add(a)
		v = If(a.Gt(F(1)), h.Sub(inv), small)
	} else {
		v = h.Add(inv)
	}
	v = If(a.Gt(F(88)), huge, v)
	if odd {
		v = flipSign(v, c.sign)
	}
	return If(c.nan, x, v)
}

// asinhBody is Cephes' asinhf: below ½ a polynomial, to 1500
// ln(|x| + √(x²+1)), beyond ln|x| + ln 2; x's sign, NaN kept.
func asinhBody(x *X) *X {
	c := classify(x)
	a := c.abs.AsFloat()
	z := a.Mul(a)
	small := poly(z, 2.0122003309e-2, -4.2699340972e-2, 7.4847586088e-2, -1.6666288134e-1).Mul(z).Mul(a).Add(a)
	mid := logX(a.Add(sqrtX(z.Add(F(1)))))
	large := logX(a).Add(F(math.Ln2))
	v := If(a.Gt(F(1500)), large, If(F(0.5).Gt(a), small, mid))
	return If(c.nan, x, flipSign(v, c.sign))
}

// acoshBody is Cephes' acoshf: x - 1 below ¼ (Cephes: ½, 2.2 ULP near it) a polynomial times √(x-1),
// to 1500 ln(x + √(x²-1)), beyond ln x + ln 2; NaN below 1 and at NaN.
// x²-1 is x·x by Dekker's product (p + e exactly), p - 1 (exact: p is in
// [2.25, 2.25e6], its spacing at most 1) plus e, one rounding.
func acoshBody(x *X) *X {
	z := x.Sub(F(1))
	small := poly(z, 1.7596881071e-3, -7.5272886713e-3, 2.6454905019e-2, -1.1784741703e-1, 1.4142135263).Mul(sqrtX(z))
	xm := If(x.Gt(F(1500)), F(1500), x) // keep the split away from overflow
	xh, xl := split(xm)
	p, e := twoProd(xm, xh, xl, xm, xh, xl)
	mid := logX(x.Add(sqrtX(p.Sub(F(1)).Add(e))))
	large := logX(x).Add(F(math.Ln2))
	v := If(x.Gt(F(1500)), large, If(F(0.25).Gt(z), small, mid))
	v = If(F(1).Gt(x), FBits(qNaN), v)
	return If(classify(x).nan, x, v)
}

// atanhBody is Cephes' atanhf: below ½ a polynomial, else
// ½·ln((1+|x|)/(1-|x|)); x's sign; ±Inf at ±1, NaN beyond and at NaN.
func atanhBody(x *X) *X {
	c := classify(x)
	a := c.abs.AsFloat()
	z := a.Mul(a)
	small := poly(z, 1.81740078349e-1, 8.24370301058e-2, 1.46691431730e-1, 1.99782164500e-1, 3.33337300303e-1).Mul(z).Mul(a).Add(a)
	large := logX(divX(F(1).Add(a), F(1).Sub(a))).Mul(F(0.5))
	v := If(F(0.5).Gt(a), small, large)
	v = If(a.Gt(F(1)), FBits(qNaN), flipSign(v, c.sign))
	return If(c.nan, x, v)
}

// powIntMax is the largest |y| that pow computes by repeated squaring.
const powIntMax = 64

// powBody is x^y. An integer y with |y| ≤ 64 is repeated squaring of x
// (of 1/x for y < 0), the products in the order of ONNX Pow's constant
// exponents (onnx.powOp), so that a run-time and a folded exponent give
// the same bits (each squaring doubles the error so far: within 2 + |y|
// ULP). Otherwise e^{y·ln|x|}, ln|x|'s and the product's roundings scaled
// by y·ln|x|: within 2 + 2|ln x^y| ULP; negated for x < 0 and y an odd
// integer, NaN for a finite x < 0 and a finite y that is not an integer;
// x^±0 = 1 and 1^y = 1 (NaN y too), (-1)^±Inf = 1, as C's pow.
func powBody(x, y *X) *X {
	cx, cy := classify(x), classify(y)
	ay := cy.abs.AsFloat()
	fl := floorX(ay)
	isInt := fl.Eq(ay) // ±Inf too
	half := floorX(ay.Mul(F(0.5)))
	oddInt := band(isInt, bnot(half.Add(half).Eq(ay)))
	small := band(isInt, F(powIntMax).Ge(ay))
	// repeated squaring, n = |y| ≤ 64 as a u32
	n := If(small, ay, F(0)).Add(F(8388608)).AsBits().USub(U(0x4b000000))
	b := If(cy.sign.UEq(U(0)), x, divX(F(1), x))
	p := F(1)
	for i := uint32(0); i < 7; i++ {
		bit := shr(n, i).And(U(1)).UEq(U(1))
		p = If(bit, p.Mul(b), p)
		b = b.Mul(b)
	}
	ax := cx.abs.AsFloat()
	v := expX(y.Mul(logX(ax)))
	v = If(band(oddInt, cx.sign.UEq(U(signBit))), negX(v), v)
	v = If(band(band(F(0).Gt(x), bnot(cx.inf)), bnot(isInt)), FBits(qNaN), v)
	v = If(band(ax.Eq(F(1)), cy.inf), F(1), v)
	v = If(small, p, v)
	v = If(bor(cy.nan, cx.nan), FBits(qNaN), v)
	return If(bor(cy.zero, x.Eq(F(1))), F(1), v)
}

var (
	sinFn   = &Func{Name: "sin", Params: 1, Body: trigBody(Arg(0), 0)}
	cosFn   = &Func{Name: "cos", Params: 1, Body: trigBody(Arg(0), 1)}
	tanFn   = &Func{Name: "tan", Params: 1, Body: trigBody(Arg(0), 2)}
	asinFn  = &Func{Name: "asin", Params: 1, Body: asinBody(Arg(0))}
	acosFn  = &Func{Name: "acos", Params: 1, Body: acosBody(Arg(0))}
	atanFn  = &Func{Name: "atan", Params: 1, Body: atanBody(Arg(0))}
	sinhFn  = &Func{Name: "sinh", Params: 1, Body: sinhCosh(Arg(0), true)}
	coshFn  = &Func{Name: "cosh", Params: 1, Body: sinhCosh(Arg(0), false)}
	asinhFn = &Func{Name: "asinh", Params: 1, Body: asinhBody(Arg(0))}
	acoshFn = &Func{Name: "acosh", Params: 1, Body: acoshBody(Arg(0))}
	atanhFn = &Func{Name: "atanh", Params: 1, Body: atanhBody(Arg(0))}
	powFn   = &Func{Name: "pow", Params: 2, Body: powBody(Arg(0), Arg(1))}
)

package ir

import "math"

// Fast paths: cheaper definitions of table functions on the part of their
// domain where the ordinary inputs lie. exp, tanh and sigmoid spend about
// a third of their instructions on operands that real data rarely holds
// (NaN, overflow, underflow, the saturated tails) and on selects that pick
// those results for every element. A FastPath gives, for a unary function,
// an interval (Lo, Hi) and a body with no such handling that gives the
// function's bits wherever Lo < x < Hi (a float comparison: never for NaN);
// a target may then compute the function as
//
//	if every lane's x is inside: the fast body, else: the table's body
//
// which costs a warp one comparison and a branch while its inputs are
// ordinary, and the table's cost otherwise. cpuref never uses them: the
// table's bodies define the bits, and xfast_test.go proves each fast body
// equal to its function inside its interval on every float32 (exhaustive
// in C with GPUCC_XMATH_ALL=1, sampled in cpuref, flushed and unflushed).
// A proof of the body is not one of the driver that compiles it: WebGPU
// devices take the paths only where their own probe saw the same bits
// (codegen/wgsl's FastProbe, run by runtime/webgpu), and no other target
// takes them.

// FastPath is a cheaper body of a unary table function inside (Lo, Hi).
// Body computes with float add, sub and mul (each rounded, never
// contracted) and u32 steps, as the table does, and calls no function;
// Fused, when set, is Body with fused multiply-adds (ir.XFma), for targets
// whose fma was proved fused (see xfma.go), the same bits again. Below and
// Above are the function's constant tails: where x < Below.At the function
// is Below.Bits, where x > Above.At it is Above.Bits (a softmax's masked
// -Inf, a saturated tanh), so that a target may keep a warp whose lanes are
// inside or in a tail on the fast body, selecting the tails' constants.
type FastPath struct {
	Lo, Hi       float32
	Body         *X
	Fused        *X
	Below, Above Tail
}

// Tail is a constant tail of a function: the float with bits Bits beyond
// At.
type Tail struct {
	At   float32
	Bits uint32
}

// FastPaths returns the fast paths by function name: exp, tanh and
// sigmoid.
func FastPaths() map[string]FastPath {
	return map[string]FastPath{expFn.Name: expFast, tanhFn.Name: tanhFast, sigmoidFn.Name: sigmoidFast}
}

// expFastBound bounds exp's fast interval: |x| < 86.5 keeps k =
// round(x·log2 e) within ±125, so 2^k is one normal float and eʳ·2^k
// (eʳ in [0.7, 1.42]) is normal: one exact product where the table
// multiplies by two factors (exp2k) for its wider range.
const expFastBound = 86.5

// The tails: exp is +0 below -104 and +Inf above 89 (expBody's under
// and over); tanh ±1 from ±9.1 on (9.0999994 is the float below 9.1);
// sigmoid +0 below -89 (e^-x is +Inf) and 1 above 104 (e^-x is +0).
var (
	expFast = FastPath{Lo: -expFastBound, Hi: expFastBound, Body: expCore(Arg(0), false),
		Below: Tail{-104, 0}, Above: Tail{89, expInf}}
	tanhFast = FastPath{Lo: -9.1, Hi: 9.1, Body: tanhCore(Arg(0), false), Fused: tanhCore(Arg(0), true),
		Below: Tail{-9.0999994, 0xbf800000}, Above: Tail{9.0999994, 0x3f800000}}
	sigmoidFast = FastPath{Lo: -expFastBound, Hi: expFastBound, Body: sigmoidCore(Arg(0), false), Fused: sigmoidCore(Arg(0), true),
		Below: Tail{-89, 0}, Above: Tail{104, 0x3f800000}}
)

// expCore is expBody for |x| < expFastBound (positive: x ≥ +0 only),
// step for step where it matters: y = x·log2 e; k = round(y), halves away
// from zero, as |y| + 2^23 rounded to nearest even plus one at a tie (the
// float steps of expBody); r = x - k·ln2 in two parts, each subtraction
// written as the addition of the negated product (the same rounding,
// RN(-v) = -RN(v), and the renderers fuse a product into the add that
// consumes it); eʳ by the same polynomial; then one product by 2^k, whose
// bits are those of k + 127 shifted into the exponent (k + 2^23 + 127 as a
// float has them in its low bits). No over, under or NaN selects: outside
// the interval the result is garbage, which the caller never takes.
func expCore(x *X, positive bool) *X {
	y := x.Mul(F(math.Log2E))
	yb := y.AsBits()
	ay := y
	if !positive {
		ay = yb.And(U(absMask)).AsFloat()
	}
	s := ay.Add(F(1 << 23))
	kr := s.Sub(opaque(1 << 23)) // round(|y|), ties to even
	kabs := If(ay.Sub(kr).Eq(F(0.5)), kr.Add(F(1)), kr)
	k := kabs
	if !positive {
		k = kabs.AsBits().Or(yb.And(U(signBit))).AsFloat()
	}
	r := x.Add(k.Mul(F(-0.693359375))).Add(k.Mul(F(2.12194440e-4)))
	z := r.Mul(r)
	p := poly(r, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
	scale := shl(k.Add(F(1<<23+127)).AsBits(), 23).AsFloat()
	return p.Mul(z).Add(r).Add(F(1)).Mul(scale)
}

// tanhCore is tanhBody for |x| < 9.1: the same small and large branches
// (the large one's exp by expCore, its argument 2|x| being positive and
// below 18.2), one select between them, x's sign put back; no NaN and no
// saturation select. With fused, the division 2/(e^2|x|+1) is
// recipTwoFused's.
func tanhCore(x *X, fused bool) *X {
	xb := x.AsBits()
	abs := xb.And(U(absMask))
	ax := abs.AsFloat()
	s := ax.Mul(ax)
	small := poly(s, -5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1).
		Mul(s).Mul(ax).Add(ax)
	d := expCore(ax.Add(ax), true).Add(F(1)) // 2|x|, exact: the table's ax·2, without the product's keep
	var q *X
	if fused {
		q = recipScaledFused(d, 0x40000000)
	} else {
		q = divNormalBody(F(2), d, false)
	}
	large := F(1).Sub(q)
	v := If(abs.ULt(U(0x3f200000)), small, large) // |x| < 0.625
	return xb.And(U(signBit)).Or(v.AsBits()).AsFloat()
}

// sigmoidCore is sigmoid, 1/(e^-x + 1), for |x| < expFastBound: e^-x by
// expCore, then the division of 1 by d = e^-x + 1 in [1, 2^125), whose
// quotient is normal: divNormalBody's (div's bits there), or with fused
// recipScaledFused's.
func sigmoidCore(x *X, fused bool) *X {
	d := expCore(negX(x), false).Add(F(1))
	if fused {
		return recipScaledFused(d, 0x3f800000)
	}
	return divNormalBody(F(1), d, false)
}

// recipScaledFused is c/d for a power of two c (its bits cb) and a normal
// positive d whose quotient is normal: d's significand B in [1, 2), its
// reciprocal correctly rounded (recipRNFused), the exponent c's less d's
// added to its bits. That is divBody's quotient: Q = 1/B correctly rounded
// is c24, and a normal result is c24 with k added to its exponent.
func recipScaledFused(d *X, cb uint32) *X {
	db := d.AsBits()
	B := db.And(U(0x7fffff)).Or(U(0x3f800000)).AsFloat()
	return recipRNFused(B).AsBits().UAdd(U(cb)).USub(db.And(U(expInf))).AsFloat()
}

// recipRNFused is 1/B correctly rounded for B in [1, 2): recipFused's two
// Newton steps (relative error ≤ 1.3e-5), then two more, each y + y·(1 -
// B·y) with 1 - B·y exact in the fma: the error before the last rounding
// is about the square of the third step's (≤ 2^-24 relative after its
// rounding), below the distance of 1/B from any midpoint of the floats in
// [½, 1] (at least 2^-48/B: 1 - m·B is a non-zero multiple of 2^-48 for a
// midpoint m), but for one B: 2 - 2^-23, whose reciprocal lies 2^-49 above
// the midpoint 0.5 + 2^-25, where the last step gives 0.5 (Markstein's
// exception: a significand of all ones), and a select gives 0x3f000001.
// xfast_test.go checks every one of the 2^23 B against IEEE division.
func recipRNFused(B *X) *X {
	nB := negX(B)
	y := recipFused(B)
	for i := 0; i < 2; i++ {
		y = y.FMA(nB.FMA(y, F(1)), y)
	}
	return If(B.AsBits().UEq(U(0x3fffffff)), FBits(0x3f000001), y)
}

// sigmoidBody is the table's sigmoid, 1/(e^-x + 1) in ONNX's order.
func sigmoidBody(x *X) *X { return divX(F(1), expX(negX(x)).Add(F(1))) }

// sigmoidFn is sigmoidBody as a function, so that a target may give it a
// fast path.
var sigmoidFn = &Func{Name: "sigmoid", Params: 1, Body: sigmoidBody(Arg(0))}

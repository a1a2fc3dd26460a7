package ir

// Fused forms of division. Division's exact remainder (xmath.go, divBody
// step 3) is Dekker's product: two splits and 4 products less their sum,
// about 25 instructions once each product keeps its own rounding. A fused
// multiply-add, x·y + z rounded once, gives the same remainder in one
// instruction where it is exact (A - q1·B is a float), and a faithful
// candidate in two more (Markstein's correction), so every quotient has
// the same c24 and the same side of Q: the same bits, with 7 float
// instructions instead of about 32 in the quotient's core.
//
// XFma is only sound where the target's fma is fused, one rounding: WGSL
// allows fma(a, b, c) to round twice (lavapipe does), and a twice-rounded
// remainder is wrong by up to half an ulp of the product, so Q's rounding
// may go the wrong way. The fused twins (Fused) are therefore a target's
// choice per device, made only after a probe has seen the device's fma
// give one rounding and the twins give the table functions' bits
// (runtime/webgpu's probe); everywhere else the table's functions stay.
// cpuref evaluates XFma with one rounding, so the twins are proved equal to
// the table's functions on the CPU (xfma_test.go: tanh's division over
// every float32, division's pairs).

// FMA returns x × y + z, rounded once (fused).
func (x *X) FMA(y, z *X) *X {
	need(x.Type() == XFloat32 && y.Type() == XFloat32 && z.Type() == XFloat32, "operand types of fma")
	return &X{Op: XFma, Args: []*X{x, y, z}}
}

// quotient is quotient24, fused or by Dekker's product.
func quotient(A, B *X, fused bool) (c24, toward *X) {
	if fused {
		return quotient24Fused(A, B, recipFused(B))
	}
	return quotient24(A, B)
}

// recipFused is recip with fused steps: y = 24/17 - 8/17·B rounded once
// (relative error ≤ 1/17 + 2^-24), then two Newton steps e = 1 - B·y,
// y += y·e, each rounded once: error ≤ (1/17)^4 + 2^-22 ≤ 1.3e-5, recip's
// bound, which is all quotient24Fused needs of y (its q1 is faithful; y's
// own bits may differ from recip's, c24's never do).
func recipFused(B *X) *X {
	nB := negX(B)
	y := F(-8.0/17).FMA(B, F(24.0/17))
	for i := 0; i < 2; i++ {
		y = y.FMA(nB.FMA(y, F(1)), y)
	}
	return y
}

// quotient24Fused is quotient24By with a fused multiply-add, given y =
// recip(B) (relative error ≤ 1.3e-5): q0 = A·y; its remainder r0 =
// A - q0·B rounded once; q1 = q0 + r0·y rounded once is within ½ ulp +
// 2^-31 of Q (the error of q0 + r0·y before rounding is |Q - q0|·(1.3e-5 +
// 2^-23) ≤ 2.7e-5·1.4e-5), so faithful; r = A - q1·B is a float (see
// divBody step 3), which the fma gives exactly. round24 then picks the
// same c24 and side as from Dekker's remainder.
func quotient24Fused(A, B, y *X) (c24, toward *X) {
	q0 := A.Mul(y)
	r0 := negX(q0).FMA(B, A)
	q1 := r0.FMA(y, q0)
	return round24(q1, B, negX(q1).FMA(B, A))
}

// The fused twins: the same bits as div, div_normal and div_row for every
// input (xfma_test.go), computed with XFma.
var (
	divFusedFn       = &Func{Name: "div_fma", Params: 2, Body: divBody(Arg(0), Arg(1), true)}
	divNormalFusedFn = &Func{Name: "div_normal_fma", Params: 2, Body: divNormalBody(Arg(0), Arg(1), true)}
	// DivRowFastFused is DivRowFast's twin: the same parameters (it
	// ignores the split, DivRowHi and DivRowLo), the same result.
	DivRowFastFused = &Func{Name: "div_row_fma", Params: 7, Body: divRowFast(Arg(0), Arg(1), Arg(2), Arg(3), Arg(4), Arg(5), Arg(6), true)}
)

// Fused returns, by name, the table functions that have a fused twin and
// the twin: a target that has proved its fma fused on a device may define
// each such function by its twin's body (codegen.Lang.Native), and a rows
// kernel call DivRowFastFused for DivRowFast.
func Fused() map[string]*Func {
	return map[string]*Func{divFn.Name: divFusedFn, divNormalFn.Name: divNormalFusedFn}
}

// Division by a row's divisor from its correctly rounded reciprocal
// (Markstein's theorem): where y = RN(1/b) and q0 = RN(a·y), q0 is within
// one ulp of a/b, the remainder r = a - q0·b is a float, which a fused
// multiply-add gives exactly, and RN(q0 + r·y), rounded once, is a/b
// correctly rounded. So a rows kernel that computes y once a row
// (DivRowRecip) divides each leaf with a product and two fused
// multiply-adds (DivRowNear), where DivRowFastFused takes about 50
// instructions, on magnitudes in [2^-60, 2^60) (DivRowIn), where no step
// leaves the normal range: the quotient lies in [2^-120, 2^120], and a
// remainder that is not zero is a multiple of ulp(b)·ulp(q0) ≥ 2^(ea-47)
// ≥ 2^-107, so a device that flushes subnormals flushes none of them.
// The same bits as div there (xfma_test.go), fused only.
var (
	// DivRowRecip is RN(1/|b|) for |b| in [2^-60, 2^60), and +0 for any
	// other b (the row's leaves then take DivRowFastFused or div): the
	// reciprocal of b's significand B by recipFused and two more Newton
	// steps, fused, which is RN(1/B) for every B but 2 - 2^-23 (whose
	// RN(1/B), 0.5 + 2^-24, is selected; TestDivRowRecip: all 2^23), then
	// b's exponent taken from its exponent field.
	DivRowRecip = &Func{Name: "div_row_rn", Params: 1, Body: divRowRecip(Arg(0))}
	// DivRowNear is a/b, correctly rounded, given y = DivRowRecip(b) (not
	// +0) and |a| in DivRowIn's range: RN(q0 + r·y) with q0 = RN(|a|·y)
	// and r = |a| - q0·|b|, fused, and the sign of a·b. A zero a gives a
	// zero of that sign (r = +0, q0 + r·y = +0).
	DivRowNear = &Func{Name: "div_row_mk", Params: 3, Body: divRowNear(Arg(0), Arg(1), Arg(2))}
	// DivRowIn is 1 where |a| is +0 or in [2^-60, 2^60) (DivRowNear's
	// numerators), 0 elsewhere (NaN and infinities included).
	DivRowIn = &Func{Name: "div_row_in", Params: 1, Body: divRowIn(Arg(0))}
)

// nearLo and nearSpan bound DivRowNear's magnitudes: [2^-60, 2^60) as
// bits, lo and hi - lo.
const nearLo, nearSpan = 0x21800000, 0x5d800000 - 0x21800000

// inNear reports whether the magnitude bits m lie in [2^-60, 2^60).
func inNear(m *X) *X { return m.USub(U(nearLo)).ULt(U(nearSpan)) }

func divRowIn(a *X) *X {
	m := a.AsBits().And(U(absMask))
	return If(m.UEq(U(0)), F(1), If(inNear(m), F(1), F(0)))
}

func divRowRecip(b *X) *X {
	m := b.AsBits().And(U(absMask))
	B := divRowB(b)
	nB := negX(B)
	y := recipFused(B)
	for i := 0; i < 2; i++ {
		y = y.FMA(nB.FMA(y, F(1)), y)
	}
	y = If(B.AsBits().UEq(U(0x3fffffff)), FBits(0x3f000001), y)
	// y·2^-(eb-127): y's bits less b's exponent field plus 1.0's
	scaled := y.AsBits().USub(m.And(U(expInf))).UAdd(U(0x3f800000)).AsFloat()
	return If(inNear(m), scaled, F(0))
}

func divRowNear(a, b, y *X) *X {
	ab := a.AsBits()
	A := ab.And(U(absMask)).AsFloat()
	bAbs := b.AsBits().And(U(absMask)).AsFloat()
	q0 := A.Mul(y)
	q := negX(q0).FMA(bAbs, A).FMA(y, q0)
	return q.AsBits().Or(ab.Xor(b.AsBits()).And(U(signBit))).AsFloat()
}

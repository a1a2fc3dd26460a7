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

package cpuref

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// The reference's float64 exp, log and pow: fdlibm's algorithms (those of
// Go's portable math.Exp and math.Log, and math.Pow's reduction), written
// here with every product rounded where it is made (float64(a*b): Go may
// otherwise fuse a product into a later addition, across statements too,
// on arm64, ppc64 and s390x) and with
// their own exact frexp and ldexp, so that they are a definition in IEEE
// binary64's + - * / alone: the same bits on every host, which math.Exp
// and math.Log are not (amd64's assembly, with FMA where the CPU has it,
// differs from the portable code in the last bit), and which the C targets
// reproduce line for line (codegen/c's typed prelude: exp64, log64,
// pow64). Within 1 ulp of the exact value for exp and log (fdlibm's
// bound; TestMath64Accuracy measures 0.79 and 0.71 against math/big); pow
// within 16 ulp where |y| < 20 (10.2 measured), as math.Pow's algorithm.

// float64Rows are the float64 rows whose reference is this file's, not the
// op table's F64 (math.Exp, math.Log, math.Pow: ir's stand-ins for exact
// math in eval64).
var float64Rows = map[ir.Op]func(a, b float64) float64{
	ir.OpExp: func(a, _ float64) float64 { return Exp64(a) },
	ir.OpLog: func(a, _ float64) float64 { return Log64(a) },
	ir.OpPow: Pow64,
}

// float64Row returns op's float64 meaning in the reference.
func float64Row(op ir.Op) func(a, b float64) float64 {
	if f, ok := float64Rows[op]; ok {
		return f
	}
	return op.Info().F64
}

const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
)

// Exp64 is the reference's e^x of float64 (fdlibm's e_exp): NaN for NaN,
// +Inf above 709.78…, +0 below -745.13…, 1 + x within 2^-28 of 0.
func Exp64(x float64) float64 {
	const (
		log2e     = 1.44269504088896338700e+00
		overflow  = 7.09782712893383973096e+02
		underflow = -7.45133219101941108420e+02
		nearZero  = 1.0 / (1 << 28)
		p1        = 1.66666666666666657415e-01
		p2        = -2.77777777770155933842e-03
		p3        = 6.61375632143793436117e-05
		p4        = -1.65339022054652515390e-06
		p5        = 4.13813679705723846039e-08
	)
	switch {
	case x != x:
		return x
	case x > overflow:
		return math.Inf(1)
	case x < underflow:
		return 0
	case -nearZero < x && x < nearZero:
		return 1 + x
	}
	k := 0
	switch {
	case x < 0:
		k = int(float64(log2e*x) - 0.5)
	case x > 0:
		k = int(float64(log2e*x) + 0.5)
	}
	hi := x - float64(float64(k)*ln2Hi)
	lo := float64(float64(k) * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	c := r - float64(t*(p1+float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))))
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return Ldexp64(y, k)
}

// Log64 is the reference's natural logarithm of float64 (fdlibm's e_log):
// NaN for NaN and below 0, -Inf for ±0, +Inf for +Inf.
func Log64(x float64) float64 {
	const (
		l1 = 6.666666666666735130e-01
		l2 = 3.999999999940941908e-01
		l3 = 2.857142874366239149e-01
		l4 = 2.222219843214978396e-01
		l5 = 1.818357216161805012e-01
		l6 = 1.531383769920937332e-01
		l7 = 1.479819860511658591e-01
	)
	switch {
	case x != x || x > math.MaxFloat64:
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f1, ki := Frexp64(x)
	if f1 < 7.07106781186547524401e-01 { // √2/2, as C's literal reads it
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}

// Pow64 is the reference's x^y of float64 (the special cases of C99's pow
// and Go's math.Pow; x^yf by Exp64(yf·Log64(x)) for the fraction yf of y
// in [-0.5, 0.5], x^yi by repeated squaring of x's significand with the
// exponent kept apart, then one Ldexp64).
func Pow64(x, y float64) float64 {
	switch {
	case y == 0 || x == 1:
		return 1
	case y == 1:
		return x
	case x != x || y != y:
		return math.NaN()
	case x == 0:
		switch {
		case y < 0:
			if math.Signbit(x) && oddInt64(y) {
				return math.Inf(-1)
			}
			return math.Inf(1)
		case y > 0:
			if math.Signbit(x) && oddInt64(y) {
				return x
			}
			return 0
		}
	case y > math.MaxFloat64 || y < -math.MaxFloat64:
		switch {
		case x == -1:
			return 1
		case (x < 1 && x > -1) == (y > 0):
			return 0
		default:
			return math.Inf(1)
		}
	case x > math.MaxFloat64 || x < -math.MaxFloat64:
		if x < 0 {
			return Pow64(1/x, -y) // Pow64(-0, -y)
		}
		switch {
		case y < 0:
			return 0
		case y > 0:
			return math.Inf(1)
		}
	case y == 0.5:
		return math.Sqrt(x)
	case y == -0.5:
		return 1 / math.Sqrt(x)
	}
	ay := y
	if ay < 0 {
		ay = -ay
	}
	yi := trunc64(ay)
	yf := ay - yi
	if yf != 0 && x < 0 {
		return math.NaN()
	}
	if yi >= 1<<63 { // an even integer whose power overflows or underflows for every x but ±1
		switch {
		case x == -1:
			return 1
		case (x < 1 && x > -1) == (y > 0):
			return 0
		default:
			return math.Inf(1)
		}
	}
	a1, ae := 1.0, 0
	if yf != 0 {
		if yf > 0.5 {
			yf--
			yi++
		}
		a1 = Exp64(float64(yf * Log64(x)))
	}
	x1, xe := Frexp64(x)
	for i := int64(yi); i != 0; i >>= 1 {
		if xe < -1<<12 || 1<<12 < xe { // the result is ±Inf or 0 whatever follows
			ae += xe
			break
		}
		if i&1 == 1 {
			a1 = float64(a1 * x1)
			ae += xe
		}
		x1 = float64(x1 * x1)
		xe <<= 1
		if x1 < .5 {
			x1 += x1
			xe--
		}
	}
	if y < 0 {
		a1 = 1 / a1
		ae = -ae
	}
	return Ldexp64(a1, ae)
}

// oddInt64 reports whether x is an odd integer.
func oddInt64(x float64) bool {
	if x >= 1<<53 || x <= -(1<<53) {
		return false // every float64 from 2^53 on is even
	}
	return trunc64(x) == x && int64(x)&1 != 0
}

// trunc64 returns x's integer part (|x| < 2^63 or x integral).
func trunc64(x float64) float64 {
	if x >= 1<<52 || x <= -(1<<52) || x != x {
		return x // integral already
	}
	t := float64(int64(x))
	if t == 0 && x < 0 {
		return math.Copysign(0, -1)
	}
	return t
}

// Frexp64 returns the significand f of finite nonzero x, ±[0.5, 1), and its
// exponent e: x = f·2^e, exactly (a subnormal x normalized first).
func Frexp64(x float64) (float64, int) {
	e := 0
	if x > -0x1p-1022 && x < 0x1p-1022 {
		x *= 0x1p54 // exact: a subnormal becomes normal
		e = -54
	}
	b := math.Float64bits(x)
	e += int(b>>52&0x7ff) - 1022
	return math.Float64frombits(b&^(0x7ff<<52) | 1022<<52), e
}

// Ldexp64 returns y·2^k rounded once (to nearest even): ±Inf beyond the
// range, a subnormal or ±0 below it; y itself for ±0, ±Inf and NaN.
func Ldexp64(y float64, k int) float64 {
	if y == 0 || y != y || y > math.MaxFloat64 || y < -math.MaxFloat64 {
		return y
	}
	m, e := Frexp64(y)
	n := e + k // y = m·2^n, |m| in [0.5, 1)
	switch {
	case n > 1024:
		return m * math.Inf(1)
	case n > -1022:
		return float64(m*2) * pow2(n-1) // exact: normal
	case n < -1100:
		return m * 0 // below half the least subnormal: ±0
	}
	return float64(m*pow2(n+100)) * 0x1p-100 // exact, then one rounding to a subnormal
}

// pow2 returns 2^k for k in [-1022, 1023].
func pow2(k int) float64 { return math.Float64frombits(uint64(k+1023) << 52) }

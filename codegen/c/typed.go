package c

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// The typed values in C (issue 32): cpuref's rules (its package doc,
// "Dtypes") written once for C, int64 natively. Each dtype is stored at its
// own width (StorageType); integer arithmetic is done in u64, where C's
// conversions wrap as two's complement (no signed overflow, which C leaves
// undefined); division and modulo guard zero (setting *fault, as the
// reference fails the run) and MIN / -1; a shift of the width or more is
// 0; float16 and bfloat16 are computed in float and rounded to the narrow
// type after every op; casts follow ir.Convert. The kernel generator does
// not emit typed kernels yet: a typed graph is compiled by no backend but
// cpu so far (passes.FloatOnly). TestTypedRowsMatchCpuref compiles these
// rows with the system compiler and compares every row and dtype with
// cpuref.EvalTyped, faults included.

// typedPrelude defines the C of the typed rows. It needs no header.
const typedPrelude = `typedef unsigned char t_u8;
typedef signed char t_i8;
typedef unsigned short t_u16;
typedef short t_i16;
typedef int t_i32;
typedef unsigned int t_u32;
typedef long long t_i64;
typedef unsigned long long t_u64;
typedef union { float f; t_u32 u; } t_fu;

/* float16: bits from a float, rounded to nearest even (ir.F16Bits). */
static t_u16 f16_bits(float v) {
	t_fu x; x.f = v;
	t_u32 b = x.u, sign = (b >> 16) & 0x8000u, man = b & 0x7fffffu;
	int exp = (int)((b >> 23) & 0xffu), e = exp - 127 + 15;
	if (exp == 0xff) return (t_u16)(man ? sign | 0x7e00u | (man >> 13) : sign | 0x7c00u);
	if (e >= 31) return (t_u16)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10) return (t_u16)sign;
		t_u32 m = man | 0x800000u, shift = (t_u32)(14 - e);
		t_u32 q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u))) q++;
		return (t_u16)(sign | q);
	}
	t_u32 q = ((t_u32)e << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
	return (t_u16)(sign | q);
}
static float f16_float(t_u16 h) {
	t_u32 sign = (t_u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
	t_fu x;
	if (exp == 0x1f) { x.u = sign | 0x7f800000u | (man << 13); return x.f; }
	if (exp == 0) { x.f = (float)man * 5.9604644775390625e-08f; x.u |= sign; return x.f; }
	x.u = sign | ((exp + 112u) << 23) | (man << 13);
	return x.f;
}
/* bfloat16: a float's top 16 bits, rounded to nearest even (ir.BF16Bits). */
static t_u16 bf16_bits(float v) {
	t_fu x; x.f = v;
	t_u32 b = x.u;
	if ((b & 0x7fffffffu) > 0x7f800000u) return (t_u16)((b >> 16) | 0x40u);
	b += 0x7fffu + ((b >> 16) & 1u);
	return (t_u16)(b >> 16);
}
static float bf16_float(t_u16 h) { t_fu x; x.u = (t_u32)h << 16; return x.f; }

/* An integer to a float of p significant bits, one rounding from the
   exact value (ir.IntToFloat); the caller rounds the result to the narrow
   type, which is exact or overflows. */
static float int_float(t_i64 v, int p) {
	int neg = v < 0;
	t_u64 u = neg ? 0ull - (t_u64)v : (t_u64)v;
	int n = 0;
	for (t_u64 w = u; w; w >>= 1) n++;
	if (n > p) {
		int shift = n - p;
		t_u64 q = u >> shift, rem = u & ((1ull << shift) - 1ull), half = 1ull << (shift - 1);
		if (rem > half || (rem == half && (q & 1ull))) q++;
		u = q << shift;
	}
	float f = (float)u; /* exact: at most p+1 <= 25 significant bits */
	return neg ? -f : f;
}
/* A float or float64 to an integer, truncated toward zero, where
   gt < d < lt are the values whose truncation is in the dtype's range;
   *fault for NaN, ±Inf and a value outside (ir.FloatToInt,
   ir.Float64ToInt). A float argument widens exactly. */
static t_i64 float_int(double d, double gt, double lt, int *fault) {
	if (!(d > gt && d < lt)) { *fault = 1; return 0; }
	return (t_i64)d; /* C truncates toward zero */
}
/* The reference's maximum: the first NaN, else the larger by the order
   of the bits (-0 < +0). */
static float fmax_ref(float a, float b) {
	if (a != a) return a;
	if (b != b) return b;
	t_fu x, y; x.f = a; y.f = b;
	t_u32 ka = (x.u & 0x80000000u) ? ~x.u : x.u | 0x80000000u;
	t_u32 kb = (y.u & 0x80000000u) ? ~y.u : y.u | 0x80000000u;
	return ka >= kb ? a : b;
}
/* The reference's minimum: the first NaN, else the smaller (-0 < +0). */
static float fmin_ref(float a, float b) {
	if (a != a) return a;
	if (b != b) return b;
	t_fu x, y; x.f = a; y.f = b;
	t_u32 ka = (x.u & 0x80000000u) ? ~x.u : x.u | 0x80000000u;
	t_u32 kb = (y.u & 0x80000000u) ? ~y.u : y.u | 0x80000000u;
	return ka <= kb ? a : b;
}
/* float64, C's double: its bits (ir.F64Bits) and back. */
typedef union { double d; t_u64 u; } t_du;
static double f64_of(t_u64 b) { t_du x; x.u = b; return x.d; }
/* A float64 rounded to float32 to odd (ir.RoundFloat64): the nearest
   float32 when it is exact or ±Inf, else the float32 toward zero with its
   last bit set, which the store to float16 or bfloat16 rounds once as the
   exact value would round (float32's 24 bits are p+2 of theirs at least). */
static float f64_odd(double x) {
	float y = (float)x;
	t_fu b; b.f = y;
	double ay = (double)y, ax = x < 0 ? -x : x;
	if ((double)y == x || (b.u & 0x7fffffffu) == 0x7f800000u) return y;
	if ((ay < 0 ? -ay : ay) > ax) b.u--; /* toward zero: the magnitude's bits are ordered */
	b.u |= 1u;
	return b.f;
}
/* The reference's float64 maximum and minimum (Go's math.Max, math.Min):
   +Inf (-Inf) before NaN, then NaN (Go's NaN()), then +0 above -0. */
static double fmax64_ref(double x, double y) {
	t_du a, b; a.d = x; b.d = y;
	if (a.u == 0x7ff0000000000000ull || b.u == 0x7ff0000000000000ull) return f64_of(0x7ff0000000000000ull);
	if (x != x || y != y) return f64_of(0x7ff8000000000001ull);
	if (x == 0 && x == y) return (a.u >> 63) ? y : x;
	return x > y ? x : y;
}
static double fmin64_ref(double x, double y) {
	t_du a, b; a.d = x; b.d = y;
	if (a.u == 0xfff0000000000000ull || b.u == 0xfff0000000000000ull) return f64_of(0xfff0000000000000ull);
	if (x != x || y != y) return f64_of(0x7ff8000000000001ull);
	if (x == 0 && x == y) return (a.u >> 63) ? x : y;
	return x < y ? x : y;
}
/* The reference's float64 exp, log and pow (cpuref/typedmath64.go, line
   for line: fdlibm's algorithms in binary64's + - * / alone, its own exact
   frexp and ldexp), so that C gives its bits where a C library's exp
   would not. */
static double f64_pow2(t_i64 k) { return f64_of((t_u64)(k + 1023) << 52); }
static double f64_frexp(double x, t_i64 *e) {
	t_du b;
	*e = 0;
	if (x > -0x1p-1022 && x < 0x1p-1022) { x *= 0x1p54; *e = -54; }
	b.d = x;
	*e += (t_i64)((b.u >> 52) & 0x7ffu) - 1022;
	b.u = (b.u & ~(0x7ffull << 52)) | (1022ull << 52);
	return b.d;
}
static double f64_ldexp(double y, t_i64 k) {
	if (y == 0 || y != y || y > 1.7976931348623157e308 || y < -1.7976931348623157e308) return y;
	t_i64 e;
	double m = f64_frexp(y, &e);
	t_i64 n = e + k;
	if (n > 1024) return m * f64_of(0x7ff0000000000000ull);
	if (n > -1022) return (m * 2) * f64_pow2(n - 1);
	if (n < -1100) return m * 0.0;
	return (m * f64_pow2(n + 100)) * 0x1p-100;
}
static double exp64(double x) {
	if (x != x) return x;
	if (x > 7.09782712893383973096e+02) return f64_of(0x7ff0000000000000ull);
	if (x < -7.45133219101941108420e+02) return 0;
	if (-0x1p-28 < x && x < 0x1p-28) return 1 + x;
	t_i64 k = 0;
	if (x < 0) k = (t_i64)(1.44269504088896338700e+00 * x - 0.5);
	else if (x > 0) k = (t_i64)(1.44269504088896338700e+00 * x + 0.5);
	double hi = x - (double)k * 6.93147180369123816490e-01;
	double lo = (double)k * 1.90821492927058770002e-10;
	double r = hi - lo, t = r * r;
	double c = r - t * (1.66666666666666657415e-01 + t * (-2.77777777770155933842e-03 + t * (6.61375632143793436117e-05 +
		t * (-1.65339022054652515390e-06 + t * 4.13813679705723846039e-08))));
	double y = 1 - ((lo - (r * c) / (2 - c)) - hi);
	return f64_ldexp(y, k);
}
static double log64(double x) {
	if (x != x || x > 1.7976931348623157e308) return x;
	if (x < 0) return f64_of(0x7ff8000000000001ull);
	if (x == 0) return f64_of(0xfff0000000000000ull);
	t_i64 ki;
	double f1 = f64_frexp(x, &ki);
	if (f1 < 7.07106781186547524401e-01) { f1 *= 2; ki--; }
	double f = f1 - 1, k = (double)ki;
	double s = f / (2 + f), s2 = s * s, s4 = s2 * s2;
	double t1 = s2 * (6.666666666666735130e-01 + s4 * (2.857142874366239149e-01 + s4 * (1.818357216161805012e-01 + s4 * 1.479819860511658591e-01)));
	double t2 = s4 * (3.999999999940941908e-01 + s4 * (2.222219843214978396e-01 + s4 * 1.531383769920937332e-01));
	double R = t1 + t2, hfsq = 0.5 * f * f;
	return k * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + R) + k * 1.90821492927058770002e-10)) - f);
}
static double trunc64(double x) {
	if (x >= 0x1p52 || x <= -0x1p52 || x != x) return x;
	double t = (double)(t_i64)x;
	if (t == 0 && x < 0) return -0.0;
	return t;
}
static int odd_int64(double x) {
	if (x >= 0x1p53 || x <= -0x1p53) return 0;
	return trunc64(x) == x && ((t_i64)x & 1) != 0;
}
/* A power whose exponent's magnitude is infinite or at least 2^63. */
static double pow64_huge(double x, double y) {
	if (x == -1) return 1;
	if ((x < 1 && x > -1) == (y > 0)) return 0;
	return f64_of(0x7ff0000000000000ull);
}
static double pow64(double x, double y) {
	const double inf = f64_of(0x7ff0000000000000ull);
	if (y == 0 || x == 1) return 1;
	if (y == 1) return x;
	if (x != x || y != y) return f64_of(0x7ff8000000000001ull);
	if (x == 0) {
		t_du b; b.d = x;
		int odd = (b.u >> 63) && odd_int64(y);
		if (y < 0) return odd ? -inf : inf;
		return odd ? x : 0;
	}
	if (y > 1.7976931348623157e308 || y < -1.7976931348623157e308) return pow64_huge(x, y);
	if (x > 1.7976931348623157e308 || x < -1.7976931348623157e308) {
		if (x < 0) return pow64(1 / x, -y);
		return y < 0 ? 0 : inf;
	}
	if (y == 0.5) return __builtin_sqrt(x);
	if (y == -0.5) return 1 / __builtin_sqrt(x);
	double ay = y < 0 ? -y : y;
	double yi = trunc64(ay), yf = ay - yi;
	if (yf != 0 && x < 0) return f64_of(0x7ff8000000000001ull);
	if (yi >= 0x1p63) return pow64_huge(x, y);
	double a1 = 1;
	t_i64 ae = 0;
	if (yf != 0) {
		if (yf > 0.5) { yf--; yi++; }
		a1 = exp64(yf * log64(x));
	}
	t_i64 xe;
	double x1 = f64_frexp(x, &xe);
	for (t_i64 i = (t_i64)yi; i != 0; i >>= 1) {
		if (xe < -(1 << 12) || (1 << 12) < xe) { ae += xe; break; }
		if (i & 1) { a1 *= x1; ae += xe; }
		x1 *= x1;
		xe *= 2;
		if (x1 < .5) { x1 += x1; xe--; }
	}
	if (y < 0) { a1 = 1 / a1; ae = -ae; }
	return f64_ldexp(a1, ae);
}
static t_i64 div_i64(t_i64 a, t_i64 b, int *fault) {
	if (b == 0) { *fault = 1; return 0; }
	if (b == -1) return (t_i64)(0ull - (t_u64)a); /* MIN / -1 wraps to MIN */
	return a / b;
}
static t_i64 mod_i64(t_i64 a, t_i64 b, int *fault) {
	if (b == 0) { *fault = 1; return 0; }
	if (b == -1) return 0;
	t_i64 r = a % b;
	if (r != 0 && ((r < 0) != (b < 0))) r += b;
	return r;
}
`

// StorageType returns the C type that holds one element of t in memory:
// float for float32, the 16 bits of float16 and bfloat16, the integer of
// the dtype's width (uint64 its int64 carrier, ir.DType), a byte for bool,
// double for float64 (its bits are the host's carrier's, ir.F64Bits).
func StorageType(t ir.DType) string {
	return [...]string{ir.F32: "float", ir.F16: "t_u16", ir.BF16: "t_u16", ir.I32: "t_i32", ir.I64: "t_i64",
		ir.U8: "t_u8", ir.I8: "t_i8", ir.U32: "t_u32", ir.Bool: "t_u8", ir.I16: "t_i16", ir.U16: "t_u16", ir.U64: "t_i64",
		ir.F64: "double"}[t]
}

// typedLoad returns the C of a stored element x of t as its computing
// value: a float for the float dtypes, a double for float64, a t_i64 for
// the others.
func typedLoad(t ir.DType, x string) string {
	switch {
	case t == ir.F16:
		return "f16_float(" + x + ")"
	case t == ir.BF16:
		return "bf16_float(" + x + ")"
	case t.IsFloat() || t.IsFloat64():
		return x
	}
	return "(t_i64)(" + x + ")"
}

// typedStore returns the C of a computing value x (a float for the float
// dtypes, an integer of t's range for the others) stored as t.
func typedStore(t ir.DType, x string) string {
	switch {
	case t == ir.F16:
		return "f16_bits(" + x + ")"
	case t == ir.BF16:
		return "bf16_bits(" + x + ")"
	}
	return "(" + StorageType(t) + ")(" + x + ")"
}

// intLang renders the typed integer rows (codegen.TypedIntRows) over
// t_i64 values: arithmetic in t_u64, where C's conversions wrap as two's
// complement (no signed overflow, which C leaves undefined); division and
// modulo through div_i64 and mod_i64, which guard zero themselves
// (setting *fault) and MIN / -1. A select is C's conditional, so a shift's
// count of 64 or more is never evaluated.
var intLang = codegen.IntLang{
	codegen.IConst: func(x *codegen.IntX, _ []string) string {
		if x.Val == math.MinInt64 {
			return "((t_i64)(-9223372036854775807LL - 1))"
		}
		return "((t_i64)" + strconv.FormatInt(x.Val, 10) + "LL)"
	},
	codegen.IAdd:    cwrap(" + "),
	codegen.ISub:    cwrap(" - "),
	codegen.IMul:    cwrap(" * "),
	codegen.INeg:    func(_ *codegen.IntX, a []string) string { return "(t_i64)(0ull - (t_u64)" + a[0] + ")" },
	codegen.IDiv:    func(_ *codegen.IntX, a []string) string { return "div_i64(" + a[0] + ", " + a[1] + ", fault)" },
	codegen.IMod:    func(_ *codegen.IntX, a []string) string { return "mod_i64(" + a[0] + ", " + a[1] + ", fault)" },
	codegen.IAnd:    cinfix(" & "),
	codegen.IOr:     cinfix(" | "),
	codegen.IXor:    cinfix(" ^ "),
	codegen.IBitNot: func(_ *codegen.IntX, a []string) string { return "(~" + a[0] + ")" },
	codegen.IShl:    func(_ *codegen.IntX, a []string) string { return "(t_i64)((t_u64)" + a[0] + " << " + a[1] + ")" },
	codegen.IShr:    func(_ *codegen.IntX, a []string) string { return "(t_i64)((t_u64)" + a[0] + " >> " + a[1] + ")" },
	codegen.ILt:     cinfix(" < "),
	codegen.IEq:     cinfix(" == "),
	codegen.INot:    func(_ *codegen.IntX, a []string) string { return "!" + a[0] },
	codegen.ISelect: func(_ *codegen.IntX, a []string) string { return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")" },
	codegen.IBool:   func(_ *codegen.IntX, a []string) string { return "(t_i64)" + a[0] },
	codegen.IArg:    func(*codegen.IntX, []string) string { panic("codegen/c: an operand is rendered by IntLang.Render") },
}

func cwrap(op string) func(*codegen.IntX, []string) string {
	return func(_ *codegen.IntX, a []string) string {
		return "(t_i64)((t_u64)" + a[0] + op + "(t_u64)" + a[1] + ")"
	}
}

func cinfix(op string) func(*codegen.IntX, []string) string {
	return func(_ *codegen.IntX, a []string) string { return "(" + a[0] + op + a[1] + ")" }
}

func init() {
	if err := codegen.CheckIntLang(&intLang); err != nil {
		panic(err)
	}
}

// typedCast returns the C of ONNX's Cast (ir.Convert) of computing value
// x of dtype from to dtype to, as a computing value of to.
func typedCast(from, to ir.DType, x string) string {
	switch r := codegen.TypedCast(from, to); r.Kind {
	case codegen.CastFloatBool, codegen.CastIntBool: // NaN != 0 is true
		return "(t_i64)(" + x + " != 0)"
	case codegen.CastIntFloat:
		return fmt.Sprintf("int_float(%s, %d)", x, r.Bits)
	case codegen.CastNarrow64:
		if to == ir.F32 {
			return "(float)(" + x + ")" // one rounding to nearest even, ±Inf beyond
		}
		return "f64_odd(" + x + ")" // the store rounds it once to float16 or bfloat16
	case codegen.CastFloatInt:
		gt := float64(r.Lo) - 1 // exact below 2^53
		if r.Lo == math.MinInt64 {
			gt = math.Nextafter(-0x1p63, math.Inf(-1)) // every double above it truncates to -2^63 or more
		}
		return fmt.Sprintf("float_int(%s, %s, %s, fault)", x, strconv.FormatFloat(gt, 'e', -1, 64), strconv.FormatFloat(float64(r.Hi)+1, 'e', -1, 64))
	}
	return x // the store rounds a float once, or wraps an integer
}

// TypedElementwise returns the C statement computing element i of a node
// of op (an elementwise row, or cast) of dtype out from stored operands
// a and b (arrays of their dtype in, b unused by a one-operand op), into
// array y; s is a scalar form's float operand. A fault (an integer
// division by zero, a cast with no answer) sets *fault. It is false for
// an op and dtype the C rows do not hold (a float row's expression is the
// kernel renderer's).
func TypedElementwise(op ir.Op, in, out ir.DType, y, a, b string) (string, bool) {
	la, lb := typedLoad(in, a+"[i]"), typedLoad(in, b+"[i]")
	var v string
	switch {
	case op == ir.OpCast:
		v = typedCast(in, out, la)
	case op == ir.OpWhere:
		return "", false
	case in.IsFloat64():
		f, ok := float64Rows[op]
		if !ok {
			return "", false
		}
		v = f(la, lb)
		if out == ir.Bool {
			return y + "[i] = (t_u8)(" + v + ");", true
		}
	case !in.IsFloat():
		if _, ok := codegen.TypedIntRows[op]; !ok {
			return "", false
		}
		v = codegen.RenderIntRow(&intLang, op, in, la, lb)
	default:
		f, ok := floatRows[op]
		if !ok {
			return "", false
		}
		v = f(la, lb)
		if out == ir.Bool {
			return y + "[i] = (t_u8)(" + v + ");", true
		}
	}
	return y + "[i] = " + typedStore(out, v) + ";", true
}

// floatRows are the float rows over float32 computing values that C
// computes exactly as cpuref does (IEEE add, sub, mul, div and the
// comparisons, under -ffp-contract=off); the other float rows are the
// kernel renderer's expressions.
var floatRows = map[ir.Op]func(a, b string) string{
	ir.OpAdd:          func(a, b string) string { return "(float)(" + a + " + " + b + ")" },
	ir.OpSub:          func(a, b string) string { return "(float)(" + a + " - " + b + ")" },
	ir.OpMul:          func(a, b string) string { return "(float)(" + a + " * " + b + ")" },
	ir.OpDiv:          func(a, b string) string { return "(float)(" + a + " / " + b + ")" },
	ir.OpNeg:          func(a, _ string) string { return "(-" + a + ")" },
	ir.OpGreater:      func(a, b string) string { return "(" + a + " > " + b + ")" },
	ir.OpGreaterEqual: func(a, b string) string { return "(" + a + " >= " + b + ")" },
	ir.OpEqual:        func(a, b string) string { return "(" + a + " == " + b + ")" },
	ir.OpMaximum:      func(a, b string) string { return "fmax_ref(" + a + ", " + b + ")" },
	ir.OpMinimum:      func(a, b string) string { return "fmin_ref(" + a + ", " + b + ")" },
	ir.OpRelu:         func(a, _ string) string { return "(" + a + " > 0 ? " + a + " : 0.0f)" },
	ir.OpPositive:     func(a, _ string) string { return "(" + a + " > 0 ? 1.0f : 0.0f)" },
	ir.OpSqrt:         func(a, _ string) string { return "__builtin_sqrtf(" + a + ")" },
}

// float64Rows are the float64 rows over double computing values, each the
// reference's meaning (ir.OpInfo.F64) with its bits: IEEE binary64's
// correctly rounded + - * / and sqrt (C's double, wasm's f64, under
// -ffp-contract=off), the comparisons, math.Max's and math.Min's rules,
// and the reference's own exp, log and pow (cpuref.Exp64, Log64, Pow64:
// exp64, log64 and pow64 of the prelude, never the C library's).
var float64Rows = map[ir.Op]func(a, b string) string{
	ir.OpAdd:          func(a, b string) string { return "(" + a + " + " + b + ")" },
	ir.OpSub:          func(a, b string) string { return "(" + a + " - " + b + ")" },
	ir.OpMul:          func(a, b string) string { return "(" + a + " * " + b + ")" },
	ir.OpDiv:          func(a, b string) string { return "(" + a + " / " + b + ")" },
	ir.OpNeg:          func(a, _ string) string { return "(-" + a + ")" },
	ir.OpGreater:      func(a, b string) string { return "(" + a + " > " + b + ")" },
	ir.OpGreaterEqual: func(a, b string) string { return "(" + a + " >= " + b + ")" },
	ir.OpEqual:        func(a, b string) string { return "(" + a + " == " + b + ")" },
	ir.OpMaximum:      func(a, b string) string { return "fmax64_ref(" + a + ", " + b + ")" },
	ir.OpMinimum:      func(a, b string) string { return "fmin64_ref(" + a + ", " + b + ")" },
	ir.OpSqrt:         func(a, _ string) string { return "__builtin_sqrt(" + a + ")" },
	ir.OpExp:          func(a, _ string) string { return "exp64(" + a + ")" },
	ir.OpLog:          func(a, _ string) string { return "log64(" + a + ")" },
	ir.OpPow:          func(a, b string) string { return "pow64(" + a + ", " + b + ")" },
}

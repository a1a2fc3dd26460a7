package wgsl

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// The typed values in WGSL (issue 32): cpuref's rules (its package doc,
// "Dtypes") written once for WGSL, which has no 64-bit integer. Every
// integer and bool value is computed as an int64 in two 32-bit words,
// vec2<u32>(low, high), sign-extended from its dtype (so one signed
// comparison serves every integer dtype, uint32 included); every float
// dtype is computed in f32. Storage is each dtype's own width in u32
// words: float16, bfloat16, uint8, int8 and bool are packed two or four
// to a word, and each invocation writes whole words (no two write one),
// computing the elements of its word; int64 is two words, low first.
// float16 and bfloat16 are rounded to nearest even by their integer bits
// (ir.F16Bits, ir.BF16Bits), never by pack2x16float, whose rounding and
// overflow WGSL leaves to the implementation. Division and modulo by zero
// and a float-to-integer cast with no answer set a fault word (FaultInteger)
// instead of a value, as cpuref fails the run; MIN / -1 wraps; a shift of
// the width or more gives 0; casts follow ir.Convert.

// Fault codes a typed kernel sets in its fault word: the run has no right
// answer. They are codegen/c's, so both paths read alike.
const (
	FaultInteger = 1 // an integer division or modulo by zero, a cast with no answer (ir.CodeIntegerFault)
	FaultIndex   = 2 // a gather index outside its axis (ir.CodeInvalidInput)
	FaultU64     = 3 // a uint64 result of 2^63 or more, which its int64 carrier does not hold (ir.CodeUnsupported)
)

// typedPrelude is the WGSL of the typed rows: the int64 words' arithmetic
// (t_*), and float16 and bfloat16 by their bits. Every typed shader
// includes it; it calls t_fault, which each shader defines.
const typedPrelude = `// float16 bits of an f32, rounded to nearest even (ir.F16Bits).
fn t_f16_bits(v: f32) -> u32 {
	let b = bitcast<u32>(v);
	let sign = (b >> 16u) & 0x8000u;
	let ex = i32((b >> 23u) & 0xffu);
	let man = b & 0x7fffffu;
	if (ex == 0xff) { return select(sign | 0x7c00u, sign | 0x7e00u | (man >> 13u), man != 0u); }
	let e = ex - 112;
	if (e >= 31) { return sign | 0x7c00u; }
	if (e <= 0) {
		if (e < -10) { return sign; }
		let m = man | 0x800000u;
		let shift = u32(14 - e);
		var q = m >> shift;
		let rem = m & ((1u << shift) - 1u);
		let half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u) == 1u)) { q = q + 1u; }
		return sign | q;
	}
	var q = (u32(e) << 10u) | (man >> 13u);
	let rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u) == 1u)) { q = q + 1u; }
	return sign | q;
}
// The f32 of float16 bits h, exactly, by bits (a subnormal normalised).
fn t_f16_float(h: u32) -> f32 {
	let sign = (h & 0x8000u) << 16u;
	let ex = (h >> 10u) & 0x1fu;
	let man = h & 0x3ffu;
	if (ex == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (man << 13u)); }
	if (ex == 0u) {
		if (man == 0u) { return bitcast<f32>(sign); }
		let p = 31u - countLeadingZeros(man);
		return bitcast<f32>(sign | ((p + 103u) << 23u) | ((man << (23u - p)) & 0x7fffffu));
	}
	return bitcast<f32>(sign | ((ex + 112u) << 23u) | (man << 13u));
}
// bfloat16 bits of an f32, rounded to nearest even (ir.BF16Bits).
fn t_bf16_bits(v: f32) -> u32 {
	let b = bitcast<u32>(v);
	if ((b & 0x7fffffffu) > 0x7f800000u) { return (b >> 16u) | 0x40u; }
	return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
fn t_bf16_float(h: u32) -> f32 { return bitcast<f32>(h << 16u); }

fn t_of_i32(x: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0)); }
fn t_isneg(a: vec2<u32>) -> bool { return (a.y >> 31u) == 1u; }
fn t_iszero(a: vec2<u32>) -> bool { return (a.x | a.y) == 0u; }
fn t_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
	let lo = a.x + b.x;
	return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn t_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
	return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
fn t_neg(a: vec2<u32>) -> vec2<u32> { return t_sub(vec2<u32>(0u, 0u), a); }
fn t_abs(a: vec2<u32>) -> vec2<u32> { return select(a, t_neg(a), t_isneg(a)); }
// The 64-bit product of two u32, by 16-bit halves.
fn t_mul32(a: u32, b: u32) -> vec2<u32> {
	let a0 = a & 0xffffu;
	let a1 = a >> 16u;
	let b0 = b & 0xffffu;
	let b1 = b >> 16u;
	let p00 = a0 * b0;
	let p01 = a0 * b1;
	let p10 = a1 * b0;
	let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
	return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn t_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
	let p = t_mul32(a.x, b.x);
	return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
// Signed and unsigned orders.
fn t_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
	if (a.y != b.y) { return bitcast<i32>(a.y) < bitcast<i32>(b.y); }
	return a.x < b.x;
}
fn t_ult(a: vec2<u32>, b: vec2<u32>) -> bool {
	if (a.y != b.y) { return a.y < b.y; }
	return a.x < b.x;
}
// Shifts by s < 64.
fn t_shl(a: vec2<u32>, s: u32) -> vec2<u32> {
	if (s == 0u) { return a; }
	if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }
	return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}
fn t_shr(a: vec2<u32>, s: u32) -> vec2<u32> {
	if (s == 0u) { return a; }
	if (s >= 32u) { return vec2<u32>(a.y >> (s - 32u), 0u); }
	return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s);
}
struct t_qr { q: vec2<u32>, r: vec2<u32> }
// Unsigned division of n by d != 0, d <= 2^63 (a magnitude), restoring.
fn t_udivmod(n: vec2<u32>, d: vec2<u32>) -> t_qr {
	if (n.y == 0u && d.y == 0u) { return t_qr(vec2<u32>(n.x / d.x, 0u), vec2<u32>(n.x % d.x, 0u)); }
	var q = vec2<u32>(0u, 0u);
	var r = vec2<u32>(0u, 0u);
	for (var i = 63u; ; i = i - 1u) {
		let bit = (select(n.x, n.y, i >= 32u) >> (i & 31u)) & 1u;
		r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
		if (!t_ult(r, d)) {
			r = t_sub(r, d);
			if (i >= 32u) { q.y = q.y | (1u << (i - 32u)); } else { q.x = q.x | (1u << i); }
		}
		if (i == 0u) { break; }
	}
	return t_qr(q, r);
}
// ONNX's Div of integers (truncated) and Mod with fmod 0 (the divisor's
// sign), b != 0; MIN / -1 wraps to MIN.
fn t_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
	let qr = t_udivmod(t_abs(a), t_abs(b));
	return select(qr.q, t_neg(qr.q), t_isneg(a) != t_isneg(b));
}
fn t_mod(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
	let qr = t_udivmod(t_abs(a), t_abs(b));
	var r = select(qr.r, t_neg(qr.r), t_isneg(a));
	if (!t_iszero(r) && t_isneg(r) != t_isneg(b)) { r = t_add(r, b); }
	return r;
}
// An integer to an f32 of p significant bits, one rounding from its exact
// value (ir.IntToFloat), built by bits; the store rounds it to a narrow
// float, which is exact or overflows.
fn t_int_float(v: vec2<u32>, p: u32) -> f32 {
	let neg = t_isneg(v);
	var u = t_abs(v);
	if (t_iszero(u)) { return 0.0; }
	let n = select(32u - countLeadingZeros(u.x), 64u - countLeadingZeros(u.y), u.y != 0u);
	var e = 0u;
	if (n > p) {
		let shift = n - p;
		var q = t_shr(u, shift);
		let rem = t_sub(u, t_shl(q, shift));
		let half = t_shl(vec2<u32>(1u, 0u), shift - 1u);
		if (t_ult(half, rem) || (all(rem == half) && (q.x & 1u) == 1u)) { q = t_add(q, vec2<u32>(1u, 0u)); }
		u = q;
		e = shift;
	}
	let m = u.x;
	let bl = 32u - countLeadingZeros(m);
	var man = 0u;
	if (bl <= 24u) { man = m << (24u - bl); } else { man = m >> (bl - 24u); }
	return bitcast<f32>(select(0u, 0x80000000u, neg) | ((bl + e + 126u) << 23u) | (man & 0x7fffffu));
}
// An f32 to an integer truncated toward zero, by bits (ir.FloatToInt):
// hi is the dtype's greatest value, nlo the magnitude of its least; a
// NaN, an infinity or a value outside is a fault at element e.
fn t_float_int(v: f32, hi: vec2<u32>, nlo: vec2<u32>, e: u32) -> vec2<u32> {
	let b = bitcast<u32>(v);
	let ex = (b >> 23u) & 0xffu;
	if (ex < 127u) { return vec2<u32>(0u, 0u); }
	if (ex >= 191u) { t_fault(e, 1u); return vec2<u32>(0u, 0u); }
	let m = vec2<u32>((b & 0x7fffffu) | 0x800000u, 0u);
	var mag = m;
	if (ex >= 150u) { mag = t_shl(m, ex - 150u); } else { mag = t_shr(m, 150u - ex); }
	if ((b >> 31u) == 1u) {
		if (t_ult(nlo, mag)) { t_fault(e, 1u); return vec2<u32>(0u, 0u); }
		return t_neg(mag);
	}
	if (t_ult(hi, mag)) { t_fault(e, 1u); return vec2<u32>(0u, 0u); }
	return mag;
}
`

// computeType is the WGSL type a value of t is computed in.
func computeType(t ir.DType) string {
	if t.IsFloat() {
		return "f32"
	}
	return "vec2<u32>"
}

// zeroOf is computeType's zero.
func zeroOf(t ir.DType) string {
	if t.IsFloat() {
		return "0.0"
	}
	return "vec2<u32>(0u, 0u)"
}

// i64Lit renders an int64 as its two words.
func i64Lit(v int64) string {
	return fmt.Sprintf("vec2<u32>(0x%08xu, 0x%08xu)", uint32(v), uint32(uint64(v)>>32))
}

// loadFn renders "fn <name>(e: u32) -> T": element e of array buf of dtype
// t as its computing value.
func loadFn(name, buf string, t ir.DType) string {
	var x string
	switch t {
	case ir.F32:
		x = "bitcast<f32>(" + buf + "[e])"
	case ir.F16:
		x = "t_f16_float((" + buf + "[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu)"
	case ir.BF16:
		x = "t_bf16_float((" + buf + "[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu)"
	case ir.I32:
		x = "t_of_i32(bitcast<i32>(" + buf + "[e]))"
	case ir.U32:
		x = "vec2<u32>(" + buf + "[e], 0u)"
	case ir.I64, ir.U64:
		x = "vec2<u32>(" + buf + "[2u * e], " + buf + "[2u * e + 1u])"
	case ir.U8, ir.Bool:
		x = "vec2<u32>((" + buf + "[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu, 0u)"
	case ir.I8:
		x = "t_of_i32(extractBits(bitcast<i32>(" + buf + "[e >> 2u]), (e & 3u) * 8u, 8u))"
	case ir.U16:
		x = "vec2<u32>((" + buf + "[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu, 0u)"
	case ir.I16:
		x = "t_of_i32(extractBits(bitcast<i32>(" + buf + "[e >> 1u]), (e & 1u) * 16u, 16u))"
	default:
		panic("wgsl: dtype " + t.String() + " has no load (typed.go's loadFn)")
	}
	return fmt.Sprintf("fn %s(e: u32) -> %s { return %s; }\n", name, computeType(t), x)
}

// storeBits renders the bits of computing value v of dtype t in its
// storage, in the low Size·8 bits of a u32 (an int64's low word): the
// integer dtypes wrapped (their low bits), bool as v != 0, the narrow
// floats rounded to nearest even.
func storeBits(t ir.DType, v string) string {
	switch t {
	case ir.F32:
		return "bitcast<u32>(" + v + ")"
	case ir.F16:
		return "t_f16_bits(" + v + ")"
	case ir.BF16:
		return "t_bf16_bits(" + v + ")"
	case ir.Bool:
		return "select(0u, 1u, !t_iszero(" + v + "))"
	case ir.U8, ir.I8:
		return "(" + v + ".x & 0xffu)"
	case ir.U16, ir.I16:
		return "(" + v + ".x & 0xffffu)"
	}
	return v + ".x"
}

// perWord is how many elements of t one storage word holds (int64: one
// element in two words).
func perWord(t ir.DType) int { return max(1, 4/t.Size()) }

// TypedWords returns how many u32 words n elements of t take in storage,
// at least one (WebGPU has no empty buffers).
func TypedWords(t ir.DType, n int) int { return max(1, (n*t.Size()+3)/4) }

// PackTyped returns v in its dtype's storage: TypedWords·4 bytes, little
// endian, the narrow floats as their nearest-even bits.
func PackTyped(v cpuref.Value) []byte {
	n := v.Len()
	out := make([]byte, 4*TypedWords(v.DType, n))
	for k := range n {
		switch t := v.DType; t {
		case ir.F32:
			binary.LittleEndian.PutUint32(out[4*k:], math.Float32bits(v.F[k]))
		case ir.F16:
			binary.LittleEndian.PutUint16(out[2*k:], ir.F16Bits(v.F[k]))
		case ir.BF16:
			binary.LittleEndian.PutUint16(out[2*k:], ir.BF16Bits(v.F[k]))
		case ir.I64, ir.U64:
			binary.LittleEndian.PutUint64(out[8*k:], uint64(v.I[k]))
		case ir.I32, ir.U32:
			binary.LittleEndian.PutUint32(out[4*k:], uint32(v.I[k]))
		case ir.I16, ir.U16:
			binary.LittleEndian.PutUint16(out[2*k:], uint16(v.I[k]))
		default: // one byte
			out[k] = byte(v.I[k])
		}
	}
	return out
}

// UnpackTyped returns the n elements of dtype t that storage b holds.
func UnpackTyped(t ir.DType, n int, b []byte) cpuref.Value {
	v := cpuref.Value{DType: t}
	if t.IsFloat() {
		v.F = make([]float32, n)
	} else {
		v.I = make([]int64, n)
	}
	for k := range n {
		switch t {
		case ir.F32:
			v.F[k] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:]))
		case ir.F16:
			v.F[k] = ir.F16Float(binary.LittleEndian.Uint16(b[2*k:]))
		case ir.BF16:
			v.F[k] = ir.BF16Float(binary.LittleEndian.Uint16(b[2*k:]))
		case ir.I64, ir.U64:
			v.I[k] = int64(binary.LittleEndian.Uint64(b[8*k:]))
		case ir.I32:
			v.I[k] = int64(int32(binary.LittleEndian.Uint32(b[4*k:])))
		case ir.U32:
			v.I[k] = int64(binary.LittleEndian.Uint32(b[4*k:]))
		case ir.I8:
			v.I[k] = int64(int8(b[k]))
		case ir.I16:
			v.I[k] = int64(int16(binary.LittleEndian.Uint16(b[2*k:])))
		case ir.U16:
			v.I[k] = int64(binary.LittleEndian.Uint16(b[2*k:]))
		default: // uint8, bool
			v.I[k] = int64(b[k])
		}
	}
	return v
}

func boolOf(c string) string { return "vec2<u32>(select(0u, 1u, " + c + "), 0u)" }

// intLang renders the typed integer rows (codegen.TypedIntRows) over int64
// values as two words, vec2<u32>(low, high), with the prelude's t_*.
var intLang = codegen.IntLang{
	codegen.IConst:  func(x *codegen.IntX, _ []string) string { return i64Lit(x.Val) },
	codegen.IAdd:    wcall("t_add"),
	codegen.ISub:    wcall("t_sub"),
	codegen.IMul:    wcall("t_mul"),
	codegen.INeg:    wcall("t_neg"),
	codegen.IDiv:    wcall("t_div"),
	codegen.IMod:    wcall("t_mod"),
	codegen.IAnd:    winfix(" & "),
	codegen.IOr:     winfix(" | "),
	codegen.IXor:    winfix(" ^ "),
	codegen.IBitNot: func(_ *codegen.IntX, a []string) string { return "(~" + a[0] + ")" },
	codegen.IShl:    func(_ *codegen.IntX, a []string) string { return "t_shl(" + a[0] + ", min(" + word(a[1]) + ", 63u))" },
	codegen.IShr:    func(_ *codegen.IntX, a []string) string { return "t_shr(" + a[0] + ", min(" + word(a[1]) + ", 63u))" },
	codegen.ILt:     wcall("t_lt"),
	codegen.IEq:     func(_ *codegen.IntX, a []string) string { return "all(" + a[0] + " == " + a[1] + ")" },
	codegen.INot:    func(_ *codegen.IntX, a []string) string { return "!" + a[0] },
	codegen.ISelect: func(_ *codegen.IntX, a []string) string { return "select(" + a[2] + ", " + a[1] + ", " + a[0] + ")" },
	codegen.IBool:   func(_ *codegen.IntX, a []string) string { return boolOf(a[0]) },
	codegen.IArg:    func(*codegen.IntX, []string) string { panic("codegen/wgsl: an operand is rendered by IntLang.Render") },
}

func wcall(f string) func(*codegen.IntX, []string) string {
	return func(_ *codegen.IntX, a []string) string { return f + "(" + strings.Join(a, ", ") + ")" }
}

func winfix(op string) func(*codegen.IntX, []string) string {
	return func(_ *codegen.IntX, a []string) string { return "(" + a[0] + op + a[1] + ")" }
}

// word is the low word of value v.
func word(v string) string {
	for _, r := range v {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "(" + v + ").x"
		}
	}
	return v + ".x"
}

func init() {
	if err := codegen.CheckIntLang(&intLang); err != nil {
		panic(err)
	}
}

// castExpr renders ONNX's Cast (ir.Convert) of computing value x of dtype
// from to dtype to, as a computing value of to; e names the element, for
// a fault.
func castExpr(from, to ir.DType, x string) string {
	switch r := codegen.TypedCast(from, to); r.Kind {
	case codegen.CastFloatBool:
		return boolOf("(bitcast<u32>(" + x + ") & 0x7fffffffu) != 0u")
	case codegen.CastIntBool:
		return boolOf("!t_iszero(" + x + ")")
	case codegen.CastIntFloat:
		return fmt.Sprintf("t_int_float(%s, %du)", x, r.Bits)
	case codegen.CastFloatInt:
		return fmt.Sprintf("t_float_int(%s, %s, %s, e)", x, i64Lit(r.Hi), i64Lit(-r.Lo))
	}
	return x
}

// FaultMode says where a typed kernel records a fault: in the word of its
// node (a graph's run, which reports the first node that faulted), or in
// the word of each element (the row tests, which compare faults element by
// element).
type FaultMode int

// The fault modes.
const (
	FaultPerNode FaultMode = iota
	FaultPerElement
)

// TypedNode returns the shader computing node i of the validated typed
// graph g into its own storage, with cpuref's bits: its bindings are the
// node's distinct operands (read-only, in order of first use), its output,
// then the fault words (read-write, atomic), then the Params uniform. A
// fault sets word i (FaultPerNode) or the element's (FaultPerElement) to
// the largest code raised. An op or dtype it does not hold is refused
// with unsupported, naming the node. Inputs have no kernel.
func TypedNode(g *ir.Graph, i int, mode FaultMode) (codegen.Shader, error) {
	n := &g.Nodes[i]
	var args []int // distinct operands, binding order
	bind := make([]int, len(n.Args))
	for k, a := range n.Args {
		bind[k] = -1
		for j, b := range args {
			if b == int(a) {
				bind[k] = j
			}
		}
		if bind[k] < 0 {
			bind[k] = len(args)
			args = append(args, int(a))
		}
	}
	m := n.Shape.Len()
	ld := func(k int, e string) string { return fmt.Sprintf("ld%d(%s)", bind[k], e) }
	var body []string    // value(e)'s statements
	var defs []string    // the functions a float row calls
	var consts []float32 // its constants, params.k's slots
	info := n.Op.Info()
	unsupported := func() error {
		in := n.DType
		if len(n.Args) > 0 {
			in = g.Nodes[n.Args[0]].DType
		}
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the WGSL typed path does not hold it yet", n.Op, in)
	}
	switch {
	case n.Op == ir.OpInput:
		return codegen.Shader{}, ir.Errorf(ir.CodeInternal, i, "op", "an input has no kernel")
	case n.Op == ir.OpFull:
		if n.DType.IsFloat() { // an infinity or NaN from params.zero: no constant expression may be one
			body = append(body, fmt.Sprintf("return bitcast<f32>(0x%08xu | bitcast<u32>(params.zero));", math.Float32bits(n.Scalar)))
		} else {
			body = append(body, "return "+i64Lit(n.Ints[0])+";")
		}
	case codegen.TypedMoves[n.Op] != nil: // a structural row: where each element comes from
		mv, _ := codegen.TypedMoveOf(g, i)
		src := codegen.Index(Lang, mv.Source, "e")
		if !mv.Indexed {
			body = append(body, "return "+ld(0, src)+";")
			break
		}
		body = append(body,
			"let v = "+ld(1, codegen.Index(Lang, mv.Index, "e"))+";",
			indexCheck(mv.Bound, n.DType),
			fmt.Sprintf("return %s;", ld(0, fmt.Sprintf("(%s) + jj * %du", src, mv.Step))))
	case codegen.TypedScatters[n.Op] != nil: // scatter.go
		lines, sdefs, sconsts, err := scatterBody(g, i, ld)
		if err != nil {
			return codegen.Shader{}, err
		}
		body, defs, consts = lines, sdefs, sconsts
	case n.Op == ir.OpWhere:
		body = append(body, fmt.Sprintf("return select(%s, %s, !t_iszero(%s));", ld(2, "e"), ld(1, "e"), ld(0, "e")))
	case n.Op.IsReduction():
		lines, err := typedReduce(g, i)
		if err != nil {
			return codegen.Shader{}, err
		}
		body = lines
		if n.DType.IsFloat() {
			comb, cdefs, cconsts := codegen.ExactCombine(Lang, n.Op, "a", "b", "m")
			defs, consts = cdefs, cconsts
			defs = append(defs, "fn t_combine(a: f32, b: f32) -> f32 {")
			defs = append(defs, indentLines(comb)...)
			defs = append(defs, "\treturn "+roundTo(n.DType, "m")+";", "}")
		}
	case n.Op == ir.OpCast:
		body = append(body, "let a = "+ld(0, "e")+";", "return "+castExpr(g.Nodes[n.Args[0]].DType, n.DType, "a")+";")
	case info.Elementwise && len(n.Args) >= 1 && len(n.Args) <= 2:
		for _, a := range n.Args {
			if g.Nodes[a].Shape.Len() != m {
				return codegen.Shader{}, unsupported()
			}
		}
		in := g.Nodes[n.Args[0]].DType
		body = append(body, "let a = "+ld(0, "e")+";")
		b := "a"
		if len(n.Args) == 2 {
			body = append(body, "let b = "+ld(1, "e")+";")
			b = "b"
		}
		if !in.IsFloat() {
			row, ok := codegen.TypedIntRows[n.Op]
			if !ok || info.ScalarOf != 0 {
				return codegen.Shader{}, unsupported()
			}
			if row.Guard {
				body = append(body, fmt.Sprintf("if (t_iszero(b)) { t_fault(e, %du); return vec2<u32>(0u, 0u); }", FaultInteger))
			}
			body = append(body, "return "+codegen.RenderIntRow(&intLang, n.Op, in, "a", b)+";")
			break
		}
		if info.Expr == nil {
			return codegen.Shader{}, unsupported()
		}
		// The float row as every float32 kernel renders it (constants in
		// params.k), over the loaded f32 values, through codegen.Exact:
		// subnormal operands and results kept where the GPU flushes them.
		lines, fdefs, fconsts := codegen.ExactRow(Lang, n.Op, n.Scalar, "a", b, "v2")
		body = append(body, lines...)
		defs, consts = fdefs, fconsts
		if n.DType == ir.Bool {
			body = append(body, "return "+boolOf("v2 != 0.0")+";")
		} else {
			body = append(body, "return v2;")
		}
	default:
		return codegen.Shader{}, unsupported()
	}
	return typedShader(g, i, args, body, defs, consts, mode), nil
}

// indexCheck renders the check of index v (int64 words) into an axis of
// d < 2^31 elements, ONNX's [-d, d), a fault and t's zero outside it, and
// jj, the index wrapped into [0, d): v's high word is 0 (v in [0, d)) or
// all ones (v in [-d, 0), its low word at least 2^32 - d).
func indexCheck(d int, t ir.DType) string {
	return fmt.Sprintf("if (!((v.y == 0u && v.x < %du) || (v.y == 0xffffffffu && v.x >= %du))) { t_fault(e, %du); return %s; }\n"+
		"let jj = select(v.x + %du, v.x, v.y == 0u);", d, uint32(-int64(d)), FaultIndex, zeroOf(t), d)
}

// typedReduce returns value(e)'s statements for reduction node i: output
// e's leaves combined, an integer dtype's in order by the row's Combine
// (wrapping add, max: any order is the tree's value, and the store wraps),
// a float dtype's by the reference's contiguous pairwise tree (a binary
// counter over a stack of complete subtrees, then the subtrees left from
// the smallest up, as rows does), each combination rounded to the dtype.
// Mesa's llvmpipe (lavapipe, the CI's WebGPU) ends every loop of an
// invocation silently once the loops together have run 65535 iterations
// (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, shared by every loop of a
// shader): a loop of 10^6 iterations counting in a float gave 65535 there,
// and a float16 sum of 2^15 ones, one invocation's loop over the leaves,
// gave 0 after 21848 leaves (their outer, inner and exit iterations are
// 65536). A float reduction runs about three iterations a leaf, and an
// invocation computes the elements of one storage word (two for float16
// and bfloat16, four for the 1-byte dtypes at one iteration a leaf), so no
// invocation may loop over more than SerialLeaves leaves: 49152 iterations
// at most.
//
// A reduction of at most SerialLeaves leaves an output is one invocation's
// loop; a larger one is split across a workgroup of WideThreads
// invocations, each reducing a block of P/WideThreads contiguous leaves (P
// the power of two at or above the leaves; leaves past the end are the
// op's identity, which every combination keeps exactly), and then the
// blocks' values pairwise in workgroup memory: the reference's tree over
// P leaves. MaxTypedLeaves bounds it; a larger reduction is refused by
// name.
const (
	SerialLeaves   = 8192
	WideThreads    = 256
	MaxTypedLeaves = WideThreads * SerialLeaves
)

func typedReduce(g *ir.Graph, i int) ([]string, error) {
	n := &g.Nodes[i]
	a := g.Nodes[n.Args[0]]
	red := ir.ReductionOf(a.Shape, n.Shape)
	leaf := "ld0(" + codegen.LeafIndex(Lang, red, "e", "r") + ")"
	comb := n.Op.Info().Combine
	if red.Leaves == 0 {
		return nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v over no leaves: the WGSL typed path does not hold it yet", n.Op, a.DType)
	}
	if red.Leaves > MaxTypedLeaves {
		return nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v over %d leaves: the WGSL typed path reduces at most %d per output so far (lavapipe ends an invocation's loops after 65535 iterations in all)", n.Op, a.DType, red.Leaves, MaxTypedLeaves)
	}
	if red.Leaves > SerialLeaves {
		return wideReduce(g, i, red, leaf)
	}
	if !a.DType.IsFloat() {
		return []string{
			"let r = 0u;",
			"var acc = " + leaf + ";",
			fmt.Sprintf("for (var r = 1u; r < %du; r++) { let v = %s; acc = %s; }", red.Leaves, leaf, codegen.RenderIntRow(&intLang, comb, a.DType, "acc", "v")),
			"return acc;",
		}, nil
	}
	return append(codegen.CounterTree(Lang, "f32", red.Leaves, leaf, "t_combine"), "return acc;"), nil
}

// wideReduce returns part(e, t)'s statements for reduction node i of
// more than SerialLeaves leaves an output: thread t's block of output e,
// B = P/WideThreads contiguous leaves from t·B, by the reference's tree
// (a float's by the binary counter, then its subtrees from the smallest
// up; an integer's in order), the op's identity where the block is past
// the leaves. typedShader's wide main combines the blocks.
func wideReduce(g *ir.Graph, i int, red ir.Reduction, leaf string) ([]string, error) {
	n := &g.Nodes[i]
	a := g.Nodes[n.Args[0]]
	p, blk := codegen.SumBlock(red.Leaves, WideThreads)
	id, err := identityOf(n, i, a.DType)
	if err != nil {
		return nil, err
	}
	lines := []string{
		fmt.Sprintf("let lo = t * %du;", blk),
		fmt.Sprintf("if (lo >= %du) { return %s; }", red.Leaves, id),
		fmt.Sprintf("let nb = min(%du, %du - lo);", blk, red.Leaves),
	}
	if !a.DType.IsFloat() {
		return append(lines,
			"var r = lo;",
			"var acc = "+leaf+";",
			"for (var q = 1u; q < nb; q++) { r = lo + q; let v = "+leaf+"; acc = "+codegen.RenderIntRow(&intLang, n.Op.Info().Combine, a.DType, "acc", "v")+"; }",
			"return acc;"), nil
	}
	levels := codegen.Log2(p/WideThreads) + 1
	lines = append(lines,
		Lang.Array("f32", "st", levels),
		"for (var q = 0u; q < nb; q++) {",
		"\tlet r = lo + q;",
		"\tvar v = "+leaf+";")
	for _, s := range codegen.CounterPush(Lang, "v", "q", "t_combine") {
		lines = append(lines, "\t"+s)
	}
	return append(lines, "}",
		"var acc = "+id+";",
		"var have = false;",
		fmt.Sprintf("for (var l = 0u; l < %du; l++) {", levels),
		"\tif (((nb >> l) & 1u) == 1u) {",
		"\t\tacc = select(st[l], t_combine(st[l], acc), have);",
		"\t\thave = true;",
		"\t}",
		"}",
		"return acc;"), nil
}

// identityOf renders the identity of reduction n's combination over
// operands of dtype t as a computing value: the row's float (ir.OpInfo's
// Identity, through params.zero: WGSL refuses an infinite constant) or
// the integer that leaves every value of t alone.
func identityOf(n *ir.Node, i int, t ir.DType) (string, error) {
	info := n.Op.Info()
	if t.IsFloat() {
		return fmt.Sprintf("bitcast<f32>(0x%08xu | bitcast<u32>(params.zero))", info.Identity), nil
	}
	switch info.Combine {
	case ir.OpAdd:
		return i64Lit(0), nil
	case ir.OpMul:
		return i64Lit(1), nil
	case ir.OpMaximum:
		return i64Lit(math.MinInt64), nil
	case ir.OpMinimum:
		return i64Lit(math.MaxInt64), nil
	}
	return "", ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the WGSL typed path has no identity for it", n.Op, t)
}

// roundTo renders float computing value v rounded to float dtype t.
func roundTo(t ir.DType, v string) string {
	switch t {
	case ir.F16:
		return "t_f16_float(t_f16_bits(" + v + "))"
	case ir.BF16:
		return "t_bf16_float(t_bf16_bits(" + v + "))"
	}
	return v
}

// typedShader assembles node i's shader: the prelude, the loads of its
// operands (args), value(e) (body), and main, one invocation per storage
// word (int64: per element), packing the elements of its word.
func typedShader(g *ir.Graph, i int, args []int, body, defs []string, consts []float32, mode FaultMode) codegen.Shader {
	n := &g.Nodes[i]
	m := n.Shape.Len()
	s := codegen.Shader{Name: fmt.Sprintf("typed%d_%v", i, n.Op), Entry: "main"}
	var b strings.Builder
	b.WriteString("// Code generated by gpucc. DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// typed node %d: %v -> %v %v\n\n", i, n.Op, n.DType, n.Shape)
	s.Params = typedParams(consts)
	fmt.Fprintf(&b, "struct Params { one: f32, zero: f32, k: array<vec4<f32>, %d> }\n\n", max(1, (len(consts)+3)/4))
	for j := range args {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> in%d: array<u32>;\n", j, j)
		s.Bindings = append(s.Bindings, codegen.ReadOnly)
	}
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> out0: array<u32>;\n", len(args))
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> fault: array<atomic<u32>>;\n", len(args)+1)
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<uniform> params: Params;\n\n", len(args)+2)
	s.Bindings = append(s.Bindings, codegen.ReadWrite, codegen.ReadWrite, codegen.Uniform)
	if mode == FaultPerElement {
		b.WriteString("fn t_fault(e: u32, code: u32) { atomicMax(&fault[e], code); }\n")
	} else {
		fmt.Fprintf(&b, "fn t_fault(e: u32, code: u32) { atomicMax(&fault[%du], code); }\n", i)
	}
	b.WriteString(typedPrelude)
	b.WriteString("\n")
	for j, a := range args {
		b.WriteString(loadFn(fmt.Sprintf("ld%d", j), fmt.Sprintf("in%d", j), g.Nodes[a].DType))
	}
	b.WriteString(codegen.Indent(defs, 0))
	if wide(g, i) {
		wideMain(&b, &s, g, i, body)
		s.Source = b.String()
		return s
	}
	fmt.Fprintf(&b, "\nfn value(e: u32) -> %s {\n", computeType(n.DType))
	b.WriteString(codegen.Indent(body, 1))
	b.WriteString("}\n\n")
	per := perWord(n.DType)
	threads := (m + per - 1) / per
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D(max(1, (threads+ElementwiseThreads-1)/ElementwiseThreads), maxGroupsPerDim)
	fmt.Fprintf(&b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(&b, "\tlet w = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(&b, "\tif (w >= %du) { return; }\n", threads)
	switch {
	case n.DType.Size() == 8:
		b.WriteString("\tlet v = value(w);\n")
		if codegen.CheckedU64(n) { // uint64's carrier: a result's sign bit is 2^63
			fmt.Fprintf(&b, "\tif (t_isneg(v)) { t_fault(w, %du); }\n", FaultU64)
		}
		b.WriteString("\tout0[2u * w] = v.x;\n\tout0[2u * w + 1u] = v.y;\n")
	case per == 1:
		fmt.Fprintf(&b, "\tout0[w] = %s;\n", storeBits(n.DType, "value(w)"))
	default:
		bits := 32 / per
		fmt.Fprintf(&b, "\tvar x = %s;\n", storeBits(n.DType, fmt.Sprintf("value(%du * w)", per)))
		for l := 1; l < per; l++ {
			fmt.Fprintf(&b, "\tif (%du * w + %du < %du) { x = x | (%s << %du); }\n", per, l, m, storeBits(n.DType, fmt.Sprintf("value(%du * w + %du)", per, l)), bits*l)
		}
		b.WriteString("\tout0[w] = x;\n")
	}
	b.WriteString("}\n")
	s.Source = b.String()
	return s
}

// wide reports whether node i is a reduction over more than SerialLeaves
// leaves an output, which a workgroup computes (see SerialLeaves).
func wide(g *ir.Graph, i int) bool {
	n := &g.Nodes[i]
	return n.Op.IsReduction() && ir.ReductionOf(g.Nodes[n.Args[0]].Shape, n.Shape).Leaves > SerialLeaves
}

// wideMain writes part(e, t) (body: wideReduce's) and the main of a wide
// reduction: one workgroup of WideThreads a storage word (an int64: an
// element), which for each element of the word puts thread t's block in
// workgroup memory, combines the blocks pairwise (the upper levels of the
// reference's tree, the earlier block on the left), and has thread 0
// store the word. Every barrier is in uniform control flow: w and the
// element are the workgroup's.
func wideMain(b *strings.Builder, s *codegen.Shader, g *ir.Graph, i int, body []string) {
	n := &g.Nodes[i]
	m := n.Shape.Len()
	ct := computeType(n.DType)
	fmt.Fprintf(b, "\nfn part(e: u32, t: u32) -> %s {\n", ct)
	b.WriteString(codegen.Indent(body, 1))
	b.WriteString("}\n\n")
	id, _ := identityOf(n, i, g.Nodes[n.Args[0]].DType) // wideReduce checked it
	combine := func(x, y string) string {
		if n.DType.IsFloat() {
			return "t_combine(" + x + ", " + y + ")"
		}
		return codegen.RenderIntRow(&intLang, n.Op.Info().Combine, n.DType, x, y)
	}
	per := perWord(n.DType)
	words := (m + per - 1) / per
	s.Workgroup = [3]int{WideThreads, 1, 1}
	s.Groups = codegen.Groups1D(words, maxGroupsPerDim)
	fmt.Fprintf(b, "var<workgroup> sh: array<%s, %d>;\n\n", ct, WideThreads)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", WideThreads)
	b.WriteString("fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	b.WriteString("\tlet w = wid.x + wid.y * nwg.x;\n")
	fmt.Fprintf(b, "\tif (w >= %du) { return; }\n", words)
	b.WriteString("\tlet t = lid.x;\n\tvar x = 0u;\n")
	for l := range per {
		e := fmt.Sprintf("%du * w + %du", per, l)
		if per == 1 {
			e = "w"
		}
		fmt.Fprintf(b, "\t{\n\t\tvar v = %s;\n", id)
		fmt.Fprintf(b, "\t\tif (%s < %du) { v = part(%s, t); }\n", e, m, e)
		b.WriteString("\t\tsh[t] = v;\n\t\tworkgroupBarrier();\n")
		for st := 1; st < WideThreads; st *= 2 {
			fmt.Fprintf(b, "\t\tif ((t & %du) == 0u) { sh[t] = %s; }\n\t\tworkgroupBarrier();\n", 2*st-1, combine("sh[t]", fmt.Sprintf("sh[t + %du]", st)))
		}
		switch {
		case n.DType.Size() == 8:
			if codegen.CheckedU64(n) {
				fmt.Fprintf(b, "\t\tif (t == 0u && t_isneg(sh[0])) { t_fault(w, %du); }\n", FaultU64)
			}
			b.WriteString("\t\tif (t == 0u) { out0[2u * w] = sh[0].x; out0[2u * w + 1u] = sh[0].y; }\n")
		default:
			fmt.Fprintf(b, "\t\tif (t == 0u) { x = x | (%s << %du); }\n", storeBits(n.DType, "sh[0]"), 32/per*l)
		}
		b.WriteString("\t\tworkgroupBarrier();\n\t}\n")
	}
	if n.DType.Size() != 8 {
		b.WriteString("\tif (t == 0u) { out0[w] = x; }\n")
	}
	b.WriteString("}\n")
}

// typedParams is the uniform block of a typed shader: one = 1.0, zero =
// 0.0 and the float constants of its row (params.k).
func typedParams(consts []float32) []byte {
	rows := 1 + max(1, (len(consts)+3)/4) // WGSL arrays are never empty
	out := make([]byte, 16*rows)
	binary.LittleEndian.PutUint32(out, math.Float32bits(1))
	for i, c := range consts {
		binary.LittleEndian.PutUint32(out[16+4*i:], math.Float32bits(c))
	}
	return out
}

// indentLines prefixes each line with a tab.
func indentLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, ln := range lines {
		out[i] = "\t" + ln
	}
	return out
}

package glsl

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// The typed values in GLSL ES 3.00 (issue 32), as codegen/wgsl's typed.go
// computes them in WGSL: every integer and bool value as an int64 in two
// 32-bit words, uvec2(low, high), sign-extended from its dtype; float
// dtypes in float; float16 and bfloat16 rounded to nearest even by their
// bits. Storage is each dtype's own width in u32 words, one word per texel
// of an R32UI texture (Layout of the word count): float16, bfloat16,
// uint8, int8 and bool packed two or four to a word, int64 two words, low
// first. Each fragment computes one word of its node (the elements packed
// in it) and, in a second R32UI draw buffer, the largest fault code its
// elements raised (FaultInteger, FaultIndex; 0 for none): GLSL ES 3.00
// has no atomics, so the runtime reads each node's fault texture. The
// shaders use unsigned arithmetic only (no int conversions of values past
// 2^31, which GLSL ES leaves undefined).

// Fault codes a typed pass writes to its fault draw buffer: codegen/c's
// and codegen/wgsl's.
const (
	FaultInteger = 1
	FaultIndex   = 2
)

const typedPrelude = `uint t_faultv = 0u;
void t_fault(uint e, uint code) { t_faultv = max(t_faultv, code); }
uint t_clz(uint x) {
	if (x == 0u) { return 32u; }
	uint n = 0u;
	if ((x & 0xffff0000u) == 0u) { n += 16u; x <<= 16u; }
	if ((x & 0xff000000u) == 0u) { n += 8u; x <<= 8u; }
	if ((x & 0xf0000000u) == 0u) { n += 4u; x <<= 4u; }
	if ((x & 0xc0000000u) == 0u) { n += 2u; x <<= 2u; }
	if ((x & 0x80000000u) == 0u) { n += 1u; }
	return n;
}
uint t_f16_bits(float v) {
	uint b = floatBitsToUint(v);
	uint sign = (b >> 16u) & 0x8000u;
	int ex = int((b >> 23u) & 0xffu);
	uint man = b & 0x7fffffu;
	if (ex == 0xff) { return man != 0u ? (sign | 0x7e00u | (man >> 13u)) : (sign | 0x7c00u); }
	int e = ex - 112;
	if (e >= 31) { return sign | 0x7c00u; }
	if (e <= 0) {
		if (e < -10) { return sign; }
		uint m = man | 0x800000u;
		uint shift = uint(14 - e);
		uint q = m >> shift;
		uint rem = m & ((1u << shift) - 1u);
		uint half_ = 1u << (shift - 1u);
		if (rem > half_ || (rem == half_ && (q & 1u) == 1u)) { q += 1u; }
		return sign | q;
	}
	uint q = (uint(e) << 10u) | (man >> 13u);
	uint rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u) == 1u)) { q += 1u; }
	return sign | q;
}
float t_f16_float(uint h) {
	uint sign = (h & 0x8000u) << 16u;
	uint ex = (h >> 10u) & 0x1fu;
	uint man = h & 0x3ffu;
	if (ex == 0x1fu) { return uintBitsToFloat(sign | 0x7f800000u | (man << 13u)); }
	if (ex == 0u) {
		if (man == 0u) { return uintBitsToFloat(sign); }
		uint p = 31u - t_clz(man);
		return uintBitsToFloat(sign | ((p + 103u) << 23u) | ((man << (23u - p)) & 0x7fffffu));
	}
	return uintBitsToFloat(sign | ((ex + 112u) << 23u) | (man << 13u));
}
uint t_bf16_bits(float v) {
	uint b = floatBitsToUint(v);
	if ((b & 0x7fffffffu) > 0x7f800000u) { return (b >> 16u) | 0x40u; }
	return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
float t_bf16_float(uint h) { return uintBitsToFloat(h << 16u); }
uvec2 t_of_i32(uint x) { return uvec2(x, (x >> 31u) == 1u ? 0xffffffffu : 0u); }
bool t_isneg(uvec2 a) { return (a.y >> 31u) == 1u; }
bool t_iszero(uvec2 a) { return (a.x | a.y) == 0u; }
uvec2 t_add(uvec2 a, uvec2 b) {
	uint lo = a.x + b.x;
	return uvec2(lo, a.y + b.y + (lo < a.x ? 1u : 0u));
}
uvec2 t_sub(uvec2 a, uvec2 b) { return uvec2(a.x - b.x, a.y - b.y - (a.x < b.x ? 1u : 0u)); }
uvec2 t_neg(uvec2 a) { return t_sub(uvec2(0u, 0u), a); }
uvec2 t_abs(uvec2 a) { return t_isneg(a) ? t_neg(a) : a; }
uvec2 t_mul32(uint a, uint b) {
	uint a0 = a & 0xffffu;
	uint a1 = a >> 16u;
	uint b0 = b & 0xffffu;
	uint b1 = b >> 16u;
	uint p00 = a0 * b0;
	uint p01 = a0 * b1;
	uint p10 = a1 * b0;
	uint mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
	return uvec2((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
uvec2 t_mul(uvec2 a, uvec2 b) {
	uvec2 p = t_mul32(a.x, b.x);
	return uvec2(p.x, p.y + a.x * b.y + a.y * b.x);
}
bool t_lt(uvec2 a, uvec2 b) {
	if (a.y != b.y) { return (a.y ^ 0x80000000u) < (b.y ^ 0x80000000u); }
	return a.x < b.x;
}
bool t_ult(uvec2 a, uvec2 b) {
	if (a.y != b.y) { return a.y < b.y; }
	return a.x < b.x;
}
uvec2 t_shl(uvec2 a, uint s) {
	if (s == 0u) { return a; }
	if (s >= 32u) { return uvec2(0u, a.x << (s - 32u)); }
	return uvec2(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}
uvec2 t_shr(uvec2 a, uint s) {
	if (s == 0u) { return a; }
	if (s >= 32u) { return uvec2(a.y >> (s - 32u), 0u); }
	return uvec2((a.x >> s) | (a.y << (32u - s)), a.y >> s);
}
struct t_qr { uvec2 q; uvec2 r; };
t_qr t_udivmod(uvec2 n, uvec2 d) {
	if (n.y == 0u && d.y == 0u) { return t_qr(uvec2(n.x / d.x, 0u), uvec2(n.x % d.x, 0u)); }
	uvec2 q = uvec2(0u, 0u);
	uvec2 r = uvec2(0u, 0u);
	for (uint j = 0u; j < 64u; j++) {
		uint i = 63u - j;
		uint bit = ((i >= 32u ? n.y : n.x) >> (i & 31u)) & 1u;
		r = uvec2((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
		if (!t_ult(r, d)) {
			r = t_sub(r, d);
			if (i >= 32u) { q.y |= 1u << (i - 32u); } else { q.x |= 1u << i; }
		}
	}
	return t_qr(q, r);
}
uvec2 t_div(uvec2 a, uvec2 b) {
	t_qr qr = t_udivmod(t_abs(a), t_abs(b));
	return t_isneg(a) != t_isneg(b) ? t_neg(qr.q) : qr.q;
}
uvec2 t_mod(uvec2 a, uvec2 b) {
	t_qr qr = t_udivmod(t_abs(a), t_abs(b));
	uvec2 r = t_isneg(a) ? t_neg(qr.r) : qr.r;
	if (!t_iszero(r) && t_isneg(r) != t_isneg(b)) { r = t_add(r, b); }
	return r;
}
float t_int_float(uvec2 v, uint p) {
	bool neg = t_isneg(v);
	uvec2 u = t_abs(v);
	if (t_iszero(u)) { return 0.0; }
	uint n = u.y != 0u ? 64u - t_clz(u.y) : 32u - t_clz(u.x);
	uint e = 0u;
	if (n > p) {
		uint shift = n - p;
		uvec2 q = t_shr(u, shift);
		uvec2 rem = t_sub(u, t_shl(q, shift));
		uvec2 half_ = t_shl(uvec2(1u, 0u), shift - 1u);
		if (t_ult(half_, rem) || (rem == half_ && (q.x & 1u) == 1u)) { q = t_add(q, uvec2(1u, 0u)); }
		u = q;
		e = shift;
	}
	uint m = u.x;
	uint bl = 32u - t_clz(m);
	uint man = bl <= 24u ? m << (24u - bl) : m >> (bl - 24u);
	return uintBitsToFloat((neg ? 0x80000000u : 0u) | ((bl + e + 126u) << 23u) | (man & 0x7fffffu));
}
uvec2 t_float_int(float v, uvec2 hi, uvec2 nlo, uint e) {
	uint b = floatBitsToUint(v);
	uint ex = (b >> 23u) & 0xffu;
	if (ex < 127u) { return uvec2(0u, 0u); }
	if (ex >= 191u) { t_fault(e, 1u); return uvec2(0u, 0u); }
	uvec2 m = uvec2((b & 0x7fffffu) | 0x800000u, 0u);
	uvec2 mag = ex >= 150u ? t_shl(m, ex - 150u) : t_shr(m, 150u - ex);
	if ((b >> 31u) == 1u) {
		if (t_ult(nlo, mag)) { t_fault(e, 1u); return uvec2(0u, 0u); }
		return t_neg(mag);
	}
	if (t_ult(hi, mag)) { t_fault(e, 1u); return uvec2(0u, 0u); }
	return mag;
}
`

func computeType(t ir.DType) string {
	if t.IsFloat() {
		return "float"
	}
	return "uvec2"
}

func zeroOf(t ir.DType) string {
	if t.IsFloat() {
		return "0.0"
	}
	return "uvec2(0u, 0u)"
}

func i64Lit(v int64) string {
	return fmt.Sprintf("uvec2(0x%08xu, 0x%08xu)", uint32(v), uint32(uint64(v)>>32))
}

func boolOf(c string) string { return "uvec2((" + c + ") ? 1u : 0u, 0u)" }

// typedWords is how many u32 words n elements of t take (at least one).
func typedWords(t ir.DType, n int) int { return max(1, (n*t.Size()+3)/4) }

// TypedLayout returns the R32UI texture holding n elements of t, a word
// per texel.
func TypedLayout(t ir.DType, n int) Texture { return Layout(typedWords(t, n), -1) }

// loadFn renders "T name(uint e)": element e of sampler s (a word texture
// of width w) of dtype t as its computing value.
func loadFn(name, s string, w int, t ir.DType) string {
	word := func(i string) string {
		return fmt.Sprintf("texelFetch(%s, ivec2(int((%s) %% %du), int((%s) / %du)), 0).r", s, i, w, i, w)
	}
	var x string
	switch t {
	case ir.F32:
		x = "uintBitsToFloat(" + word("e") + ")"
	case ir.F16:
		x = "t_f16_float((" + word("e >> 1u") + " >> ((e & 1u) * 16u)) & 0xffffu)"
	case ir.BF16:
		x = "t_bf16_float((" + word("e >> 1u") + " >> ((e & 1u) * 16u)) & 0xffffu)"
	case ir.I32:
		x = "t_of_i32(" + word("e") + ")"
	case ir.U32:
		x = "uvec2(" + word("e") + ", 0u)"
	case ir.I64:
		x = "uvec2(" + word("2u * e") + ", " + word("2u * e + 1u") + ")"
	case ir.U8, ir.Bool:
		x = "uvec2((" + word("e >> 2u") + " >> ((e & 3u) * 8u)) & 0xffu, 0u)"
	case ir.I8:
		x = "t_of_i32((((" + word("e >> 2u") + " >> ((e & 3u) * 8u)) & 0xffu) ^ 0x80u) - 0x80u)"
	default:
		panic("glsl: dtype " + t.String() + " has no load (typed.go's loadFn)")
	}
	return fmt.Sprintf("%s %s(uint e) { return %s; }\n", computeType(t), name, x)
}

func storeBits(t ir.DType, v string) string {
	switch t {
	case ir.F32:
		return "floatBitsToUint(" + v + ")"
	case ir.F16:
		return "t_f16_bits(" + v + ")"
	case ir.BF16:
		return "t_bf16_bits(" + v + ")"
	case ir.Bool:
		return "(t_iszero(" + v + ") ? 0u : 1u)"
	case ir.U8, ir.I8:
		return "(" + v + ".x & 0xffu)"
	}
	return v + ".x"
}

// intLang renders the typed integer rows (codegen.TypedIntRows) over int64
// values as two words, uvec2(low, high), with the prelude's t_*.
var intLang = codegen.IntLang{
	codegen.IConst:  func(x *codegen.IntX, _ []string) string { return i64Lit(x.Val) },
	codegen.IAdd:    gcall("t_add"),
	codegen.ISub:    gcall("t_sub"),
	codegen.IMul:    gcall("t_mul"),
	codegen.INeg:    gcall("t_neg"),
	codegen.IDiv:    gcall("t_div"),
	codegen.IMod:    gcall("t_mod"),
	codegen.IAnd:    ginfix(" & "),
	codegen.IOr:     ginfix(" | "),
	codegen.IXor:    ginfix(" ^ "),
	codegen.IBitNot: func(_ *codegen.IntX, a []string) string { return "(~" + a[0] + ")" },
	codegen.IShl:    func(_ *codegen.IntX, a []string) string { return "t_shl(" + a[0] + ", min((" + a[1] + ").x, 63u))" },
	codegen.IShr:    func(_ *codegen.IntX, a []string) string { return "t_shr(" + a[0] + ", min((" + a[1] + ").x, 63u))" },
	codegen.ILt:     gcall("t_lt"),
	codegen.IEq:     ginfix(" == "),
	codegen.INot:    func(_ *codegen.IntX, a []string) string { return "!" + a[0] },
	codegen.ISelect: func(_ *codegen.IntX, a []string) string { return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")" },
	codegen.IBool:   func(_ *codegen.IntX, a []string) string { return boolOf(a[0]) },
	codegen.IArg:    func(*codegen.IntX, []string) string { panic("codegen/glsl: an operand is rendered by IntLang.Render") },
}

func gcall(f string) func(*codegen.IntX, []string) string {
	return func(_ *codegen.IntX, a []string) string { return f + "(" + strings.Join(a, ", ") + ")" }
}

func ginfix(op string) func(*codegen.IntX, []string) string {
	return func(_ *codegen.IntX, a []string) string { return "(" + a[0] + op + a[1] + ")" }
}

func init() {
	if err := codegen.CheckIntLang(&intLang); err != nil {
		panic(err)
	}
}

func castExpr(from, to ir.DType, x string) string {
	switch r := codegen.TypedCast(from, to); r.Kind {
	case codegen.CastFloatBool: // NaN is true
		return boolOf("(floatBitsToUint(" + x + ") & 0x7fffffffu) != 0u")
	case codegen.CastIntBool:
		return boolOf("!t_iszero(" + x + ")")
	case codegen.CastIntFloat:
		return fmt.Sprintf("t_int_float(%s, %du)", x, r.Bits)
	case codegen.CastFloatInt:
		return fmt.Sprintf("t_float_int(%s, %s, %s, e)", x, i64Lit(r.Hi), i64Lit(-r.Lo))
	}
	return x
}

// TypedPass is one typed node's fragment shader: it reads the textures of
// the node's distinct operands (sampler u_in<k>, in order of first use;
// Args[k] is the graph node) and writes the node's word texture
// (Layout: Texture) to draw buffer 0 and its fault codes to draw buffer 1.
type TypedPass struct {
	Source  string
	Args    []int
	Texture Texture
}

// TypedNode returns the pass computing node i of the validated typed graph
// g with cpuref's bits; an op or dtype it does not hold is refused with
// unsupported, naming the node (a matmul, say: the GLSL typed path is
// node by node, without float32 islands).
func TypedNode(g *ir.Graph, i int) (TypedPass, error) {
	n := &g.Nodes[i]
	var args []int
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
	var body []string
	var defs []string // the functions a float row calls
	info := n.Op.Info()
	unsupported := func() error {
		in := n.DType
		if len(n.Args) > 0 {
			in = g.Nodes[n.Args[0]].DType
		}
		return ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v: the GLSL typed path does not hold it yet", n.Op, in)
	}
	for _, a := range append([]ir.NodeID{ir.NodeID(i)}, n.Args...) {
		if t := g.Nodes[a].DType; !ir.ProtocolDTypes.Has(t) {
			return TypedPass{}, ir.Errorf(ir.CodeUnsupported, i, "dtype", "%v of %v: the GLSL typed path holds %v (protocol v1's dtypes)", n.Op, t, ir.ProtocolDTypes)
		}
	}
	switch {
	case n.Op == ir.OpInput:
		return TypedPass{}, ir.Errorf(ir.CodeInternal, i, "op", "an input has no pass")
	case n.Op == ir.OpFull:
		if n.DType.IsFloat() {
			body = append(body, fmt.Sprintf("return uintBitsToFloat(0x%08xu | floatBitsToUint(%s));", math.Float32bits(n.Scalar), UniformZero))
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
		d := int64(mv.Bound)
		body = append(body,
			"uvec2 v = "+ld(1, codegen.Index(Lang, mv.Index, "e"))+";",
			fmt.Sprintf("if (t_lt(v, %s) || !t_lt(v, %s)) { t_fault(e, %du); return %s; }", i64Lit(-d), i64Lit(d), FaultIndex, zeroOf(n.DType)),
			fmt.Sprintf("uint jj = t_isneg(v) ? v.x + %du : v.x;", d),
			fmt.Sprintf("return %s;", ld(0, fmt.Sprintf("(%s) + jj * %du", src, mv.Step))))
	case codegen.TypedScatters[n.Op] != nil: // scatter.go
		lines, sdefs, err := scatterBody(g, i, ld)
		if err != nil {
			return TypedPass{}, err
		}
		body, defs = lines, sdefs
	case n.Op == ir.OpWhere:
		body = append(body, fmt.Sprintf("return t_iszero(%s) ? %s : %s;", ld(0, "e"), ld(2, "e"), ld(1, "e")))
	case n.Op.IsReduction():
		lines, err := typedReduce(g, i)
		if err != nil {
			return TypedPass{}, err
		}
		body = lines
	case n.Op == ir.OpCast:
		body = append(body, computeType(g.Nodes[n.Args[0]].DType)+" a = "+ld(0, "e")+";", "return "+castExpr(g.Nodes[n.Args[0]].DType, n.DType, "a")+";")
	case info.Elementwise && len(n.Args) >= 1 && len(n.Args) <= 2:
		for _, a := range n.Args {
			if g.Nodes[a].Shape.Len() != m {
				return TypedPass{}, unsupported()
			}
		}
		in := g.Nodes[n.Args[0]].DType
		ct := computeType(in)
		body = append(body, ct+" a = "+ld(0, "e")+";")
		b := "a"
		if len(n.Args) == 2 {
			body = append(body, ct+" b = "+ld(1, "e")+";")
			b = "b"
		}
		if !in.IsFloat() {
			row, ok := codegen.TypedIntRows[n.Op]
			if !ok || info.ScalarOf != 0 {
				return TypedPass{}, unsupported()
			}
			if row.Guard {
				body = append(body, fmt.Sprintf("if (t_iszero(b)) { t_fault(e, %du); return uvec2(0u, 0u); }", FaultInteger))
			}
			body = append(body, "return "+codegen.RenderIntRow(&intLang, n.Op, in, "a", b)+";")
			break
		}
		if info.Expr == nil {
			return TypedPass{}, unsupported()
		}
		// The float row through codegen.Exact: subnormal operands and
		// results kept where the GPU flushes them (GLSL ES allows it).
		lines, fdefs, _ := codegen.ExactRow(Lang, n.Op, n.Scalar, "a", b, "v2")
		body = append(body, lines...)
		defs = fdefs
		if n.DType == ir.Bool {
			body = append(body, "return "+boolOf("v2 != 0.0")+";")
		} else {
			body = append(body, "return v2;")
		}
	default:
		return TypedPass{}, unsupported()
	}
	return typedPass(g, i, args, body, defs), nil
}

func typedReduce(g *ir.Graph, i int) ([]string, error) {
	n := &g.Nodes[i]
	a := g.Nodes[n.Args[0]]
	red := ir.ReductionOf(a.Shape, n.Shape)
	leaf := "ld0(" + codegen.LeafIndex(Lang, red, "e", "r") + ")"
	comb := n.Op.Info().Combine
	if red.Leaves == 0 {
		return nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v over no leaves: the GLSL typed path does not hold it yet", n.Op, a.DType)
	}
	// A fragment computes its output word's elements, each by one loop
	// over the leaves, and has no workgroup to share them with: past
	// ir.LoopBudget iterations llvmpipe (Chromium's GL on a machine without
	// a GPU) would end its loops silently and write a partial value.
	if c := codegen.TypedReduceLoopCost(red.Leaves, a.DType, n.DType); c > ir.LoopBudget {
		return nil, ir.Errorf(ir.CodeUnsupported, i, "op", "%v of %v over %d leaves: a fragment's loops would run %d iterations, past ir.LoopBudget's %d (llvmpipe ends an invocation's loops there); the GLSL typed path reduces at most %d leaves of %v an output",
			n.Op, a.DType, red.Leaves, c, ir.LoopBudget, codegen.TypedSerialLeaves(a.DType, n.DType), a.DType)
	}
	if !a.DType.IsFloat() {
		return []string{
			"uvec2 acc;",
			"{ uint r = 0u; acc = " + leaf + "; }",
			fmt.Sprintf("for (uint r = 1u; r < %du; r++) { uvec2 v = %s; acc = %s; }", red.Leaves, leaf, codegen.RenderIntRow(&intLang, comb, a.DType, "acc", "v")),
			"return acc;",
		}, nil
	}
	return append(codegen.CounterTree(Lang, "float", red.Leaves, leaf, "t_combine"), "return acc;"), nil
}

func roundTo(t ir.DType, v string) string {
	switch t {
	case ir.F16:
		return "t_f16_float(t_f16_bits(" + v + "))"
	case ir.BF16:
		return "t_bf16_float(t_bf16_bits(" + v + "))"
	}
	return v
}

func typedPass(g *ir.Graph, i int, args []int, body, defs []string) TypedPass {
	n := &g.Nodes[i]
	m := n.Shape.Len()
	words := typedWords(n.DType, m)
	tx := Layout(words, -1)
	var b strings.Builder
	b.WriteString("#version 300 es\n" + headerLine + "\n")
	fmt.Fprintf(&b, "// typed node %d: %v -> %v %v\n", i, n.Op, n.DType, n.Shape)
	b.WriteString("precision highp float;\nprecision highp int;\nprecision highp usampler2D;\n")
	b.WriteString("uniform float " + UniformOne + ";\n")
	b.WriteString("uniform float " + UniformZero + ";\n")
	for j := range args {
		fmt.Fprintf(&b, "uniform highp usampler2D %s%d;\n", SamplerPrefix, j)
	}
	b.WriteString("layout(location = 0) out highp uint o_word;\nlayout(location = 1) out highp uint o_fault;\n")
	b.WriteString(typedPrelude)
	for j, a := range args {
		an := g.Nodes[a]
		b.WriteString(loadFn(fmt.Sprintf("ld%d", j), fmt.Sprintf("%s%d", SamplerPrefix, j), Layout(typedWords(an.DType, an.Shape.Len()), -1).Width, an.DType))
	}
	if n.Op.IsReduction() && n.DType.IsFloat() {
		comb, cdefs, _ := codegen.ExactCombine(Lang, n.Op, "a", "b", "m")
		b.WriteString(codegen.Indent(cdefs, 0))
		b.WriteString("float t_combine(float a, float b) {\n")
		b.WriteString(codegen.Indent(comb, 1))
		fmt.Fprintf(&b, "\treturn %s;\n}\n", roundTo(n.DType, "m"))
	}
	b.WriteString(codegen.Indent(defs, 0))
	fmt.Fprintf(&b, "%s value(uint e) {\n", computeType(n.DType))
	b.WriteString(codegen.Indent(body, 1))
	b.WriteString("}\n")
	b.WriteString("void main() {\n")
	fmt.Fprintf(&b, "\tuvec2 p = uvec2(gl_FragCoord.xy);\n\tuint w = p.y * %du + p.x;\n", tx.Width)
	per := max(1, 4/n.DType.Size())
	first := fmt.Sprintf("%du * w", per) // the first element of word w
	if n.DType == ir.I64 {
		first = "(w >> 1u)"
	}
	fmt.Fprintf(&b, "\tif (w >= %du || %s >= %du) { o_word = 0u; o_fault = 0u; return; }\n", words, first, m)
	switch {
	case n.DType == ir.I64:
		b.WriteString("\tuvec2 v = value(w >> 1u);\n\to_word = (w & 1u) == 0u ? v.x : v.y;\n")
	case per == 1:
		fmt.Fprintf(&b, "\to_word = %s;\n", storeBits(n.DType, "value(w)"))
	default:
		bits := 32 / per
		fmt.Fprintf(&b, "\tuint x = %s;\n", storeBits(n.DType, fmt.Sprintf("value(%du * w)", per)))
		for l := 1; l < per; l++ {
			fmt.Fprintf(&b, "\tif (%du * w + %du < %du) { x |= %s << %du; }\n", per, l, m, storeBits(n.DType, fmt.Sprintf("value(%du * w + %du)", per, l)), bits*l)
		}
		b.WriteString("\to_word = x;\n")
	}
	b.WriteString("\to_fault = t_faultv;\n}\n")
	return TypedPass{Source: b.String(), Args: args, Texture: tx}
}

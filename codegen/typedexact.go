package codegen

import (
	"math"
	"sync"

	"github.com/gpucc/gpucc/ir"
)

// Subnormal-exact float arithmetic, for the typed kernels (issue 32).
//
// WGSL and GLSL ES let a GPU flush subnormal operands and results of float
// arithmetic to zero and read subnormal operands of comparisons as zero,
// and NVIDIA's Vulkan driver does: on the H200 the typed WGSL kernels gave
// 0 where cpuref gives 5.877472e-39 (11 TestTypedBackends cases,
// bench/h200/lead-2026-12-04b). The float32 compiler takes that liberty
// (cpuref.EvalFlushed); a typed kernel promises cpuref's bits. Exact
// rewrites an expression so that a flushing machine computes IEEE's value:
// every float add, sub and mul becomes a call of exact_add, exact_sub or
// exact_mul (below), every comparison integer steps on the bits, and every
// called function its rewritten copy. Selects, bitcasts and integer steps
// never flush. On a machine that keeps subnormals the result is the same
// bits as the expression's, so a target may use it everywhere.
//
// Each exact function computes the hardware's operation and uses it
// wherever no operand or result can be subnormal; elsewhere it computes
// with normal values only (scaled operands, Dekker's exact product) and
// assembles the result by integer steps.

// Exact returns x rewritten to be exact on a machine that flushes
// subnormals (see above); the result is computed once per expression.
func Exact(x *ir.X) *ir.X {
	if y, ok := exacts.Load(x); ok {
		return y.(*ir.X)
	}
	y := exactOf(x, map[*ir.X]*ir.X{})
	exacts.Store(x, y)
	return y
}

var (
	exacts    sync.Map // *ir.X -> *ir.X
	exactFns  sync.Map // *ir.Func -> *ir.Func
	exactPrim = map[*ir.Func]bool{exactAdd: true, exactSub: true, exactMul: true}
)

func exactOf(x *ir.X, memo map[*ir.X]*ir.X) *ir.X {
	if y, ok := memo[x]; ok {
		return y
	}
	args := make([]*ir.X, len(x.Args))
	for i, a := range x.Args {
		args[i] = exactOf(a, memo)
	}
	var y *ir.X
	switch x.Op {
	case ir.XAdd:
		y = ir.Call(exactAdd, args...)
	case ir.XSub:
		y = ir.Call(exactSub, args...)
	case ir.XMul:
		y = ir.Call(exactMul, args...)
	case ir.XGt, ir.XGe, ir.XEq:
		y = exactCompare(x.Op, args[0], args[1])
	case ir.XCall:
		y = ir.Call(exactFunc(x.Fn), args...)
	case ir.XFma: // only a fused twin (ir.Fused) has one, and no typed kernel calls them
		panic("codegen: Exact has no subnormal-exact fused multiply-add")
	default:
		if len(args) == 0 {
			y = x
		} else {
			c := *x
			c.Args = args
			y = &c
		}
	}
	memo[x] = y
	return y
}

// exactFunc returns f with its body rewritten by Exact, named f's name
// with "_exact", one per f.
func exactFunc(f *ir.Func) *ir.Func {
	if exactPrim[f] {
		return f
	}
	if g, ok := exactFns.Load(f); ok {
		return g.(*ir.Func)
	}
	g, _ := exactFns.LoadOrStore(f, &ir.Func{Name: f.Name + "_exact", Params: f.Params, Body: Exact(f.Body)})
	return g.(*ir.Func)
}

// The exact arithmetic, as functions: a kernel defines each once.
var (
	exactAdd = &ir.Func{Name: "exact_add", Params: 2, Body: exactAddBody(false)}
	exactSub = &ir.Func{Name: "exact_sub", Params: 2, Body: exactAddBody(true)}
	exactMul = &ir.Func{Name: "exact_mul", Params: 2, Body: exactMulBody()}
)

const (
	xSign   = 0x80000000
	xAbs    = 0x7fffffff
	xInf    = 0x7f800000
	xMinNrm = 0x00800000 // 2^-126, the least normal
)

// Bool helpers: bools are combined as u32 0/1.
func xb2u(c *ir.X) *ir.X    { return ir.If(c, ir.U(1), ir.U(0)) }
func xnot(c *ir.X) *ir.X    { return xb2u(c).UEq(ir.U(0)) }
func xor2(c, d *ir.X) *ir.X { return ir.U(0).ULt(xb2u(c).Or(xb2u(d))) }
func xand(c, d *ir.X) *ir.X { return ir.U(0).ULt(xb2u(c).And(xb2u(d))) }

// xsub reports a non-zero magnitude below the least normal (abs: the
// bits without the sign).
func xsub(abs *ir.X) *ir.X {
	return xand(ir.U(0).ULt(abs), abs.ULt(ir.U(xMinNrm)))
}

// exactAddBody is a + b (a - b with sub), IEEE's on a flushing machine.
// Where |a| or |b| is at least 2^-100 the hardware's sum is IEEE's: a
// subnormal operand is below a quarter of the other's ulp (at least
// 2^-123), so the sum rounds to the other operand, which is what a flushed
// operand gives; and a sum of two normals, one of them that large, is 0
// or at least 2^-124 (a multiple of the smaller ulp), never subnormal.
// Below, both operands are scaled by 2^64 by integer steps (a subnormal's
// fraction made a float by (bits | 1.0) - 1, then scaled by a normal
// product), added, where every value is normal or zero and the rounding is
// the unscaled one (a sum that is subnormal unscaled is a multiple of
// 2^-149 below 2^-126, exact in both), and scaled back by integer steps
// (a subnormal result shifted out of the normal one exactly).
func exactAddBody(sub bool) *ir.X {
	a, b := ir.Arg(0), ir.Arg(1)
	var fast *ir.X
	bb := b.AsBits()
	if sub {
		fast = a.Sub(b)
		bb = bb.Xor(ir.U(xSign))
	} else {
		fast = a.Add(b)
	}
	ab := a.AsBits()
	const small = (127 - 100) << 23 // 2^-100
	slow := xand(ab.And(ir.U(xAbs)).ULt(ir.U(small)), bb.And(ir.U(xAbs)).ULt(ir.U(small)))
	up := func(bits *ir.X) *ir.X { // bits' float times 2^64, for magnitudes below 2^-100
		abs := bits.And(ir.U(xAbs))
		norm := abs.UAdd(ir.U(64 << 23))
		frac := abs.Or(ir.U(0x3f800000)).AsFloat().Sub(ir.F(1)).Mul(ir.F(0x1p-62)).AsBits()
		return ir.If(abs.ULt(ir.U(xMinNrm)), frac, norm).Or(bits.And(ir.U(xSign))).AsFloat()
	}
	s := up(ab).Add(up(bb)).AsBits()
	sAbs := s.And(ir.U(xAbs))
	e := sAbs.Shr(ir.U(23))
	m := sAbs.And(ir.U(0x7fffff)).Or(ir.U(xMinNrm))
	sh := ir.U(65).USub(e)
	sh = ir.If(sh.ULt(ir.U(31)), sh, ir.U(31)) // a zero sum: e = 0, m >> 31 = 0
	mag := ir.If(ir.U(64).ULt(e), sAbs.USub(ir.U(64<<23)), m.Shr(sh))
	return ir.If(slow, mag.Or(s.And(ir.U(xSign))).AsFloat(), fast)
}

// exactMulBody is a × b, IEEE's on a flushing machine. The hardware's
// product is IEEE's where both operands are normal (or zero, ±Inf, NaN
// with a normal one) and the biased exponents sum to 128 or more (the
// product is then at least 2^-126). Elsewhere, for finite operands, each
// is taken apart into a significand in [1, 2) and an exponent by integer
// steps, the significands' product p + e is exact by Dekker (p rounded,
// e its error, both normal), and a normal result is p with the exponents
// added, a subnormal one p's 24-bit significand shifted right and rounded
// to nearest even, with e deciding a tie. ±Inf times a subnormal is ±Inf.
func exactMulBody() *ir.X {
	a, b := ir.Arg(0), ir.Arg(1)
	fast := a.Mul(b)
	ab, bb := a.AsBits(), b.AsBits()
	aAbs, bAbs := ab.And(ir.U(xAbs)), bb.And(ir.U(xAbs))
	sign := ab.Xor(bb).And(ir.U(xSign))
	aSub, bSub := xsub(aAbs), xsub(bAbs)
	special := xor2(ir.U(0x7f7fffff).ULt(aAbs), ir.U(0x7f7fffff).ULt(bAbs)) // ±Inf or NaN
	low := aAbs.Shr(ir.U(23)).UAdd(bAbs.Shr(ir.U(23))).ULt(ir.U(128))
	slow := xand(xnot(special), xor2(xor2(aSub, bSub), low))
	infSub := xor2(xand(aAbs.UEq(ir.U(xInf)), bSub), xand(bAbs.UEq(ir.U(xInf)), aSub))
	zero := xor2(aAbs.UEq(ir.U(0)), bAbs.UEq(ir.U(0)))

	sa, ea := sigExp256(aAbs)
	sb, eb := sigExp256(bAbs)
	p := sa.Mul(sb)
	split := func(x *ir.X) (hi, lo *ir.X) { // Veltkamp's: 12 bits each
		c := x.Mul(ir.F(4097))
		hi = c.Sub(c.Sub(x))
		return hi, x.Sub(hi)
	}
	ah, al := split(sa)
	bh, bl := split(sb)
	err := ah.Mul(bh).Sub(p).Add(ah.Mul(bl)).Add(al.Mul(bh)).Add(al.Mul(bl)) // p + err = sa·sb exactly
	pb := p.AsBits()
	ep := pb.Shr(ir.U(23))
	roff := ep.UAdd(ea).UAdd(eb).USub(ir.U(254)) // the result's biased exponent + 512
	normBits := pb.UAdd(roff.USub(ir.U(512)).USub(ep).Shl(ir.U(23)))
	sh := ir.U(513).USub(roff) // a subnormal result: 1 - exponent, at least 1
	sh = ir.If(sh.ULt(ir.U(25)), sh, ir.U(25))
	m := pb.And(ir.U(0x7fffff)).Or(ir.U(xMinNrm))
	q := m.Shr(sh)
	rem := m.And(ir.U(1).Shl(sh).USub(ir.U(1)))
	half := ir.U(1).Shl(sh.USub(ir.U(1)))
	eb2 := err.AsBits()
	eNonzero := ir.U(0).ULt(eb2.And(ir.U(xAbs)))
	ePos := xand(eNonzero, eb2.ULt(ir.U(xSign)))
	tie := xor2(ePos, xand(xnot(eNonzero), q.And(ir.U(1)).UEq(ir.U(1))))
	up := xor2(half.ULt(rem), xand(rem.UEq(half), tie))
	subBits := q.UAdd(xb2u(up))
	mag := ir.If(ir.U(512).ULt(roff), ir.If(ir.U(766).ULt(roff), ir.U(xInf), normBits), subBits)
	slowRes := ir.If(zero, sign, mag.Or(sign)).AsFloat()
	return ir.If(slow, slowRes, ir.If(infSub, sign.Or(ir.U(xInf)).AsFloat(), fast))
}

// sigExp256 takes a finite non-zero magnitude apart: its significand as a
// float in [1, 2) and its biased exponent plus 256 (a subnormal's below
// 257: its fraction made a normal float by (bits | 1.0) - 1, exactly
// x·2^126), so that |x| = s·2^(e-256-127). Zero gives garbage.
func sigExp256(abs *ir.X) (s, e *ir.X) {
	sub := abs.ULt(ir.U(xMinNrm))
	t := abs.Or(ir.U(0x3f800000)).AsFloat().Sub(ir.F(1)).AsBits()
	w := ir.If(sub, t, abs)
	s = w.And(ir.U(0x7fffff)).Or(ir.U(0x3f800000)).AsFloat()
	return s, w.Shr(ir.U(23)).UAdd(ir.If(sub, ir.U(256-126), ir.U(256)))
}

// exactCompare is a > b, a >= b or a == b (op) by integer steps on the
// bits: false where either is NaN, -0 equal to +0, subnormals kept.
func exactCompare(op ir.XOp, a, b *ir.X) *ir.X {
	key := func(x *ir.X) (k, nan *ir.X) {
		bits := x.AsBits()
		abs := bits.And(ir.U(xAbs))
		z := ir.If(abs.UEq(ir.U(0)), ir.U(0), bits) // -0 is +0
		k = ir.If(z.ULt(ir.U(xSign)), z.Or(ir.U(xSign)), z.Xor(ir.U(0xffffffff)))
		return k, ir.U(xInf).ULt(abs)
	}
	ka, na := key(a)
	kb, nb := key(b)
	var c *ir.X
	switch op {
	case ir.XGt:
		c = kb.ULt(ka)
	case ir.XGe:
		c = xnot(ka.ULt(kb))
	default:
		c = ka.UEq(kb)
	}
	return xand(xnot(xor2(na, nb)), c)
}

// ExactRow renders float elementwise op's row (its ir.OpInfo.Expr) through
// Exact over the float values a and b (b unused by a unary op; a scalar
// form's second operand is the constant scalar), as declarations ending in
// name. defs are the definitions of the functions it calls, each once,
// callees first; consts are the float constants in slot order (see
// Constants), the values of l.Const's slots where l has them.
func ExactRow(l Lang, op ir.Op, scalar float32, a, b, name string) (body, defs []string, consts []float32) {
	info := op.Info()
	var s []float32
	if info.Scalar {
		s = []float32{scalar}
	}
	return renderExact(l, Exact(info.Expr), []string{a, b}, s, name)
}

// ExactCombine is Combine through Exact: reduction op's combining row over
// a and b as declarations ending in name, with ExactRow's defs and consts.
func ExactCombine(l Lang, op ir.Op, a, b, name string) (body, defs []string, consts []float32) {
	return renderExact(l, Exact(op.Info().Combine.Info().Expr), []string{a, b}, nil, name)
}

// renderExact renders x over args (args[1] the constant scalar[0] where
// scalar has one) as declarations ending in name, the definitions of the
// functions it calls, and its constants in slot order.
func renderExact(l Lang, x *ir.X, args []string, scalar []float32, name string) (body, defs []string, consts []float32) {
	constant := func(v float32) string {
		consts = append(consts, v)
		if l.Const == nil {
			return l.Float(v)
		}
		return l.Const(len(consts) - 1)
	}
	args = append([]string(nil), args...)
	if len(scalar) > 0 {
		args[1] = constant(scalar[0])
	}
	body = expr(l, x, name, args, len(scalar) > 0, constant)
	fs := funcsOf(x)
	defs = Define(l, fs, len(consts))
	for _, f := range fs {
		for _, c := range arithConsts(f.Body) {
			consts = append(consts, math.Float32frombits(c.Bits))
		}
	}
	return body, defs, consts
}

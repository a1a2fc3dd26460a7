package codegen

import (
	"fmt"

	"github.com/gpucc/gpucc/ir"
)

// The typed integer rows (issue 32): what each integer op computes,
// written once over target-neutral int64 primitives (IntX) and rendered by
// each target's IntLang: C with its native 64-bit integers, WGSL and
// GLSL ES with two 32-bit words and their t_* functions. Every integer and
// bool value is computed as an int64, its dtype's value sign-extended
// (bool 0 or 1); the store wraps a row's result to the node's dtype. An
// integer op is one row of TypedIntRows (and its reference, cpuref's
// Int rule); no target switches on the op. The float rows are the ops'
// expressions (ir.OpInfo.Expr), which targets that may flush subnormals
// render through Exact.

// IntOp is one int64 primitive of a typed integer row.
type IntOp uint8

// The primitives. A condition (ILt, IEq, INot) is a target's boolean;
// IBool turns one into the int64 0 or 1.
const (
	IArg    IntOp = iota // operand Arg (0: a, 1: b)
	IConst               // the int64 Val
	IAdd                 // a + b, wrapping
	ISub                 // a - b, wrapping
	IMul                 // a × b, wrapping
	INeg                 // -a, wrapping
	IDiv                 // a / b truncated toward zero (MIN / -1 wraps to MIN), b != 0
	IMod                 // a mod b with b's sign (ONNX's Mod, fmod 0), b != 0
	IAnd                 // a & b
	IOr                  // a | b
	IXor                 // a ^ b
	IBitNot              // ^a, every bit
	IShl                 // a << b, 0 <= b < 64
	IShr                 // a >> b, logical on the 64 bits, 0 <= b < 64
	ILt                  // signed a < b: a condition
	IEq                  // a == b: a condition
	INot                 // !a of a condition
	ISelect              // Args[0] ? Args[1] : Args[2], Args[0] a condition
	IBool                // a condition as 0 or 1
	NumIntOps
)

var intOpNames = [NumIntOps]string{"arg", "const", "add", "sub", "mul", "neg", "div", "mod", "and", "or", "xor",
	"bitnot", "shl", "shr", "lt", "eq", "not", "select", "bool"}

func (op IntOp) String() string {
	if op < NumIntOps {
		return intOpNames[op]
	}
	return "intop?"
}

// IntX is an int64 expression: a tree of primitives over the operands.
type IntX struct {
	Op   IntOp
	Args []*IntX
	Arg  int   // IArg: 0 is a, 1 is b
	Val  int64 // IConst
}

// IA returns operand k (0: a, 1: b); IC the constant v.
func IA(k int) *IntX   { return &IntX{Op: IArg, Arg: k} }
func IC(v int64) *IntX { return &IntX{Op: IConst, Val: v} }
func (x *IntX) op(o IntOp, ys ...*IntX) *IntX {
	return &IntX{Op: o, Args: append([]*IntX{x}, ys...)}
}

// The primitives as methods: x.Add(y) is IAdd of x and y, and so on.
func (x *IntX) Add(y *IntX) *IntX { return x.op(IAdd, y) }
func (x *IntX) Sub(y *IntX) *IntX { return x.op(ISub, y) }
func (x *IntX) Mul(y *IntX) *IntX { return x.op(IMul, y) }
func (x *IntX) Neg() *IntX        { return x.op(INeg) }
func (x *IntX) Div(y *IntX) *IntX { return x.op(IDiv, y) }
func (x *IntX) Mod(y *IntX) *IntX { return x.op(IMod, y) }
func (x *IntX) And(y *IntX) *IntX { return x.op(IAnd, y) }
func (x *IntX) Or(y *IntX) *IntX  { return x.op(IOr, y) }
func (x *IntX) Xor(y *IntX) *IntX { return x.op(IXor, y) }
func (x *IntX) BitNot() *IntX     { return x.op(IBitNot) }
func (x *IntX) Shl(y *IntX) *IntX { return x.op(IShl, y) }
func (x *IntX) Shr(y *IntX) *IntX { return x.op(IShr, y) }
func (x *IntX) Lt(y *IntX) *IntX  { return x.op(ILt, y) }
func (x *IntX) Eq(y *IntX) *IntX  { return x.op(IEq, y) }
func (x *IntX) Not() *IntX        { return x.op(INot) }
func (x *IntX) Bool() *IntX       { return x.op(IBool) }
func ISel(c, t, f *IntX) *IntX    { return c.op(ISelect, t, f) }
func binRow(o IntOp) TypedIntRow {
	return TypedIntRow{Expr: func(ir.DType) *IntX { return IA(0).op(o, IA(1)) }}
}
func unRow(f func(a *IntX) *IntX) TypedIntRow {
	return TypedIntRow{Expr: func(ir.DType) *IntX { return f(IA(0)) }}
}

// TypedIntRow is one op's integer row.
type TypedIntRow struct {
	// Guard: b == 0 has no answer (division, modulo). The kernel gives
	// the element 0 and sets ir.CodeIntegerFault's code instead of
	// evaluating Expr (a target may guard inside its IDiv and IMod).
	Guard bool
	// Expr is the row's value over a = IA(0) and b = IA(1), int64 values
	// of operand dtype t, before the store wraps it to the node's dtype.
	Expr func(t ir.DType) *IntX
}

// TypedIntRows are the integer rows, by op: every op with an integer
// rule (ir.OpInfo.Int) has one (init checks), and cpuref's rule is the
// reference each is tested against (codegen/*/typed_test.go, the root's
// TestTypedBackends).
var TypedIntRows = map[ir.Op]TypedIntRow{
	ir.OpAdd:          binRow(IAdd),
	ir.OpSub:          binRow(ISub),
	ir.OpMul:          binRow(IMul),
	ir.OpNeg:          unRow((*IntX).Neg),
	ir.OpDiv:          {Guard: true, Expr: binRow(IDiv).Expr},
	ir.OpMod:          {Guard: true, Expr: binRow(IMod).Expr},
	ir.OpMaximum:      {Expr: func(ir.DType) *IntX { return ISel(IA(1).Lt(IA(0)), IA(0), IA(1)) }},
	ir.OpMinimum:      {Expr: func(ir.DType) *IntX { return ISel(IA(0).Lt(IA(1)), IA(0), IA(1)) }},
	ir.OpRelu:         unRow(func(a *IntX) *IntX { return ISel(IC(0).Lt(a), a, IC(0)) }),
	ir.OpGreater:      {Expr: func(ir.DType) *IntX { return IA(1).Lt(IA(0)).Bool() }},
	ir.OpGreaterEqual: {Expr: func(ir.DType) *IntX { return IA(0).Lt(IA(1)).Not().Bool() }},
	ir.OpEqual:        {Expr: func(ir.DType) *IntX { return IA(0).Eq(IA(1)).Bool() }},
	ir.OpAnd:          binRow(IAnd), // bools are 0 or 1
	ir.OpOr:           binRow(IOr),
	ir.OpXor:          binRow(IXor),
	ir.OpNot:          unRow(func(a *IntX) *IntX { return a.Xor(IC(1)) }),
	ir.OpBitAnd:       binRow(IAnd),
	ir.OpBitOr:        binRow(IOr),
	ir.OpBitXor:       binRow(IXor),
	ir.OpBitNot:       unRow((*IntX).BitNot),
	ir.OpShiftLeft:    {Expr: func(t ir.DType) *IntX { return shiftRow(t, IShl) }},
	ir.OpShiftRight:   {Expr: func(t ir.DType) *IntX { return shiftRow(t, IShr) }},
}

// shiftRow is a shift of the unsigned dtype t by b, 0 for a count of t's
// width or more.
func shiftRow(t ir.DType, o IntOp) *IntX {
	return ISel(IA(1).Lt(IC(int64(t.Bits()))), IA(0).op(o, IA(1)), IC(0))
}

func init() {
	for _, op := range ir.Ops() {
		if op.Info().Int != nil && TypedIntRows[op].Expr == nil {
			panic("codegen: the integer row " + op.String() + " has no TypedIntRows entry (typed.go)")
		}
	}
}

// IntLang renders the int64 primitives for one target: row op renders
// IntOp op over its rendered operands (x is the node, for IArg's and
// IConst's fields). CheckIntLang says whether every row is there.
type IntLang [NumIntOps]func(x *IntX, args []string) string

// CheckIntLang returns an error naming the first primitive l has no row
// for; targets call it at start-up.
func CheckIntLang(l *IntLang) error {
	for op := range NumIntOps {
		if l[op] == nil {
			return fmt.Errorf("codegen: BUG: int64 primitive %v has no rendering row", op)
		}
	}
	return nil
}

// Render renders x as one expression over operands a and b.
func (l *IntLang) Render(x *IntX, a, b string) string {
	args := make([]string, len(x.Args))
	for i, y := range x.Args {
		args[i] = l.Render(y, a, b)
	}
	if x.Op == IArg {
		return []string{a, b}[x.Arg]
	}
	return l[x.Op](x, args)
}

// RenderIntRow renders op's integer row over a and b of dtype t with l.
func RenderIntRow(l *IntLang, op ir.Op, t ir.DType, a, b string) string {
	return l.Render(TypedIntRows[op].Expr(t), a, b)
}

// CastKind is how ONNX's Cast (ir.Convert) converts between two dtypes:
// the one decision every target's cast makes, here once (TypedCast).
type CastKind uint8

// The cast kinds. Integer values are the int64 computing values of the
// integer rows, floats float32.
const (
	// CastKeep: the value itself; the store rounds a float once to a
	// narrow float, or wraps an integer to a narrower one.
	CastKeep CastKind = iota
	// CastFloatBool: a float to bool, true unless ±0 (NaN is true).
	CastFloatBool
	// CastIntBool: an integer to bool, x != 0.
	CastIntBool
	// CastIntFloat: an integer to a float of Bits significant bits, one
	// rounding from the exact value (ir.IntToFloat); the store's rounding
	// to a narrow float is then exact or overflows.
	CastIntFloat
	// CastFloatInt: a float truncated toward zero (ir.FloatToInt); NaN,
	// ±Inf and a value whose truncation is outside [Lo, Hi] has no answer:
	// the kernel sets ir.CodeIntegerFault's code.
	CastFloatInt
	// CastNarrow64: a float64 to a float dtype (float32, float16,
	// bfloat16), rounded once from its exact value (ir.RoundFloat64:
	// ties to even, through float32 rounded to odd for the narrow two),
	// ±Inf beyond the dtype's range. A float or an integer to float64 is
	// CastKeep: the store widens a float exactly and rounds an integer
	// once, to nearest even, as C's conversion does.
	CastNarrow64
)

// TypedCastRule is a cast's kind and its parameters.
type TypedCastRule struct {
	Kind   CastKind
	Bits   int   // CastIntFloat: the float's significand bits
	Lo, Hi int64 // CastFloatInt: the integer dtype's range
}

// TypedCast returns the rule of a cast from dtype from to dtype to.
func TypedCast(from, to ir.DType) TypedCastRule {
	fromFloat := from.IsFloat() || from.IsFloat64()
	switch {
	case to == ir.Bool && fromFloat:
		return TypedCastRule{Kind: CastFloatBool}
	case to == ir.Bool:
		return TypedCastRule{Kind: CastIntBool}
	case to.IsFloat64():
		return TypedCastRule{Kind: CastKeep}
	case from.IsFloat64() && to.IsFloat():
		return TypedCastRule{Kind: CastNarrow64}
	case from.IsFloat() && to.IsFloat():
		return TypedCastRule{Kind: CastKeep}
	case to.IsFloat():
		return TypedCastRule{Kind: CastIntFloat, Bits: significand[to]}
	case fromFloat:
		lo, hi := to.Range()
		return TypedCastRule{Kind: CastFloatInt, Lo: lo, Hi: hi}
	}
	return TypedCastRule{Kind: CastKeep}
}

// significand is each float dtype's significand bits, its leading one
// included.
var significand = map[ir.DType]int{ir.F32: 24, ir.F16: 11, ir.BF16: 8}

// CheckedU64 reports whether node n computes a uint64 value that may be
// 2^63 or more (an arithmetic row, a cast, a reduction), which uint64's
// int64 carrier does not hold (ir.DType): its kernel checks each result's
// sign bit and faults (the reference refuses the value, unsupported). A
// view, a gather or a where moves values already checked.
func CheckedU64(n *ir.Node) bool {
	return n.DType == ir.U64 && n.Op != ir.OpInput && n.Op != ir.OpFull && n.Op != ir.OpWhere && TypedMoves[n.Op] == nil
}

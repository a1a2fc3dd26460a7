package ir

import (
	"math"
	"sync"
)

// X is a target-neutral scalar expression: what an elementwise op computes
// from its operands, written only in float32 add, sub and mul (each rounded
// on its own, never contracted), comparisons, selects, bitcasts and u32
// integer operations. Every target renders it through its codegen.Lang and
// cpuref evaluates it, so an op's reference and its code are one
// definition. Expressions are DAGs: a node used twice is computed once.
//
// Build expressions with the constructors below (Arg, F, U, If) and the
// methods; a type error panics when the op table is built, which the
// table's completeness test catches.
type X struct {
	Op   XOp
	Args []*X
	Bits uint32 // XConst: IEEE bits; XUConst: the value
	Arg  int    // XArg: operand index (0 is a, 1 is b or the scalar operand)
	Fn   *Func  // XCall: the function applied to Args
}

// Func is a named expression of its parameters (Arg(0), Arg(1), … in
// Body): a primitive such as division or exp that ops share. An XCall of
// it means Body with its arguments in place of the parameters (Inline);
// code generators emit each function once per kernel and a call per use,
// so that generated code grows with the calls, not with the expansions, and
// a target may give a function its own exact instruction instead (see
// codegen.Lang.Native).
type Func struct {
	Name   string // a C identifier, unique among functions
	Params int    // float parameters
	Body   *X     // a float value
}

// XOp is one expression primitive.
type XOp uint8

// The primitives. Shift counts are taken modulo 32 (WGSL's rule); the
// definitions below only ever shift by less than 32.
const (
	XArg    XOp = iota // operand Arg (float)
	XConst             // the float with IEEE bits Bits
	XUConst            // the u32 Bits
	XAdd               // float a + b, one rounding
	XSub               // float a - b, one rounding
	XMul               // float a × b, one rounding
	XGt                // float a > b (false when either is NaN)
	XGe                // float a >= b
	XEq                // float a == b
	XSelect            // Args[0] ? Args[1] : Args[2]
	XBits              // the IEEE bits of a float, as u32
	XFloat             // the float whose IEEE bits are a u32
	XUAdd              // u32 a + b, wrapping
	XUSub              // u32 a - b, wrapping
	XAnd               // u32 a & b
	XOr                // u32 a | b
	XXor               // u32 a ^ b
	XShl               // u32 a << b
	XShr               // u32 a >> b (logical)
	XULt               // u32 a < b
	XUEq               // u32 a == b
	XCall              // Fn applied to Args (floats): Fn.Body with them as its parameters
	XFma               // float a × b + c, one rounding (fused; see xfma.go: only for targets that proved it)
	numXOps
)

// NumXOps is the number of expression primitives: every XOp is below it.
// Tables indexed by XOp (a code generator's renderings) have this length
// and are checked complete against it.
const NumXOps = numXOps

// XType is the type of an expression's value.
type XType uint8

// The value types.
const (
	XFloat32 XType = iota
	XUint32
	XBool
)

// Type returns the type of x's value.
func (x *X) Type() XType {
	switch x.Op {
	case XArg, XConst, XAdd, XSub, XMul, XFloat, XFma:
		return XFloat32
	case XGt, XGe, XEq, XULt, XUEq:
		return XBool
	case XSelect:
		return x.Args[1].Type()
	case XCall:
		return x.Fn.Body.Type()
	}
	return XUint32
}

// Arithmetic reports whether x rounds: a float add, sub or mul.
func (x *X) Arithmetic() bool { return x.Op == XAdd || x.Op == XSub || x.Op == XMul }

// Arg returns operand k (0: a, 1: b or the scalar operand).
func Arg(k int) *X { return &X{Op: XArg, Arg: k} }

// F returns the float constant v.
func F(v float32) *X { return &X{Op: XConst, Bits: math.Float32bits(v)} }

// FBits returns the float constant with IEEE bits b.
func FBits(b uint32) *X { return &X{Op: XConst, Bits: b} }

// U returns the u32 constant v.
func U(v uint32) *X { return &X{Op: XUConst, Bits: v} }

// If returns c ? t : f; t and f have one type.
func If(c, t, f *X) *X {
	need(c.Type() == XBool && t.Type() == f.Type(), "If needs a bool and two values of one type")
	return &X{Op: XSelect, Args: []*X{c, t, f}}
}

func need(ok bool, msg string) {
	if !ok {
		panic("ir: expression: " + msg)
	}
}

func (x *X) bin(op XOp, y *X, t XType) *X {
	need(x.Type() == t && y.Type() == t, "operand types of "+xopNames[op])
	return &X{Op: op, Args: []*X{x, y}}
}

// Add returns x + y (float).
func (x *X) Add(y *X) *X { return x.bin(XAdd, y, XFloat32) }

// Sub returns x - y (float).
func (x *X) Sub(y *X) *X { return x.bin(XSub, y, XFloat32) }

// Mul returns x × y (float).
func (x *X) Mul(y *X) *X { return x.bin(XMul, y, XFloat32) }

// Gt returns x > y (float).
func (x *X) Gt(y *X) *X { return x.bin(XGt, y, XFloat32) }

// Ge returns x >= y (float).
func (x *X) Ge(y *X) *X { return x.bin(XGe, y, XFloat32) }

// Eq returns x == y (float).
func (x *X) Eq(y *X) *X { return x.bin(XEq, y, XFloat32) }

// AsBits returns the IEEE bits of float x.
func (x *X) AsBits() *X {
	need(x.Type() == XFloat32, "AsBits of a non-float")
	return &X{Op: XBits, Args: []*X{x}}
}

// AsFloat returns the float whose bits are u32 x.
func (x *X) AsFloat() *X {
	need(x.Type() == XUint32, "AsFloat of a non-u32")
	return &X{Op: XFloat, Args: []*X{x}}
}

// UAdd returns x + y (u32, wrapping).
func (x *X) UAdd(y *X) *X { return x.bin(XUAdd, y, XUint32) }

// USub returns x - y (u32, wrapping).
func (x *X) USub(y *X) *X { return x.bin(XUSub, y, XUint32) }

// And returns x & y (u32).
func (x *X) And(y *X) *X { return x.bin(XAnd, y, XUint32) }

// Or returns x | y (u32).
func (x *X) Or(y *X) *X { return x.bin(XOr, y, XUint32) }

// Xor returns x ^ y (u32).
func (x *X) Xor(y *X) *X { return x.bin(XXor, y, XUint32) }

// Shl returns x << y (u32, y < 32).
func (x *X) Shl(y *X) *X { return x.bin(XShl, y, XUint32) }

// Shr returns x >> y (u32, logical, y < 32).
func (x *X) Shr(y *X) *X { return x.bin(XShr, y, XUint32) }

// ULt returns x < y (u32).
func (x *X) ULt(y *X) *X { return x.bin(XULt, y, XUint32) }

// UEq returns x == y (u32).
func (x *X) UEq(y *X) *X { return x.bin(XUEq, y, XUint32) }

var xopNames = [numXOps]string{"arg", "const", "uconst", "add", "sub", "mul", "gt", "ge", "eq",
	"select", "bits", "float", "uadd", "usub", "and", "or", "xor", "shl", "shr", "ult", "ueq", "call", "fma"}

func (op XOp) String() string {
	if op < numXOps {
		return xopNames[op]
	}
	return "xop?"
}

// Call returns f applied to args, one float per parameter.
func Call(f *Func, args ...*X) *X {
	need(len(args) == f.Params, "Call of "+f.Name+" with a wrong argument count")
	for _, a := range args {
		need(a.Type() == XFloat32, "Call of "+f.Name+" with a non-float argument")
	}
	return &X{Op: XCall, Fn: f, Args: args}
}

// Nodes returns the nodes of the DAG x in evaluation order (every node after
// its arguments), each once.
func (x *X) Nodes() []*X {
	var out []*X
	seen := map[*X]bool{}
	var walk func(*X)
	walk = func(y *X) {
		if seen[y] {
			return
		}
		seen[y] = true
		for _, a := range y.Args {
			walk(a)
		}
		out = append(out, y)
	}
	walk(x)
	return out
}

// Funcs returns the functions that x calls, directly or through other
// functions, each once, every function after the ones it calls.
func (x *X) Funcs() []*Func {
	var out []*Func
	seen := map[*Func]bool{}
	var walk func(*X)
	walk = func(y *X) {
		for _, n := range y.Nodes() {
			if n.Op == XCall && !seen[n.Fn] {
				seen[n.Fn] = true
				walk(n.Fn.Body)
				out = append(out, n.Fn)
			}
		}
	}
	walk(x)
	return out
}

var inlined sync.Map // *X -> *X

// Inline returns x with every call replaced by its function's body (the
// arguments in place of the parameters), recursively: the same value as a
// DAG of primitives alone. The result is computed once per expression.
func Inline(x *X) *X {
	if y, ok := inlined.Load(x); ok {
		return y.(*X)
	}
	y := inline(x, nil, map[*X]*X{})
	inlined.Store(x, y)
	return y
}

// inline copies x with calls expanded; params are the values of x's
// parameters (nil at the top level: Args stay operands), memo the copies.
func inline(x *X, params []*X, memo map[*X]*X) *X {
	if y, ok := memo[x]; ok {
		return y
	}
	var y *X
	switch {
	case x.Op == XArg && params != nil:
		y = params[x.Arg]
	case x.Op == XCall:
		args := make([]*X, len(x.Args))
		for i, a := range x.Args {
			args[i] = inline(a, params, memo)
		}
		y = inline(x.Fn.Body, args, map[*X]*X{})
	case len(x.Args) == 0:
		y = x
	default:
		c := *x
		c.Args = make([]*X, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = inline(a, params, memo)
		}
		y = &c
	}
	memo[x] = y
	return y
}

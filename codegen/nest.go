package codegen

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// A Nest is the target-neutral description of a direct kernel: what one
// element of the kernel's Shape computes, as loops over constant ranges,
// index expressions, guarded loads and one accumulator, in the reference's
// order. Each C-like target renders it through its Lang (Render) and keeps
// to itself how elements map onto threads or loops: C walks the outputs
// in tiles of its leading axes, WGSL runs a thread per element, GLSL wraps
// the nest in a function of the fragment's element. After the nest, the
// kernel's epilogue (Body, its InstrAcc the accumulator Acc) runs at the
// same element, and the kernel's stores.
//
// Invariants (Render panics on a break): every name is declared before it
// is used; Skip and Stop appear only inside a For; loads read an operand
// of the kernel with one index per axis of its Shape.
type Nest struct {
	// Name names the nest where a target makes a function of it (GLSL).
	Name string
	// Dims names the coordinates of the element, one per axis of the
	// kernel's Shape, outermost first: the target declares them as
	// indices before Body.
	Dims []string
	// Acc is the variable Body leaves the element's value in, of DType.
	Acc   string
	DType DType
	// Tables are constant u32 tables that Body indexes (resize's taps):
	// each target declares them once per kernel (Lang.Table).
	Tables []Table
	// Params are float constants that come from the kernel's attributes
	// (pad's constant), read with Param: a target with Lang.Const passes
	// them in its constant slots after the body's (see Constants), so
	// that kernels differing only in them share their source; others
	// write them as Lang.Opaque.
	Params []float32
	Body   []Stmt
}

// DType is the dtype that a nest's loads, stores and accumulator name
// (ir.DType). A target renders a type name only for the dtypes its Lang
// lists (Lang.Types); the kinds written from nests compute float32 only
// (ir.KernelInfo.DTypes refuses others by name before any target runs).
type DType = ir.DType

// F32 is float32, the dtype of every nest so far.
const F32 = ir.F32

// Type is the type of a nest variable: the target's index type, or a value
// of a DType.
type Type struct {
	Value bool
	D     DType
}

// Idx is the unsigned index type of nest coordinates and loop variables
// (C's idx, u32 on the GPU targets).
var Idx = Type{}

// Val is the type of values of dtype d.
func Val(d DType) Type { return Type{Value: true, D: d} }

// Table is a constant table of u32 values that a nest reads by index.
type Table struct {
	Name string
	Vals []uint32
}

// Expr is an expression of a nest: an index, or a value of a DType. Build
// one with N, V, Load, At, Opaque, Float, Bits, Prod and the binary
// methods.
type Expr struct {
	op   exprOp
	n    int    // eNum
	name string // eName, eTable
	bits uint32 // eOpaque
	j    int    // eLoad: the operand
	args []Expr
}

type exprOp uint8

const (
	eNum    exprOp = iota // an index constant
	eName                 // a declared variable
	eOpaque               // a float constant no compiler sees through (Lang.Opaque)
	eLoad                 // operand j at the multi-index args
	eTable                // table name at args[0]
	eFloat                // the float of the u32 bits args[0]
	eBits                 // the u32 bits of the float args[0]
	eProd                 // args[0] · args[1], rounded on its own (Lang.Keep)
	eParam                // the nest's Params[n]
	eSelect               // args[1] where args[0] holds, else args[2] (Lang.Select)
	eAdd                  // the binary operators, from here on (see binops)
	eSub
	eMul
	eDiv
	eMod
	eLt
	eGe
	eEq
	eNe
	eAnd
	eOr
	numExprOps
)

// binops is the rendering table of the binary operators: the same in C,
// WGSL and GLSL ES. A higher prec binds tighter; logic marks && and ||,
// which WGSL refuses to mix without parentheses.
var binops = [numExprOps]struct {
	sym   string
	prec  int
	logic bool
}{
	eAdd: {" + ", 5, false}, eSub: {" - ", 5, false},
	eMul: {" * ", 6, false}, eDiv: {" / ", 6, false}, eMod: {" % ", 6, false},
	eLt: {" < ", 4, false}, eGe: {" >= ", 4, false},
	eEq: {" == ", 3, false}, eNe: {" != ", 3, false},
	eAnd: {" && ", 2, true}, eOr: {" || ", 1, true},
}

func init() {
	for op := eAdd; op < numExprOps; op++ {
		if binops[op].sym == "" {
			panic(fmt.Sprintf("codegen: BUG: nest operator %d has no rendering row in binops", op))
		}
	}
}

// N is the index constant n.
func N(n int) Expr { return Expr{op: eNum, n: n} }

// V is the variable name.
func V(name string) Expr { return Expr{op: eName, name: name} }

// Load is operand j's element at the multi-index idx (one per axis of the
// operand's logical Shape).
func Load(j int, idx ...Expr) Expr { return Expr{op: eLoad, j: j, args: idx} }

// At is element i of table name.
func At(table string, i Expr) Expr { return Expr{op: eTable, name: table, args: []Expr{i}} }

// Opaque is the float of IEEE bits b, written so that no compiler folds
// it (an accumulator's start: see Lang.Opaque).
func Opaque(b uint32) Expr { return Expr{op: eOpaque, bits: b} }

// Param is the nest's float constant Params[i].
func Param(i int) Expr { return Expr{op: eParam, n: i} }

// Float is the float whose IEEE bits are the u32 u.
func Float(u Expr) Expr { return Expr{op: eFloat, args: []Expr{u}} }

// Bits is the u32 of float f's IEEE bits.
func Bits(f Expr) Expr { return Expr{op: eBits, args: []Expr{f}} }

// Prod is a·b rounded on its own: no compiler contracts it with an add.
func Prod(a, b Expr) Expr { return Expr{op: eProd, args: []Expr{a, b}} }

// Sel is t where cond holds, else f (of one type, index or value).
func Sel(cond, t, f Expr) Expr { return Expr{op: eSelect, args: []Expr{cond, t, f}} }

func (a Expr) bin(op exprOp, b Expr) Expr { return Expr{op: op, args: []Expr{a, b}} }

// Add is a + b; the other methods are the operators they are named after.
func (a Expr) Add(b Expr) Expr { return a.bin(eAdd, b) }
func (a Expr) Sub(b Expr) Expr { return a.bin(eSub, b) }
func (a Expr) Mul(b Expr) Expr { return a.bin(eMul, b) }
func (a Expr) Div(b Expr) Expr { return a.bin(eDiv, b) }
func (a Expr) Mod(b Expr) Expr { return a.bin(eMod, b) }
func (a Expr) Lt(b Expr) Expr  { return a.bin(eLt, b) }
func (a Expr) Ge(b Expr) Expr  { return a.bin(eGe, b) }
func (a Expr) Eq(b Expr) Expr  { return a.bin(eEq, b) }
func (a Expr) Ne(b Expr) Expr  { return a.bin(eNe, b) }
func (a Expr) And(b Expr) Expr { return a.bin(eAnd, b) }
func (a Expr) Or(b Expr) Expr  { return a.bin(eOr, b) }

// Stmt is one statement of a nest.
type Stmt struct {
	kind stmtKind
	name string
	typ  Type
	x    Expr
	n    int // sFor: the trip count
	body []Stmt
	op   ir.Op // sCombine, sApply
	a, b string
	args []string // sApply
}

type stmtKind uint8

const (
	sLet     stmtKind = iota // an immutable name = x
	sVar                     // a mutable name = x
	sSet                     // name = x
	sFor                     // for name over [0, n): body
	sIf                      // if x: body
	sSkip                    // if x: the enclosing loop's next iteration
	sStop                    // if x: leave the enclosing loop
	sCombine                 // name = the combining op of reduction op (a, b)
	sApply                   // name = elementwise op (args)
)

// Let declares the immutable name = x of type t.
func Let(t Type, name string, x Expr) Stmt { return Stmt{kind: sLet, typ: t, name: name, x: x} }

// Var declares the mutable name = x of type t.
func Var(t Type, name string, x Expr) Stmt { return Stmt{kind: sVar, typ: t, name: name, x: x} }

// Set assigns x to the variable name.
func Set(name string, x Expr) Stmt { return Stmt{kind: sSet, name: name, x: x} }

// For runs body for name = 0, 1, …, n-1.
func For(name string, n int, body ...Stmt) Stmt {
	return Stmt{kind: sFor, name: name, n: n, body: body}
}

// If runs body where cond holds.
func If(cond Expr, body ...Stmt) Stmt { return Stmt{kind: sIf, x: cond, body: body} }

// Skip goes on to the enclosing loop's next iteration where cond holds.
func Skip(cond Expr) Stmt { return Stmt{kind: sSkip, x: cond} }

// Stop leaves the enclosing loop where cond holds.
func Stop(cond Expr) Stmt { return Stmt{kind: sStop, x: cond} }

// Fold declares name as reduction op's combining op (ir.OpInfo.Combine:
// maximum for max) applied to the values a and b.
func Fold(name string, op ir.Op, a, b string) Stmt {
	return Stmt{kind: sCombine, name: name, op: op, a: a, b: b}
}

// Apply declares name as elementwise op (the op table's expression: exp,
// div, …) applied to the values args. The expression's own float
// constants would need slots that the nest does not give them: an op
// with one is a bug and panics when rendered; exp and div are calls of
// functions (see codegen.FuncsOf), whose constants are theirs.
func Apply(name string, op ir.Op, args ...string) Stmt {
	return Stmt{kind: sApply, name: name, op: op, args: args}
}

// Ops returns the ops that the nest's Apply statements use, each once.
func (n *Nest) Ops() []ir.Op {
	var out []ir.Op
	var walk func(ss []Stmt)
	walk = func(ss []Stmt) {
		for _, s := range ss {
			if s.kind == sApply && !slices.Contains(out, s.op) {
				out = append(out, s.op)
			}
			walk(s.body)
		}
	}
	walk(n.Body)
	return out
}

// Render returns the nest's body in l for kernel k, as lines (the
// coordinates and tables are the target's to declare: see Coords and
// Lang.Table).
func (n *Nest) Render(l Lang, k *ir.Kernel) []string {
	r := nestRenderer{l: l, k: k, n: n}
	if l.Const != nil {
		r.base = len(bodyConstants(k))
	}
	return r.stmts(n.Body, 0)
}

// Coords declares dims[from:], the coordinates of the element at flat
// row-major index flat of shape (flat counts only the axes from from on).
// The innermost needs no division and the outermost no modulo.
func Coords(l Lang, dims []string, shape ir.Shape, from int, flat string) []string {
	var lines []string
	inner := 1
	for d := len(dims) - 1; d >= from; d-- {
		e := flat
		if inner > 1 {
			e += " / " + l.Uint(inner)
		}
		if d > from {
			e += " % " + l.Uint(shape[d])
		}
		lines = append(lines, l.Decl(l.TypeName(Idx), dims[d], e, false))
		inner *= shape[d]
	}
	return lines
}

// TableDecls declares the nest's tables in l.
func (n *Nest) TableDecls(l Lang) []string {
	var lines []string
	for _, t := range n.Tables {
		lines = append(lines, l.Table(t.Name, t.Vals))
	}
	return lines
}

// LoopCost is the most loop iterations the nest runs per element, each
// loop counted with its exit test, as ir.LoopBudget counts them: a loop of
// n trips inside loops of m trips in all costs m·(n+1).
func (n *Nest) LoopCost() int { return loopCost(n.Body, 1) }

func loopCost(ss []Stmt, outer int) int {
	c := 0
	for _, s := range ss {
		switch s.kind {
		case sFor:
			c += outer*(s.n+1) + loopCost(s.body, outer*s.n)
		case sIf:
			c += loopCost(s.body, outer)
		}
	}
	return c
}

// TypeName renders type t in l: Lang.Index, or the dtype's row of
// Lang.Types. A dtype with no row panics: nests are built for the dtypes
// each target lists, and refused by name otherwise.
func (l Lang) TypeName(t Type) string {
	if !t.Value {
		return l.Index
	}
	if int(t.D) >= len(l.Types) || l.Types[t.D] == "" {
		panic(fmt.Sprintf("codegen: BUG: dtype %v has no type name in this target's Lang.Types", t.D))
	}
	return l.Types[t.D]
}

type nestRenderer struct {
	l    Lang
	k    *ir.Kernel
	n    *Nest
	base int // the constant slot of Params[0]
}

func (r nestRenderer) stmts(ss []Stmt, depth int) []string {
	var lines []string
	for _, s := range ss {
		switch s.kind {
		case sLet, sVar:
			lines = append(lines, r.l.Decl(r.l.TypeName(s.typ), s.name, r.expr(s.x), s.kind == sVar))
		case sSet:
			lines = append(lines, s.name+" = "+r.expr(s.x)+";")
		case sFor:
			lines = append(lines, r.l.For(r.l.TypeName(Idx), s.name, r.l.Uint(s.n)))
			lines = append(lines, indent(r.stmts(s.body, depth+1))...)
			lines = append(lines, "}")
		case sIf:
			lines = append(lines, "if ("+r.expr(s.x)+") {")
			lines = append(lines, indent(r.stmts(s.body, depth))...)
			lines = append(lines, "}")
		case sSkip, sStop:
			if depth == 0 {
				panic("codegen: BUG: a nest's Skip or Stop outside a loop")
			}
			word := "continue"
			if s.kind == sStop {
				word = "break"
			}
			lines = append(lines, "if ("+r.expr(s.x)+") { "+word+"; }")
		case sCombine:
			lines = append(lines, Combine(r.l, s.op, s.a, s.b, s.name)...)
		case sApply:
			args := append(slices.Clone(s.args), "", "")
			lines = append(lines, expr(r.l, s.op.Info().Expr, s.name, args, false, func(float32) string {
				panic("codegen: BUG: a nest applies " + s.op.String() + ", whose expression has a float constant")
			})...)
		}
	}
	return lines
}

func indent(lines []string) []string {
	for i, ln := range lines {
		lines[i] = "\t" + ln
	}
	return lines
}

// expr renders e at the top of an expression.
func (r nestRenderer) expr(e Expr) string {
	switch e.op {
	case eNum:
		return r.l.Uint(e.n)
	case eName:
		return e.name
	case eParam:
		if r.l.Const != nil {
			return r.l.Const(r.base + e.n)
		}
		return r.expr(Opaque(math.Float32bits(r.n.Params[e.n])))
	case eOpaque:
		if r.l.Opaque != nil {
			return r.l.Opaque(e.bits)
		}
		return r.l.Bits(e.bits)
	case eLoad:
		op := r.k.Inputs[e.j]
		if len(e.args) != len(op.Shape) {
			panic(fmt.Sprintf("codegen: BUG: a nest loads operand %d of rank %d at %d indices", e.j, len(op.Shape), len(e.args)))
		}
		idx := make([]string, len(e.args))
		for d, a := range e.args {
			idx[d] = r.expr(a)
		}
		if r.l.Load != nil {
			return r.l.Load(r.l, e.j, op, idx)
		}
		return fmt.Sprintf("in%d[%s]", e.j, Offset(r.l, op, idx))
	case eTable:
		return e.name + "[" + r.expr(e.args[0]) + "]"
	case eFloat:
		return r.l.BitsFloat(r.expr(e.args[0]))
	case eBits:
		return r.l.FloatBits(r.expr(e.args[0]))
	case eSelect:
		return r.l.Select(r.expr(e.args[0]), r.expr(e.args[1]), r.expr(e.args[2]))
	case eProd:
		return r.l.Keep(r.operand(e.args[0], binops[eMul].prec, false, false) + " * " + r.operand(e.args[1], binops[eMul].prec, true, false))
	}
	row := binops[e.op]
	return r.operand(e.args[0], row.prec, false, row.logic) + row.sym + r.operand(e.args[1], row.prec, true, row.logic)
}

// operand renders e as an operand of a binary operator of precedence prec
// (on its right side when right), in parentheses where it binds less
// tightly, or as tightly on the right, or is a logical operator under
// another logical operator (WGSL refuses a && b || c).
func (r nestRenderer) operand(e Expr, prec int, right, logic bool) string {
	s := r.expr(e)
	if e.op < eAdd {
		return s
	}
	row := binops[e.op]
	if row.prec < prec || right && row.prec == prec || logic && row.logic && row.prec != prec {
		return "(" + s + ")"
	}
	return s
}

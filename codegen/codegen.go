// Package codegen holds what the C-like targets (WGSL, GLSL ES, C) share:
// exact float literals, the rendering of a kernel body (one named value per
// Instr), strided operand indexing (Offset, Index), the exactness guard
// on products, and the direct kernels (convolution, pooling and its
// gradient, transposed convolution, resize), each written once as a
// target-neutral loop nest (Nest, nests.go) that every target renders.
// Each target package (codegen/wgsl, codegen/glsl, codegen/c) describes its
// syntax in a Lang and keeps its real differences (buffers, threads,
// reductions) to itself.
//
// The typed kernels' semantics are tables here too (typed.go): an integer
// op is a row of TypedIntRows (an expression over int64 primitives that
// each target's IntLang renders: native int64 in C, word pairs in WGSL and
// GLSL), a cast's conversion is TypedCast's rule, and a float op is its
// ir.OpInfo.Expr rendered through Exact (typedexact.go), subnormal-exact on
// a GPU that flushes. Adding a typed elementwise op is a row there and its
// reference in cpuref.
package codegen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpucc/gpucc/ir"
)

// Target is a code generator: Emit turns a sealed Program (passes.Compile
// returns one; ir.Seal makes one) into the code of one target. Emitters
// trust the program's invariants (ir.ValidateProgram), which the type
// proves, and do not check them again.
type Target[Code any] interface {
	// Name identifies the target and the generator settings that change
	// its output; caches of generated code include it in their keys.
	Name() string
	Emit(p *ir.Sealed) (Code, error)
}

// Lang is the syntax of one C-like target.
type Lang struct {
	// Let declares an immutable value of type t named name: "let v1 = x;"
	// or "float v1 = x;". Expressions are rendered without the semicolon.
	Let func(t ir.XType, name, expr string) string
	// Bits returns the float whose IEEE bits are b, exactly (a bitcast, not
	// a decimal literal, so no compiler rounds it).
	Bits func(b uint32) string
	// Select returns cond ? t : f.
	Select func(cond, t, f string) string
	// Keep wraps a value in an identity the compiler cannot see through. It
	// wraps every product, so that no compiler contracts it with a following
	// add into a fused multiply-add (see cpuref: products round on their
	// own) nor reassociates it with the product that reads it (an H200's
	// driver turned sinh's (w·½)·w into (w·w)·½, +Inf for a finite
	// 2.2e38, when products read only by products went bare for a day:
	// 0cedfd9, reverted), and every subtrahend, so that x - x is never
	// folded to +0 (it is NaN for infinite x, and folding then lets 0 * y
	// lose its sign).
	Keep func(v string) string
	// Uint formats an unsigned index constant.
	Uint func(n int) string
	// UBits renders the u32 constant v as a value of the body's u32 type;
	// FloatBits and BitsFloat render the bitcasts between float and u32.
	UBits     func(v uint32) string
	FloatBits func(f string) string
	BitsFloat func(u string) string
	// Const, when set, renders float constant number slot (see Constants)
	// as a value the compiler cannot see, such as a uniform. Drivers that
	// treat shader arithmetic as reassociable fold (x + c1) - c2 into
	// x + (c1 - c2), which rounds differently; lavapipe does. When nil,
	// constants are exact literals (right for C with -ffp-contract=off,
	// which never reassociates).
	Const func(slot int) string
	// KeepSums wraps every sum and difference in Keep too, for a target
	// whose constants are literals (no Const) on drivers that reassociate
	// float adds: ANGLE on SwiftShader compiles (x·k + c1) + c2 as
	// x·k + (c1 + c2), which rounds differently (PaddleOCR's detector, a
	// batch norm feeding hard-swish's x + 3, gave 525 of 4096 values 1 ULP
	// off on the page's webgl2). A sum behind an opaque ×1 starts no chain.
	KeepSums bool
	// Zero and One, when set, are opaque 0.0 and 1.0 for the results of
	// relu and positive. Drivers rewrite select(0, 1, c) * k into
	// select(0, k, c), which loses the sign of 0 * -k; an operand they
	// cannot see through keeps the reference's -0.
	Zero, One string
	// Func renders the head of a function definition, up to its opening
	// brace: name, float parameters named params, a float result. Calls of
	// an ir.Func become calls of one such function per kernel (see Funcs).
	Func func(name string, params []string) string
	// Native holds, by ir.Func name, the definitions this target gives a
	// function instead of its expression: an instruction of the target's
	// own that computes the same bits for every input its callers use
	// (C's IEEE division and square root, say; ir's div_normal is only
	// called where its operands are positive normals). Each is a complete
	// definition of FuncName(f)
	// with f.Params float parameters. A function without one is emitted
	// from its expression.
	Native map[string]string
	// FMA names the fused multiply-add function that renders ir.XFma
	// (one rounding): "fma" when empty (WGSL; GLSL ES 3.00, webgl2's, has
	// none, and no kernel of it uses XFma), C's "fmaf".
	FMA string

	// The rest renders nests (see Nest), as tables.

	// Index names the index type of nest coordinates and loops; Types
	// names the value types by DType (only the dtypes the target has).
	Index string
	Types []string
	// Decl declares name = expr of the type named t, mutable or not.
	Decl func(t, name, expr string, mutable bool) string
	// For renders the head of a loop of name (of the index type t) over
	// [0, n), with its opening brace.
	For func(t, name, n string) string
	// Opaque, when set, renders a float constant that no compiler may fold
	// (a nest accumulator's start: a driver that sees a literal +0 folds
	// +0 + p into p, which keeps a -0 the reference turns into +0); when
	// nil, Bits does.
	Opaque func(bits uint32) string
	// Load, when set, renders the read of operand j (op) at the
	// multi-index idx (l is the Lang itself); when nil, it is
	// in<j>[Offset(op, idx)].
	Load func(l Lang, j int, op ir.Operand, idx []string) string
	// Table declares a constant table of u32 values named name.
	Table func(name string, vals []uint32) string
	// Array declares a mutable local array of n values of the type named
	// t, uninitialized (CounterTree's stack of subtrees).
	Array func(t, name string, n int) string
}

// FuncName is the name that generated code gives function f.
func FuncName(f *ir.Func) string { return "prim_" + f.Name }

// FuncsOf returns the functions that the bodies of ks and their nests'
// Apply statements call, directly or through other functions, each once, every function after the ones it
// calls.
func FuncsOf(ks ...*ir.Kernel) []*ir.Func {
	var out []*ir.Func
	seen := map[*ir.Func]bool{}
	add := func(op ir.Op) {
		for _, f := range funcsOf(op.Info().Expr) {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	for _, k := range ks {
		for _, in := range k.Body {
			if in.Kind == ir.InstrOp {
				add(in.Op)
			}
		}
		if HasNest(k.Kind) { // a nest's Apply statements call them too
			for _, op := range NestOf(k).Ops() {
				add(op)
			}
		}
	}
	return out
}

// Funcs renders the definitions of the functions that k's body calls
// (FuncsOf), each once, callees first: every use is a call, so a body's
// code grows by a line per call, not by the expansion. Their constants
// take the slots after the body's (see Constants).
func Funcs(l Lang, k *ir.Kernel) []string {
	slot := 0
	for _, in := range k.Body {
		if in.Kind == ir.InstrConst || in.Kind == ir.InstrOp && in.Op.Info().Scalar {
			slot++
		}
		if in.Kind == ir.InstrOp {
			slot += len(arithConsts(in.Op.Info().Expr))
		}
	}
	return Define(l, FuncsOf(k), slot)
}

// Define renders the definitions of fs, in order: l.Native's where it has
// one, else the function's expression, its constants in slots from slot
// on when l.Const is set.
func Define(l Lang, fs []*ir.Func, slot int) []string {
	constant := func(v float32) string {
		if l.Const == nil {
			return l.Float(v)
		}
		slot++
		return l.Const(slot - 1)
	}
	var lines []string
	for _, f := range fs {
		if def, ok := l.Native[f.Name]; ok {
			slot += len(arithConsts(f.Body)) // Constants counts them all
			lines = append(lines, strings.Split(strings.TrimRight(def, "\n"), "\n")...)
			lines = append(lines, "")
			continue
		}
		params := make([]string, f.Params)
		for i := range params {
			params[i] = fmt.Sprintf("p%d", i)
		}
		lines = append(lines, l.Func(FuncName(f), params))
		for _, ln := range expr(l, f.Body, "r", params, false, constant) {
			lines = append(lines, "\t"+ln)
		}
		lines = append(lines, "\treturn r;", "}", "")
	}
	return lines
}

// Constants returns the float constants of k's body in slot order: the
// value of each InstrConst, then for each op instruction its scalar
// operand (a scalar form's) and the constants its expression computes with
// (see arithConsts); then those of each function the body calls, in
// FuncsOf's order; then, for a kernel written from a nest, the nest's
// Params. A target without Lang.Native entries for them uses every slot.
func Constants(k *ir.Kernel) []float32 {
	out := bodyConstants(k)
	if HasNest(k.Kind) {
		out = append(out, NestOf(k).Params...)
	}
	return out
}

// bodyConstants is Constants without a nest's Params: the slots before
// them.
func bodyConstants(k *ir.Kernel) []float32 {
	var out []float32
	for _, in := range k.Body {
		if in.Kind == ir.InstrConst || in.Kind == ir.InstrOp && in.Op.Info().Scalar {
			out = append(out, in.Scalar)
		}
		if in.Kind == ir.InstrOp {
			for _, c := range arithConsts(in.Op.Info().Expr) {
				out = append(out, math.Float32frombits(c.Bits))
			}
		}
	}
	for _, f := range FuncsOf(k) { // after the body's, as Funcs renders them
		for _, c := range arithConsts(f.Body) {
			out = append(out, math.Float32frombits(c.Bits))
		}
	}
	return out
}

// arithConsts returns the constants of x that a target with Lang.Const
// hides from its compiler, in evaluation order: operands of a float add,
// sub or mul (or of its exact form, see Exact), which a compiler could
// otherwise reassociate, and ±Inf and NaN, which WGSL refuses as constant
// expressions.
//
// The result is computed once per expression (the op table's and its
// functions' are fixed) and shared: callers must not modify it. A model's
// kernels ask for the same few expressions thousands of times (EfficientNet-B0's
// 115 kernels: a third of its WGSL generation walked them afresh).
func arithConsts(x *ir.X) []*ir.X {
	if c, ok := arithMemo.Load(x); ok {
		return c.([]*ir.X)
	}
	c, _ := arithMemo.LoadOrStore(x, arithConstsOf(x))
	return c.([]*ir.X)
}

// funcsOf is x.Funcs(), computed once per expression as arithConsts is.
func funcsOf(x *ir.X) []*ir.Func {
	if fs, ok := funcsMemo.Load(x); ok {
		return fs.([]*ir.Func)
	}
	fs, _ := funcsMemo.LoadOrStore(x, x.Funcs())
	return fs.([]*ir.Func)
}

// nodesOf is x.Nodes(), computed once per expression as arithConsts is.
func nodesOf(x *ir.X) []*ir.X {
	if ns, ok := nodesMemo.Load(x); ok {
		return ns.([]*ir.X)
	}
	ns, _ := nodesMemo.LoadOrStore(x, x.Nodes())
	return ns.([]*ir.X)
}

var arithMemo, funcsMemo, nodesMemo sync.Map // *ir.X -> []*ir.X, []*ir.Func, []*ir.X

func arithConstsOf(x *ir.X) []*ir.X {
	used := map[*ir.X]bool{}
	nodes := nodesOf(x)
	for _, n := range nodes {
		for _, a := range n.Args {
			used[a] = used[a] || a.Op == ir.XConst && (n.Arithmetic() || n.Op == ir.XCall && exactPrim[n.Fn] || a.Bits&0x7f800000 == 0x7f800000)
		}
	}
	var out []*ir.X
	for _, n := range nodes {
		if used[n] {
			out = append(out, n)
		}
	}
	return out
}

// Float returns v as an exact literal of l.
func (l Lang) Float(v float32) string { return l.Bits(math.Float32bits(v)) }

// Body renders the instructions of k as declarations: one per value,
// named v0, v1, …, preceded by one per inner node of an op's expression
// (v<j>_<n>). load(operand) renders the read of that operand at the
// current element; acc is the matmul accumulator's expression (unused
// otherwise).
func Body(l Lang, k *ir.Kernel, load func(operand int) string, acc string) []string {
	return BodyRange(l, k, 0, len(k.Body), load, acc)
}

// Prologue and Epilogue split a reduction kernel's body at its InstrAcc
// (ir.KernelReduce): the values before it, evaluated per leaf, and those from
// it on (the InstrAcc rendered as acc), evaluated per output. A body
// without an epilogue is all prologue.
func Prologue(l Lang, k *ir.Kernel, load func(operand int) string) []string {
	end := k.AccIndex()
	if end < 0 {
		end = len(k.Body)
	}
	return BodyRange(l, k, 0, end, load, "")
}

// Epilogue: see Prologue.
func Epilogue(l Lang, k *ir.Kernel, load func(operand int) string, acc string) []string {
	if k.AccIndex() < 0 {
		return nil
	}
	return BodyRange(l, k, k.AccIndex(), len(k.Body), load, acc)
}

// BodyRange is Body of instructions from..to-1 only; constants keep the
// slots they have in the whole body.
func BodyRange(l Lang, k *ir.Kernel, from, to int, load func(operand int) string, acc string) []string {
	lines := make([]string, 0, len(k.Body))
	slot := 0
	constant := func(v float32) string {
		if l.Const == nil {
			return l.Float(v)
		}
		slot++
		return l.Const(slot - 1)
	}
	mark := 0 // the lines before from are rendered for their slots, then dropped
	for j, in := range k.Body {
		if j >= to {
			break
		}
		if j == from {
			mark = len(lines)
		}
		name := Value(j)
		switch in.Kind {
		case ir.InstrConst:
			lines = append(lines, l.Let(ir.XFloat32, name, constant(in.Scalar)))
		case ir.InstrLoad:
			lines = append(lines, l.Let(ir.XFloat32, name, load(in.Operand)))
		case ir.InstrAcc:
			lines = append(lines, l.Let(ir.XFloat32, name, acc))
		case ir.InstrOp:
			info := in.Op.Info()
			args := []string{Value(int(in.Args[0])), Value(int(in.Args[1]))}
			if info.Scalar {
				args[1] = constant(in.Scalar)
			}
			lines = append(lines, expr(l, info.Expr, name, args, info.Scalar, constant)...)
		}
	}
	if from >= to {
		return nil
	}
	return lines[mark:]
}

// Value names body value j.
func Value(j int) string { return "v" + strconv.Itoa(j) }

// expr renders expression x as declarations ending in name; args are the
// operands (args[1] is a constant when scalar) and constant renders the
// next constant slot. Leaves are written in place: an operand by name, a
// constant as a slot where it is an arithmetic operand, else as an exact
// literal (Zero and One for a selected 0 or 1, see Lang).
func expr(l Lang, x *ir.X, name string, args []string, scalar bool, constant func(float32) string) []string {
	p := planOf(x)
	nodes := p.nodes
	// names[i] renders node i where it is used; arith[i] an arithmetic
	// constant's slot (p.arith, rendered in arithConsts' order).
	names := make([]string, 2*len(nodes))
	names, arith := names[:len(nodes)], names[len(nodes):]
	for _, i := range p.arith {
		arith[i] = constant(math.Float32frombits(nodes[i].Bits))
	}
	lines := make([]string, 0, p.lets)
	// The node being rendered and its arguments' indices, which use and
	// constLike read: one closure each per expression, not per node.
	var n *ir.X
	var at []int32
	// use renders argument k of n.
	use := func(k int) string {
		a := n.Args[k]
		if a.Op != ir.XConst {
			return names[at[k]]
		}
		if p.isArith[at[k]] {
			return arith[at[k]]
		}
		if n.Op == ir.XSelect && l.Zero != "" {
			switch math.Float32frombits(a.Bits) {
			case 0:
				if a.Bits == 0 {
					return l.Zero
				}
				// -0 as the negated uniform zero: SwiftShader turned
				// a selected -0 literal into +0 (mask, and so where).
				return "-" + l.Zero
			case 1:
				return l.One
			}
		}
		return l.Bits(a.Bits)
	}
	// constLike: a subtrahend that is a constant needs no Keep (it
	// cannot be the minuend's twin).
	constLike := func(k int) bool {
		a := n.Args[k]
		return a.Op == ir.XConst || scalar && a.Op == ir.XArg && a.Arg == 1
	}
	for i, node := range nodes {
		n, at = node, p.args[i]
		switch n.Op {
		case ir.XArg:
			names[i] = args[n.Arg]
			continue
		case ir.XConst:
			continue // rendered at each use, by use
		case ir.XUConst:
			names[i] = l.UBits(n.Bits)
			continue
		}
		var e string
		if n.Op == ir.XCall {
			as := make([]string, len(n.Args))
			for k := range as {
				as[k] = use(k)
			}
			e = FuncName(n.Fn) + "(" + strings.Join(as, ", ") + ")"
		} else {
			e = render(n.Op)(l, use, constLike)
		}
		if n.Type() == ir.XBool { // a comparison: written into the select that reads it
			names[i] = e
			continue
		}
		v := name
		if i < len(nodes)-1 {
			v = name + "_" + strconv.Itoa(i)
		}
		names[i] = v
		lines = append(lines, l.Let(n.Type(), v, e))
	}
	if names[len(nodes)-1] != name { // a leaf: an operand or a constant
		lines = append(lines, l.Let(ir.XFloat32, name, names[len(nodes)-1]))
	}
	return lines
}

// exprPlan is what expr needs of an expression besides its rendering,
// computed once per expression (the op table's and its functions' are
// fixed; see arithConsts): its nodes in evaluation order, each node's
// arguments as indices into them, the arithmetic constants' indices in
// arithConsts' order and a mark of each, and how many lines it declares at
// most.
type exprPlan struct {
	nodes   []*ir.X
	args    [][]int32
	arith   []int32
	isArith []bool
	lets    int
}

var planMemo sync.Map // *ir.X -> *exprPlan

func planOf(x *ir.X) *exprPlan {
	if p, ok := planMemo.Load(x); ok {
		return p.(*exprPlan)
	}
	nodes := nodesOf(x)
	p := &exprPlan{nodes: nodes, args: make([][]int32, len(nodes)), isArith: make([]bool, len(nodes)), lets: 1}
	at := make(map[*ir.X]int32, len(nodes))
	for i, n := range nodes {
		at[n] = int32(i)
		p.args[i] = make([]int32, len(n.Args))
		for k, a := range n.Args {
			p.args[i][k] = at[a] // every argument comes before its node
		}
		if n.Op != ir.XArg && n.Op != ir.XConst && n.Op != ir.XUConst {
			p.lets++
		}
	}
	for _, c := range arithConsts(x) {
		p.arith = append(p.arith, at[c])
		p.isArith[at[c]] = true
	}
	q, _ := planMemo.LoadOrStore(x, p)
	return q.(*exprPlan)
}

// keepSum is sum v, wrapped in Keep where the target keeps sums.
func (l Lang) keepSum(v string) string {
	if l.KeepSums {
		return l.Keep(v)
	}
	return v
}

// A prim renders one expression primitive that is not a leaf: use(k) is
// its operand k, rendered, and constLike(k) reports that operand k is a
// constant (a subtrahend that needs no Lang.Keep).
type prim func(l Lang, use func(k int) string, constLike func(k int) bool) string

// prims is the rendering table of the expression primitives, indexed by
// ir.XOp: every C-like target writes them alike, and what differs between
// targets (selects, bitcasts, Keep) the table asks of the target's Lang.
// Leaves (leafXOps) are written in place by expr. init panics on a
// primitive with no row, so a new ir.XOp cannot render as nothing (two
// operands pasted together, "v1v2"); TestPrimsComplete renders every row
// through every target's Lang.
var prims = [ir.NumXOps]prim{
	ir.XAdd: func(l Lang, use func(int) string, _ func(int) bool) string {
		return l.keepSum(use(0) + " + " + use(1))
	},
	ir.XSub: func(l Lang, use func(int) string, constLike func(int) bool) string {
		if constLike(1) {
			return l.keepSum(use(0) + " - " + use(1))
		}
		return l.keepSum(use(0) + " - " + l.Keep(use(1)))
	},
	ir.XMul:    func(l Lang, use func(int) string, _ func(int) bool) string { return l.Keep(use(0) + " * " + use(1)) },
	ir.XGt:     infix(" > "),
	ir.XGe:     infix(" >= "),
	ir.XEq:     infix(" == "),
	ir.XSelect: func(l Lang, use func(int) string, _ func(int) bool) string { return l.Select(use(0), use(1), use(2)) },
	ir.XBits:   func(l Lang, use func(int) string, _ func(int) bool) string { return l.FloatBits(use(0)) },
	ir.XFloat:  func(l Lang, use func(int) string, _ func(int) bool) string { return l.BitsFloat(use(0)) },
	ir.XUAdd:   infix(" + "),
	ir.XUSub:   infix(" - "),
	ir.XAnd:    infix(" & "),
	ir.XOr:     infix(" | "),
	ir.XXor:    infix(" ^ "),
	ir.XShl:    infix(" << "),
	ir.XShr:    infix(" >> "),
	ir.XULt:    infix(" < "),
	ir.XUEq:    infix(" == "),
	ir.XFma: func(l Lang, use func(int) string, _ func(int) bool) string {
		f := l.FMA
		if f == "" {
			f = "fma"
		}
		return f + "(" + use(0) + ", " + use(1) + ", " + use(2) + ")"
	},
}

// leafXOps are the primitives expr writes in place, with no row in prims,
// and calls (ir.XCall), which expr writes from the node's function.
var leafXOps = []ir.XOp{ir.XArg, ir.XConst, ir.XUConst, ir.XCall}

// infix renders a op b.
func infix(op string) prim {
	return func(_ Lang, use func(int) string, _ func(int) bool) string { return use(0) + op + use(1) }
}

func init() {
	if err := checkPrims(&prims); err != nil {
		panic(err)
	}
}

// checkPrims returns an error naming the first primitive, leaves aside,
// that table has no row for.
func checkPrims(table *[ir.NumXOps]prim) error {
	for op := range ir.NumXOps {
		if table[op] == nil && !slices.Contains(leafXOps, op) {
			return fmt.Errorf("codegen: BUG: expression primitive %v has no rendering row in prims", op)
		}
	}
	return nil
}

// render returns op's row of prims.
func render(op ir.XOp) prim {
	if op >= ir.NumXOps || prims[op] == nil {
		panic(fmt.Sprintf("codegen: BUG: expression primitive %v has no rendering row in prims", op))
	}
	return prims[op]
}

// Offset renders the buffer element that operand op reads at the
// multi-index idx (one index expression per dimension of op.Shape):
// op.Offset + Σ idx[d]·Strides[d], leaving out dimensions of size 1 or
// stride 0 and a zero Offset. It is the one rendering of operand
// indexing: every target's loads go through it, directly with
// per-dimension indices or through Index.
func Offset(l Lang, op ir.Operand, idx []string) string {
	var terms []string
	if op.Offset != 0 {
		terms = append(terms, l.Uint(op.Offset))
	}
	for d, s := range op.Strides {
		switch {
		case op.Shape[d] == 1 || s == 0:
		case s == 1:
			terms = append(terms, idx[d])
		default:
			terms = append(terms, paren(idx[d])+" * "+l.Uint(s))
		}
	}
	if len(terms) == 0 {
		return l.Uint(0)
	}
	return strings.Join(terms, " + ")
}

// Index renders the buffer element that operand op reads at row-major
// element i of its logical shape (i < op.Shape.Len()): i itself for a
// plain operand, else Offset of the multi-index of i over the operand's
// coalesced dimensions (the outermost needs no modulo, and a broadcast
// dimension no index at all).
func Index(l Lang, op ir.Operand, i string) string {
	c := op.Coalesced()
	if c.Plain() {
		return i
	}
	if c.Offset != 0 && (ir.Operand{Shape: c.Shape, Strides: c.Strides}).Plain() { // a contiguous slice
		return l.Uint(c.Offset) + " + " + paren(i)
	}
	idx := make([]string, len(c.Shape))
	inner := 1
	for d := len(c.Shape) - 1; d >= 0; d-- {
		if c.Strides[d] != 0 {
			e := i
			if inner > 1 {
				e = paren(e) + " / " + l.Uint(inner)
			}
			if d > 0 {
				e = paren(e) + " % " + l.Uint(c.Shape[d])
			}
			idx[d] = e
		}
		inner *= c.Shape[d]
	}
	return Offset(l, c, idx)
}

// paren wraps e in parentheses unless it is a name or a number.
func paren(e string) string {
	for _, r := range e {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "(" + e + ")"
		}
	}
	return e
}

// Indent prefixes every line with tabs.
func Indent(lines []string, tabs int) string {
	var b strings.Builder
	pre := strings.Repeat("\t", tabs)
	n := 0
	for _, ln := range lines {
		n += len(pre) + len(ln) + 1
	}
	b.Grow(n) // one allocation: a kernel's body is thousands of lines
	for _, ln := range lines {
		b.WriteString(pre)
		b.WriteString(ln)
		b.WriteByte('\n')
	}
	return b.String()
}

// SumBlock returns P, the power of two ≥ n, and B, the leaves each of
// threads reduces sequentially (P/threads, at least 1). cpuref's sum tree
// over P leaves is the tree over threads blocks of B contiguous leaves.
func SumBlock(n, threads int) (p, b int) {
	p = 1
	for p < n {
		p *= 2
	}
	b = p / threads
	if b < 1 {
		b = 1
	}
	return p, b
}

// Log2 returns log2 of a power of two.
func Log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// BindingKind is how a kernel binds one buffer.
type BindingKind int

// The binding kinds, in the order kernels declare them.
const (
	ReadOnly  BindingKind = iota // an input operand
	ReadWrite                    // an output
	Uniform                      // the parameter block
)

// Shader is one generated kernel, ready to compile.
type Shader struct {
	Name      string
	Source    string
	Entry     string
	Bindings  []BindingKind // inputs, then outputs, then the uniform
	Workgroup [3]int
	Groups    [3]int // workgroups to dispatch
	// Params is the uniform block's contents, when the target has one.
	Params []byte
}

// Groups1D spreads n workgroups over x and y so neither exceeds maxPerDim.
func Groups1D(n, maxPerDim int) [3]int {
	if n <= maxPerDim {
		return [3]int{n, 1, 1}
	}
	return [3]int{maxPerDim, (n + maxPerDim - 1) / maxPerDim, 1}
}

// Combine renders, as declarations ending in name, the combining op of
// reduction op (ir.OpInfo.Combine: add for sum, maximum for max) applied
// to a and b. Combining ops compute with no float constants.
func Combine(l Lang, op ir.Op, a, b, name string) []string {
	x := op.Info().Combine.Info().Expr
	return expr(l, x, name, []string{a, b}, false, func(float32) string {
		panic("codegen: the combining op of " + op.String() + " has a float constant")
	})
}

// Flat renders the offset of index v over dims, Σ digit·Stride with the
// digits of v in the mixed radix of the dims' sizes (ir.Offset): constant
// divisors, and no modulo on the outermost digit (v is in range).
func Flat(l Lang, dims []ir.Dim, v string) string {
	if len(dims) == 0 {
		return l.Uint(0)
	}
	terms := make([]string, len(dims))
	div := 1
	for d := len(dims) - 1; d >= 0; d-- {
		digit := v
		if div > 1 {
			digit = "(" + v + " / " + l.Uint(div) + ")"
		}
		if d > 0 {
			digit = "(" + digit + " % " + l.Uint(dims[d].Size) + ")"
		}
		if dims[d].Stride != 1 {
			digit += " * " + l.Uint(dims[d].Stride)
		}
		terms[d] = digit
		div *= dims[d].Size
	}
	return strings.Join(terms, " + ")
}

// LeafIndex renders the argument element of leaf r of output o of
// reduction red: Flat(Kept, o) + Flat(Reduced, r), without the base when
// there is one output.
func LeafIndex(l Lang, red ir.Reduction, o, r string) string {
	if len(red.Kept) == 0 {
		return Flat(l, red.Reduced, r)
	}
	return Flat(l, red.Kept, o) + " + " + Flat(l, red.Reduced, r)
}

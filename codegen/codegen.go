// Package codegen holds what the C-like targets (WGSL, GLSL ES, C) share:
// exact float literals, the rendering of a kernel body (one named value per
// Instr), transposed and broadcast operand indexing and the exactness guard on products.
// Each target package (codegen/wgsl, codegen/glsl, codegen/c) describes its
// syntax in a Lang and keeps its real differences (buffers, threads,
// reductions) to itself.
package codegen

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// Lang is the syntax of one C-like target.
type Lang struct {
	// Let declares an immutable float named name: "let v1 = x;" or
	// "float v1 = x;". Expressions are rendered without the semicolon.
	Let func(name, expr string) string
	// Bits returns the float whose IEEE bits are b, exactly (a bitcast, not
	// a decimal literal, so no compiler rounds it).
	Bits func(b uint32) string
	// Select returns cond ? t : f.
	Select func(cond, t, f string) string
	// Keep wraps a value in an identity the compiler cannot see through. It
	// wraps every product, so that no compiler contracts it with a following
	// add into a fused multiply-add (see cpuref: products round on their
	// own), and every subtrahend, so that x - x is never folded to +0 (it is
	// NaN for infinite x, and folding then lets 0 * y lose its sign).
	Keep func(v string) string
	// Uint formats an unsigned index constant.
	Uint func(n int) string
	// Const, when set, renders float constant number slot (see Constants)
	// as a value the compiler cannot see, such as a uniform. Drivers that
	// treat shader arithmetic as reassociable fold (x + c1) - c2 into
	// x + (c1 - c2), which rounds differently; lavapipe does. When nil,
	// constants are exact literals (right for C with -ffp-contract=off,
	// which never reassociates).
	Const func(slot int) string
	// Zero and One, when set, are opaque 0.0 and 1.0 for the results of
	// relu and positive. Drivers rewrite select(0, 1, c) * k into
	// select(0, k, c), which loses the sign of 0 * -k; an operand they
	// cannot see through keeps the reference's -0.
	Zero, One string
}

// Constants returns the float constants of k's body in slot order: the
// value of each InstrConst and the scalar operand of each Op*Scalar.
func Constants(k *ir.Kernel) []float32 {
	var out []float32
	for _, in := range k.Body {
		if in.Kind == ir.InstrConst || in.Kind == ir.InstrOp && in.Op.Info().Scalar {
			out = append(out, in.Scalar)
		}
	}
	return out
}

// Float returns v as an exact literal of l.
func (l Lang) Float(v float32) string { return l.Bits(math.Float32bits(v)) }

// Body renders the instructions of k as one declaration per value, named
// v0, v1, …. load(operand) renders the read of that operand at the current
// element; acc is the matmul accumulator's expression (unused otherwise).
func Body(l Lang, k *ir.Kernel, load func(operand int) string, acc string) []string {
	lines := make([]string, 0, len(k.Body))
	slot := 0
	for j, in := range k.Body {
		c := l.Float(in.Scalar)
		if l.Const != nil && (in.Kind == ir.InstrConst || in.Kind == ir.InstrOp && in.Op.Info().Scalar) {
			c = l.Const(slot)
			slot++
		}
		lines = append(lines, l.Let(Value(j), Expr(l, in, c, load, acc)))
	}
	return lines
}

// Value names body value j.
func Value(j int) string { return fmt.Sprintf("v%d", j) }

// Expr renders one instruction; c renders its constant (InstrConst's value
// or an Op*Scalar's operand).
func Expr(l Lang, in ir.Instr, c string, load func(int) string, acc string) string {
	a := func(k int) string { return Value(int(in.Args[k])) }
	switch in.Kind {
	case ir.InstrConst:
		return c
	case ir.InstrLoad:
		return load(in.Operand)
	case ir.InstrAcc:
		return acc
	}
	zero, one := l.Float(0), l.Float(1)
	rzero, rone := zero, one // result values; the comparisons keep the literal
	if l.Zero != "" {
		rzero, rone = l.Zero, l.One
	}
	switch in.Op {
	case ir.OpAdd:
		return a(0) + " + " + a(1)
	case ir.OpSub:
		return a(0) + " - " + l.Keep(a(1))
	case ir.OpMul:
		return l.Keep(a(0) + " * " + a(1))
	case ir.OpAddScalar:
		return a(0) + " + " + c
	case ir.OpSubScalar:
		return a(0) + " - " + c
	case ir.OpMulScalar:
		return l.Keep(a(0) + " * " + c)
	case ir.OpRelu:
		return l.Select(a(0)+" > "+zero, a(0), rzero)
	case ir.OpPositive:
		return l.Select(a(0)+" > "+zero, rone, rzero)
	}
	panic("codegen: op " + in.Op.String() + " is not elementwise")
}

// Index renders the buffer index of operand op at row-major element i of
// its logical shape: i itself, the transposed position, or for a broadcast
// operand i modulo the buffer's length.
func Index(l Lang, op ir.Operand, i string) string {
	if op.Broadcast > 0 {
		return fmt.Sprintf("(%s) %% %s", i, l.Uint(op.Broadcast))
	}
	if !op.Transposed {
		return i
	}
	rows, cols := l.Uint(op.Shape[0]), l.Uint(op.Shape[1])
	return fmt.Sprintf("(%s %% %s) * %s + %s / %s", i, cols, rows, i, cols)
}

// Indent prefixes every line with tabs.
func Indent(lines []string, tabs int) string {
	var b strings.Builder
	pre := strings.Repeat("\t", tabs)
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

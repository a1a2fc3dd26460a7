// Package codegen holds what the C-like targets (WGSL, GLSL ES, C) share:
// exact float literals, the rendering of a kernel body (one named value per
// Instr), transposed-operand indexing and the exactness guard on products.
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
	// Keep wraps a product so that no compiler contracts it with a following
	// add into a fused multiply-add (see cpuref: products round on their own).
	Keep func(product string) string
	// Uint formats an unsigned index constant.
	Uint func(n int) string
}

// Float returns v as an exact literal of l.
func (l Lang) Float(v float32) string { return l.Bits(math.Float32bits(v)) }

// Body renders the instructions of k as one declaration per value, named
// v0, v1, …. load(operand) renders the read of that operand at the current
// element; acc is the matmul accumulator's expression (unused otherwise).
func Body(l Lang, k *ir.Kernel, load func(operand int) string, acc string) []string {
	lines := make([]string, 0, len(k.Body))
	for j, in := range k.Body {
		lines = append(lines, l.Let(Value(j), Expr(l, in, load, acc)))
	}
	return lines
}

// Value names body value j.
func Value(j int) string { return fmt.Sprintf("v%d", j) }

// Expr renders one instruction.
func Expr(l Lang, in ir.Instr, load func(int) string, acc string) string {
	a := func(k int) string { return Value(int(in.Args[k])) }
	switch in.Kind {
	case ir.InstrConst:
		return l.Float(in.Scalar)
	case ir.InstrLoad:
		return load(in.Operand)
	case ir.InstrAcc:
		return acc
	}
	zero, one := l.Float(0), l.Float(1)
	switch in.Op {
	case ir.OpAdd:
		return a(0) + " + " + a(1)
	case ir.OpSub:
		return a(0) + " - " + a(1)
	case ir.OpMul:
		return l.Keep(a(0) + " * " + a(1))
	case ir.OpAddScalar:
		return a(0) + " + " + l.Float(in.Scalar)
	case ir.OpSubScalar:
		return a(0) + " - " + l.Float(in.Scalar)
	case ir.OpMulScalar:
		return l.Keep(a(0) + " * " + l.Float(in.Scalar))
	case ir.OpRelu:
		return l.Select(a(0)+" > "+zero, a(0), zero)
	case ir.OpPositive:
		return l.Select(a(0)+" > "+zero, one, zero)
	}
	panic("codegen: op " + in.Op.String() + " is not elementwise")
}

// Index renders the buffer index of operand op at row-major element i of
// its logical shape: i itself, or the transposed position.
func Index(l Lang, op ir.Operand, i string) string {
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
}

// Groups1D spreads n workgroups over x and y so neither exceeds maxPerDim.
func Groups1D(n, maxPerDim int) [3]int {
	if n <= maxPerDim {
		return [3]int{n, 1, 1}
	}
	return [3]int{maxPerDim, (n + maxPerDim - 1) / maxPerDim, 1}
}

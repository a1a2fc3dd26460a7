package codegen_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
)

// TestPrimsComplete renders every expression primitive that is not a
// leaf through every target's Lang: each gives one declaration that reads
// all of its operands. A primitive without a rendering row panics (see
// codegen's init), so a forgotten one fails here, and everywhere, at once.
func TestPrimsComplete(t *testing.T) {
	langs := map[string]codegen.Lang{"c": c.Lang, "glsl": glsl.Lang, "wgsl": wgsl.Lang}
	leaf := map[ir.XOp]bool{ir.XArg: true, ir.XConst: true, ir.XUConst: true}
	for op := range ir.NumXOps {
		if leaf[op] {
			continue
		}
		arity := 2
		switch op {
		case ir.XSelect, ir.XFma:
			arity = 3
		case ir.XBits, ir.XFloat:
			arity = 1
		}
		x := &ir.X{Op: op, Args: []*ir.X{ir.Arg(0), ir.Arg(1), ir.Arg(2)}[:arity]}
		if op == ir.XCall { // rendered from its function: a call of it
			x.Fn = &ir.Func{Name: "f", Params: 2, Body: ir.Arg(0).Add(ir.Arg(1))}
		}
		for name, l := range langs {
			lines := codegen.RenderX(l, x, "out", []string{"opA", "opB", "opC"}, false, func(float32) string { return "k" })
			if len(lines) != 1 {
				t.Errorf("%s: %v renders %d lines %q, want one", name, op, len(lines), lines)
				continue
			}
			for _, a := range []string{"opA", "opB", "opC"}[:arity] {
				if !strings.Contains(lines[0], a) {
					t.Errorf("%s: %v renders %q, which does not read %s", name, op, lines[0], a)
				}
			}
		}
	}
}

// TestMissingPrimPanics: a table without a primitive's row is refused by
// name, as codegen's init refuses its own.
func TestMissingPrimPanics(t *testing.T) {
	if err := codegen.CheckPrims(codegen.Prims); err != nil {
		t.Fatal(err)
	}
	table := *codegen.Prims
	table[ir.XShl] = nil
	err := codegen.CheckPrims(&table)
	if err == nil || !strings.Contains(err.Error(), "shl") {
		t.Errorf("a table without shl: %v, want an error naming shl", err)
	}
}

// TestProductsKept: every float product that the op table's expressions
// and functions render goes through Lang.Keep, whatever reads it. Keep
// stops a driver contracting a product into an add, and reassociating a
// chain of products: an H200's driver made sinh's (w·½)·w into (w·w)·½,
// +Inf for 2.2e38, while products read only by products went bare
// (0cedfd9, reverted).
func TestProductsKept(t *testing.T) {
	l := wgsl.Lang
	l.Keep = func(v string) string { return "KEEP(" + v + ")" }
	l.Const = nil
	var lines []string
	seen := map[*ir.Func]bool{}
	for _, op := range ir.Ops() {
		x := op.Info().Expr
		if x == nil {
			continue
		}
		lines = append(lines, codegen.RenderX(l, x, "out", []string{"a", "b", "c"}, false, func(float32) string { return "k" })...)
		for _, f := range x.Funcs() {
			if !seen[f] {
				seen[f] = true
				lines = append(lines, codegen.Define(l, []*ir.Func{f}, 0)...)
			}
		}
	}
	// the pattern of sinhCosh's (w·½)·w, rendered alone
	lines = append(lines, codegen.RenderX(l, ir.Arg(0).Mul(ir.F(0.5)).Mul(ir.Arg(0)), "out", []string{"w"}, false, func(float32) string { return "k" })...)
	products := 0
	for _, ln := range lines {
		for rest := ln; ; {
			i := strings.Index(rest, " * ")
			if i < 0 {
				break
			}
			// a product is kept when the innermost KEEP( opened before it
			// is still open at it
			before := rest[:i]
			k := strings.LastIndex(before, "KEEP(")
			if k < 0 || strings.Count(before[k:], "(") <= strings.Count(before[k:], ")") {
				if !strings.HasSuffix(strings.TrimSpace(rest[i+3:]), "u;") && !strings.Contains(rest[i+3:], "u)") {
					t.Errorf("a product outside Keep: %q", ln)
				}
			} else {
				products++
			}
			rest = rest[i+3:]
		}
	}
	if products < 100 {
		t.Errorf("%d kept products in %d lines: the renderer's output changed shape", products, len(lines))
	}
}

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

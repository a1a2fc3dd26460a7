package glsl

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestScatterLoopBound: a scatter's pass is refused, unsupported, naming
// the node and ir.LoopBudget, one index row past the rows an element whose
// word's loops stay within the budget, and made at that bound.
func TestScatterLoopBound(t *testing.T) {
	build := func(n int) *ir.Graph {
		b := ir.NewBuilder()
		x := b.FullOf(ir.I8, ir.Shape{4}, 0, 1)
		b.Output("y", x.ScatterND(b.FullOf(ir.I64, ir.Shape{n, 1}, 0, -1), b.FullOf(ir.I8, ir.Shape{n}, 0, 3), ir.ScatterMax))
		g, err := b.Build(ir.Limits{MaxElements: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	most := ir.LoopBudget/4 - 1 // int8: four elements a word
	if _, err := TypedNode(build(most), 3); err != nil {
		t.Errorf("%d rows: %v", most, err)
	}
	_, err := TypedNode(build(most+1), 3)
	if e, ok := err.(*ir.Error); !ok || e.Code != ir.CodeUnsupported || e.Node != 3 || !strings.Contains(e.Error(), "65535") {
		t.Errorf("%d rows: %v, want unsupported naming node 3 and the budget", most+1, err)
	}
}

// TestScatterChecksBound: ir's cost counts a scatter of reduction none as
// the output plus the updates (the other backends' linear form), so the
// GLSL kernel, which checks every candidate for each output element, is
// refused (unsupported, naming ir.MaxGLSLScatterChecks) where those checks
// pass the bound, and made at it: 1000 rows into 100,000 elements are
// 1e8 checks, 1001 are past them.
func TestScatterChecksBound(t *testing.T) {
	build := func(n int) *ir.Graph {
		b := ir.NewBuilder()
		x := b.FullOf(ir.F32, ir.Shape{100_000}, 0, 1)
		b.Output("y", x.ScatterND(b.FullOf(ir.I64, ir.Shape{n, 1}, 0, -1), b.FullOf(ir.F32, ir.Shape{n}, 0, 3), ir.ScatterNone))
		g, err := b.Build(ir.Limits{MaxElements: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if _, err := TypedNode(build(1000), 3); err != nil {
		t.Errorf("1000 rows: %v", err)
	}
	_, err := TypedNode(build(1001), 3)
	if e, ok := err.(*ir.Error); !ok || e.Code != ir.CodeUnsupported || e.Node != 3 || !strings.Contains(e.Error(), "MaxGLSLScatterChecks") {
		t.Errorf("1001 rows: %v, want unsupported naming node 3 and the bound", err)
	}
}

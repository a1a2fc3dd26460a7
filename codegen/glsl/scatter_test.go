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

package wgsl_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
)

// scatterRows is data [4] of t scattered by n index rows (all 0).
func scatterRows(t *testing.T, dt ir.DType, n int) *ir.Graph {
	b := ir.NewBuilder()
	x := b.FullOf(dt, ir.Shape{4}, 1, 1)
	u := b.FullOf(dt, ir.Shape{n}, 2, 2)
	i := b.FullOf(ir.I32, ir.Shape{n, 1}, 0, 0)
	b.Output("y", x.ScatterND(i, u, ir.ScatterAdd))
	g, err := b.Build(ir.Limits{MaxElements: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestScatterLoopBound: a scatter's kernel is made up to the candidates
// an element whose loops stay within ir.LoopBudget for the elements of one
// storage word (codegen.ScatterGather.LoopCost) and refused one past it,
// unsupported, naming the node and the budget: lavapipe would end the
// loop early and give another answer.
func TestScatterLoopBound(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.U8} {
		per := map[ir.DType]int{ir.F32: 1, ir.F16: 2, ir.U8: 4}[dt]
		most := ir.LoopBudget/per - 1
		g := scatterRows(t, dt, most)
		if c := codegen.TypedScatters[ir.OpScatterND](g, &g.Nodes[3]).LoopCost(dt); c > ir.LoopBudget {
			t.Fatalf("%v: %d rows cost %d", dt, most, c)
		}
		if _, err := wgsl.TypedNode(g, 3, wgsl.FaultPerNode); err != nil {
			t.Errorf("%v, %d rows: %v", dt, most, err)
		}
		g = scatterRows(t, dt, most+1)
		_, err := wgsl.TypedNode(g, 3, wgsl.FaultPerNode)
		e, ok := err.(*ir.Error)
		if !ok || e.Code != ir.CodeUnsupported || e.Node != 3 || !strings.Contains(e.Error(), "65535") {
			t.Errorf("%v, %d rows: %v, want unsupported naming node 3 and the budget", dt, most+1, err)
		}
	}
}

// TestScatterKernelsLinear: TypedKernels runs a scatter as three passes
// (copy, mark, apply) sharing one scratch buffer, bound after TypedNode's
// bindings, of a word an output element (two under a reduction: the
// winner and the count), every other node as TypedNode's one kernel, and
// a scatter of FaultPerElement (the row tests) as TypedNode's too. A
// scatter of none loops nowhere, so 2·ir.LoopBudget rows are made where
// TypedNode refuses them.
func TestScatterKernelsLinear(t *testing.T) {
	g := scatterRows(t, ir.F16, 10)
	ks, scratch, err := wgsl.TypedKernels(g, 3, wgsl.FaultPerNode)
	if err != nil || len(ks) != 3 || scratch != 8 {
		t.Fatalf("add: %d kernels, %d scratch words, %v; want 3, 8", len(ks), scratch, err)
	}
	for k, entry := range []string{"s_copy", "s_mark", "s_apply"} {
		if s := ks[k]; s.Entry != entry || len(s.Bindings) != 7 || s.Bindings[6] != codegen.ReadWrite {
			t.Errorf("kernel %d: %s with %v, want %s with the scratch last", k, s.Entry, s.Bindings, entry)
		}
	}
	if ks, scratch, err := wgsl.TypedKernels(g, 3, wgsl.FaultPerElement); err != nil || len(ks) != 1 || scratch != 0 {
		t.Errorf("per element: %d kernels, %d scratch words, %v; want TypedNode's", len(ks), scratch, err)
	}
	if ks, scratch, err := wgsl.TypedKernels(g, 0, wgsl.FaultPerNode); err != nil || len(ks) != 1 || scratch != 0 {
		t.Errorf("full: %d kernels, %d scratch words, %v; want one", len(ks), scratch, err)
	}
	b := ir.NewBuilder()
	n := 2 * ir.LoopBudget
	x := b.FullOf(ir.U8, ir.Shape{4}, 1, 1)
	b.Output("y", x.ScatterND(b.FullOf(ir.I32, ir.Shape{n, 1}, 0, 0), b.FullOf(ir.U8, ir.Shape{n}, 2, 2), ir.ScatterNone))
	g, err = b.Build(ir.Limits{MaxElements: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wgsl.TypedNode(g, 3, wgsl.FaultPerNode); err == nil {
		t.Errorf("TypedNode made %d rows", n)
	}
	if ks, scratch, err := wgsl.TypedKernels(g, 3, wgsl.FaultPerNode); err != nil || len(ks) != 3 || scratch != 4 {
		t.Errorf("none of %d rows: %d kernels, %d scratch words, %v; want 3, 4", n, len(ks), scratch, err)
	}
}

package wgsl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// TestLoopBudget: a kernel whose loops could run past wgsl.LoopBudget is
// refused with limit_exceeded (an unsplit sum of 2^23 leaves: 32768 per
// thread), and one within it is generated, with no loop but the k-tile loop
// in a matmul.
func TestLoopBudget(t *testing.T) {
	lim := ir.Limits{MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40}
	for _, c := range []struct {
		n  int
		ok bool
	}{{1 << 16, true}, {1 << 22, true}, {1 << 23, false}} {
		b := ir.NewBuilder()
		b.Output("s", b.Input(ir.Shape{c.n}, make([]float32, c.n)).Sum())
		g, err := b.Build(lim)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := passes.Compile(g, passes.Options{Limits: lim}) // no splitting
		if err != nil {
			t.Fatal(err)
		}
		_, err = wgsl.Target{}.Emit(p)
		var e *ir.Error
		if c.ok && err != nil || !c.ok && (!errors.As(err, &e) || e.Code != ir.CodeLimitExceeded) {
			t.Errorf("sum over %d: %v (loop cost %d)", c.n, err, wgsl.LoopCost(&p.Program().Kernels[0]))
		}
	}
	// Per output: rows of 2^23 leaves are over the budget unsplit and
	// within it split; rows under SumThreads leaves get a thread each.
	for _, c := range []struct {
		shape ir.Shape
		split bool
		ok    bool
	}{{ir.Shape{2, 1 << 23}, false, false}, {ir.Shape{2, 1 << 23}, true, true}, {ir.Shape{1 << 16, 255}, false, true}} {
		b := ir.NewBuilder()
		b.Output("s", b.Input(c.shape, make([]float32, c.shape.Len())).MaxAxes(false, 1))
		lim := ir.Limits{MaxElements: 1 << 25, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40}
		g, err := b.Build(lim)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := passes.Compile(g, passes.Options{Limits: lim, SplitSums: c.split})
		if err != nil {
			t.Fatal(err)
		}
		_, err = wgsl.Target{}.Emit(p)
		var e *ir.Error
		if c.ok && err != nil || !c.ok && (!errors.As(err, &e) || e.Code != ir.CodeLimitExceeded) {
			t.Errorf("max over rows of %v (split %v): %v (loop cost %d)", c.shape, c.split, err, wgsl.LoopCost(&p.Program().Kernels[0]))
		}
	}
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{512, 1000}, make([]float32, 512000)).MatMul(b.Input(ir.Shape{1000, 512}, make([]float32, 512000))))
	big := ir.Limits{MaxOps: 1 << 30}
	g, err := b.Build(big)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{Limits: big})
	if err != nil {
		t.Fatal(err)
	}
	if p.Program().Kernels[0].Tile.Vector != 4 {
		t.Fatalf("tile %+v, want the vec4 kernel", p.Program().Kernels[0].Tile)
	}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	s := shaders[0]
	if n := strings.Count(s.Source, "for ("); n != 1 {
		t.Errorf("matmul has %d loops, want the k-tile loop only:\n%s", n, s.Source)
	}
}

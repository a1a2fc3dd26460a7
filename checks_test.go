package gpucc_test

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// checked returns how many graphs (ir.Validate) and programs (ir.Seal,
// ir.ValidateProgram) f checks.
func checked(t *testing.T, f func()) (graphs, programs int64) {
	t.Helper()
	g0, p0 := ir.Checks()
	f()
	g1, p1 := ir.Checks()
	return g1 - g0, p1 - p0
}

// TestChecksOnce: a compile validates its graph once and seals its
// Program once; a run of a sealed plan checks nothing again; and only a
// plan decoded from bytes is checked again, once, when it is loaded; the
// same holds for a Trainer, which compiles its step graph once.
func TestChecksOnce(t *testing.T) {
	ctx := context.Background()
	rt := open(t, "cpu")
	g := layer(2, 3, 4, irtest.Values(1, 6, 1), irtest.Values(2, 12, 1), irtest.Values(3, 4, 1))
	want := func(what string, graphs, programs, wantGraphs, wantPrograms int64) {
		t.Helper()
		if graphs != wantGraphs || programs != wantPrograms {
			t.Errorf("%s checked %d graphs and %d programs, want %d and %d", what, graphs, programs, wantGraphs, wantPrograms)
		}
	}
	var exe *gpucc.Executable
	gs, ps := checked(t, func() {
		var err error
		if exe, err = rt.Compile(ctx, g); err != nil {
			t.Fatal(err)
		}
	})
	want("Compile", gs, ps, 1, 1)
	defer exe.Release()
	gs, ps = checked(t, func() {
		for range 3 {
			if _, err := exe.Run(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
	want("three runs of a compiled plan", gs, ps, 0, 0)
	gs, ps = checked(t, func() {
		if _, err := rt.Run(ctx, g); err != nil {
			t.Fatal(err)
		}
	})
	want("Runtime.Run", gs, ps, 1, 1)

	plan := exe.Plan()
	gs, ps = checked(t, func() {
		e, err := rt.Load(ctx, plan)
		if err != nil {
			t.Fatal(err)
		}
		e.Release()
	})
	want("Load of Seal's plan", gs, ps, 0, 0)
	decoded := clonePlan(t, plan)
	var loaded *gpucc.Executable
	gs, ps = checked(t, func() {
		var err error
		if loaded, err = rt.Load(ctx, decoded); err != nil {
			t.Fatal(err)
		}
	})
	want("Load of a plan decoded from bytes", gs, ps, 0, 1)
	defer loaded.Release()
	gs, ps = checked(t, func() {
		if _, err := loaded.Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})
	want("a run of the decoded plan", gs, ps, 0, 0)

	bl := ir.NewBuilder()
	x := bl.NamedInput("x", ir.Shape{2, 3}, irtest.Values(4, 6, 1))
	w := bl.Param("w", ir.Shape{3, 1}, irtest.Values(5, 3, 1))
	bl.Output("loss", x.MatMul(w).Mul(x.MatMul(w)).Sum())
	tg, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var tr *gpucc.Trainer
	gs, ps = checked(t, func() {
		if tr, err = rt.NewTrainer(ctx, tg, "loss", 0.1); err != nil {
			t.Fatal(err)
		}
	})
	want("NewTrainer", gs, ps, 1, 1)
	defer tr.Close()
	gs, ps = checked(t, func() {
		for range 2 {
			if _, err := tr.Step(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
	want("two steps", gs, ps, 0, 0)
}

package gpucc_test

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestRunCountsStartup: gpucc.Run (what gpucc run calls) times opening
// the backend as its own stage, StartupMs, and counts it in TotalMs
// (issue 36: 1.3-2.7 s of start-up under load appeared nowhere); a
// Runtime's own runs, which open nothing, leave it out.
func TestRunCountsStartup(t *testing.T) {
	b := ir.NewBuilder()
	b.Output("y", b.NamedInput("x", ir.Shape{3}, []float32{-1, 2, 3}).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := gpucc.Run(ctx, g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	tm := res.Timings
	if tm.StartupMs <= 0 || tm.TotalMs < tm.StartupMs+tm.DispatchMs {
		t.Errorf("gpucc.Run's timings %+v: want startupMs > 0 and counted in totalMs", tm)
	}
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if res, err := rt.Run(ctx, g); err != nil || res.Timings.StartupMs != 0 {
		t.Errorf("a Runtime's run: %+v, %v; want no startupMs", res, err)
	}
}

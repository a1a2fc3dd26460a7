package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// TestPlanKeepsNegativeZero: a plan through EncodePlan and DecodePlan (gpucc
// build's plan.gob) keeps a kernel's scalar of -0. gob leaves out a field
// equal to its zero value, and -0 == 0: decoded, max(x, -0) of x = -0 gave
// +0 on wasm, where the plan Seal made gives cpuref's -0.
func TestPlanKeepsNegativeZero(t *testing.T) {
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{4}, []float32{1, 2, 3, 4})
	bl.Output("m", x.Neg().Relu().Neg().MaximumScalar(float32(math.Copysign(0, -1))))
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := gpucc.Seal(g, ir.Limits{}, gpucc.Profile{Name: "cpu"}, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpucc.EncodePlan(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := gpucc.DecodePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	e, err := rt.Load(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range r.Outputs["m"].Data {
		if !math.Signbit(float64(v)) || v != 0 {
			t.Fatalf("m[%d] = %v from the decoded plan, cpuref -0", i, v)
		}
	}
}

package gpucc_test

import (
	"context"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestSplitIntermediates: a typed graph on a backend other than cpu runs
// as float and typed segments (split.go), and the values they pass to
// each other are intermediates, which may be non-finite under the seed's
// default policy as inside one graph: log(0) = -Inf goes from a float
// segment through a float16 cast and back into exp, whose output is
// finite. Each backend gives cpu's bits; a where on float32 values
// (lowered to masks for the compiler) gives where's bits, -0 and NaN
// included; a non-finite output still fails the run.
func TestSplitIntermediates(t *testing.T) {
	build := func(out bool) *ir.Graph {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{6}, []float32{0, 1, 2, 3, 0.5, 4})
		l := x.Apply(ir.OpLog)
		e := l.Cast(ir.F16).Cast(ir.F32).Apply(ir.OpExp)
		c := b.TypedInput("c", ir.Bool, ir.Shape{6}, nil, []int64{1, 0, 1, 0, 1, 0})
		y := b.Input(ir.Shape{6}, []float32{-0.0, 0, 7, -3, 1, 2}).Apply(ir.OpNeg)
		b.Output("e", e)
		b.Output("w", c.Where(e.Apply(ir.OpMul, x), y))
		if out {
			b.Output("l", l) // -Inf: non_finite_output under the default policy
		}
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	cpu := open(t, "cpu")
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			sameTyped(t, cpu, rt, build(false))
			sameTyped(t, cpu, rt, build(true))
			res, err := rt.Run(context.Background(), build(false))
			if err != nil {
				t.Fatal(err)
			}
			if name != "webgpu" && res.Kernels == 0 { // webgpu's typed code runs its own float islands
				t.Errorf("%d kernels: the float segments should be compiled kernels", res.Kernels)
			}
		})
	}
}

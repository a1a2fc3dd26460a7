package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
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

// TestLoadConstantInfOutput: a plan decoded from bytes (checked in full)
// whose output folded to a constant -Inf loads on a runtime that allows
// non-finite values and returns it, and is refused (invalid_graph) on one
// that does not. A split graph's float segments are loaded so too: the
// GPT-2 decoding step's causal mask, a -Inf constant passed from a float
// segment to the next, was refused on native and wasm (TestGPT2KVDeviceCache).
func TestLoadConstantInfOutput(t *testing.T) {
	nf := ir.Limits{NonFinite: true}
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{2}, []float32{1, 2})
	b.Output("y", x.Add(x))
	b.Output("mask", b.Full(ir.Shape{3}, float32(math.Inf(-1))))
	g, err := b.Build(nf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gpucc.Seal(g, nf, passes.WebGPUDefault, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := clonePlan(t, p)
	exe, err := open(t, "cpu", func(o *gpucc.Options) { o.Limits = nf }).Load(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	res, err := exe.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Outputs["mask"].Data; len(m) != 3 || !math.IsInf(float64(m[0]), -1) {
		t.Errorf("mask = %v, want -Inf ×3", m)
	}
	if _, err := open(t, "cpu").Load(context.Background(), clonePlan(t, p)); gpucc.CodeOf(err) != ir.CodeInvalidGraph {
		t.Errorf("under the finite policy: %v, want invalid_graph", err)
	}
}

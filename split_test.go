package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"sync"
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

// TestSplitCachesWeightSegments: a segment of a split graph that reads
// nothing a run gives (the graph's weights, values of such segments) runs
// once: later runs reuse its values (they dispatch fewer kernels and
// upload less) with the same bits, a run that gives one of its inputs
// computes it again without changing what later runs reuse, and an
// output taken from it is the caller's own copy. BenchmarkSplitGPT2: GPT-2
// at 512 tokens re-sent 10 MB of such values to its last segment each run.
func TestSplitCachesWeightSegments(t *testing.T) {
	ctx := context.Background()
	b := ir.NewBuilder()
	w := b.TypedInput("w", ir.F32, ir.Shape{4, 4}, []float32{1, -2, 3, 0.5, 0, 1, 1e-3, 7, -1, 2, 2, 2, 9, 0.25, -3, 1}, nil)
	ids := b.TypedInput("ids", ir.I64, ir.Shape{3}, nil, []int64{0, 1, 2})
	x := b.TypedInput("x", ir.F32, ir.Shape{3, 4}, make([]float32, 12), nil)
	v := w.MatMul(w).Exp()
	b.Output("v", v)
	b.Output("out", v.Gather(ids, 0).Add(x).MatMul(w))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	idIn := gpucc.Tensor{Shape: []int{3}, DType: ir.I64, Ints: []int64{3, -4, 1}}
	xIn := gpucc.NewTensor(ir.Shape{3, 4}, []float32{0.5, 1, 2, 3, -1, -2, -3, -4, 0, 0, 1, 1})
	w2 := gpucc.NewTensor(ir.Shape{4, 4}, []float32{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, -1})
	plain := gpucc.Inputs{"ids": idIn, "x": xIn}
	withW := gpucc.Inputs{"ids": idIn, "x": xIn, "w": w2}
	run := func(rt *gpucc.Runtime, exe *gpucc.Executable, in gpucc.Inputs) *gpucc.Result {
		r, err := exe.Run(ctx, in)
		if err != nil {
			t.Fatalf("%s: %v", rt.Backend(), err)
		}
		return r
	}
	cpu := open(t, "cpu")
	ce, err := cpu.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Release()
	want, wantW := run(cpu, ce, plain), run(cpu, ce, withW)
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name)
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Release()
			defer func() { // a closed runtime refuses the run, though the cache could answer it
				if _, err := exe.Run(ctx, nil); err != nil { // every segment cached
					t.Fatal(err)
				}
				rt.Close()
				if _, err := exe.Run(ctx, nil); gpucc.CodeOf(err) != ir.CodeBackendUnavailable {
					t.Errorf("after Close: %v, want backend_unavailable", err)
				}
			}()
			if name == "native" { // concurrent runs share the cache (go test -race)
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						r, err := exe.Run(ctx, plain)
						if err != nil {
							t.Error(err)
							return
						}
						sameTensor(t, "a concurrent run", r.Outputs["out"], want.Outputs["out"])
					})
				}
				wg.Wait()
				exe.Release()
				if exe, err = rt.Compile(ctx, g); err != nil {
					t.Fatal(err)
				}
			}
			first := run(rt, exe, plain)
			second := run(rt, exe, plain)
			if second.Kernels >= first.Kernels || second.Timings.UploadBytes >= first.Timings.UploadBytes {
				t.Errorf("the second run dispatched %d kernels and uploaded %d bytes, the first %d and %d: the weights' segment ran again",
					second.Kernels, second.Timings.UploadBytes, first.Kernels, first.Timings.UploadBytes)
			}
			second.Outputs["v"].Data[0] = 99
			for k, c := range []struct {
				r    *gpucc.Result
				want *gpucc.Result
			}{{first, want}, {run(rt, exe, withW), wantW}, {run(rt, exe, plain), want}, {run(rt, exe, plain), want}} {
				for o, w := range c.want.Outputs {
					sameTensor(t, fmt.Sprintf("run %d: %s", k, o), c.r.Outputs[o], w)
				}
			}
		})
	}
}

package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// BenchmarkMLPStepKernels times the MLP step's matmuls and reductions one
// at a time (GPUCC_BENCH_MLP sizes, as BenchmarkMLPTrainStep): for each
// kernel of the step's plan (gpucc.StepGraph, WebGPU default limits) that
// is a matmul or an unsplit reduction, the same product (operands plain
// or read transposed in place as in the step) or the same reduction over
// a random input of its shape, on resident inputs. The epilogues are left
// out; each sub-benchmark's name is the step kernel's, so its
// dispatch-ms beside `gpucc train --explain`'s flops and bytes says which
// kernel costs what.
func BenchmarkMLPStepKernels(b *testing.B) {
	bsz, d, h, o := mlpSize()
	sg, err := gpucc.StepGraph(MLP(bsz, d, h, o), "loss", 0.01)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := gpucc.Seal(sg, Limits(), passes.WebGPUDefault, passes.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range plan.Program.Kernels {
		g := stepKernelGraph(plan.Program, &k)
		if g == nil {
			continue
		}
		b.Run(fmt.Sprintf("%s/%s", k.Name, g.Nodes[len(g.Nodes)-1].Shape), func(b *testing.B) {
			ctx := context.Background()
			rt := openEngine(b)
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				b.Fatal(err)
			}
			in := gpucc.Inputs{}
			for i, n := range g.Nodes {
				if n.Op != ir.OpInput {
					continue
				}
				t, err := rt.Upload(ctx, n.Shape, n.Data)
				if err != nil {
					b.Fatal(err)
				}
				in[ir.DefaultInputName(i)] = t
			}
			benchResident(b, exe, in, "y")
		})
	}
}

// stepKernelGraph is the standalone graph of step kernel k (see
// BenchmarkMLPStepKernels), or nil for a kind it does not time.
func stepKernelGraph(p *ir.Program, k *ir.Kernel) *ir.Graph {
	bl := ir.NewBuilder()
	operand := func(seed uint64, op ir.Operand) ir.Tensor {
		s := p.Buffers[op.Buffer].Shape
		t := bl.Input(s, irtest.Values(seed, s.Len(), 1))
		if op.Transposed() {
			return t.T()
		}
		return t
	}
	switch {
	case k.Kind == ir.KernelMatmul:
		bl.Output("y", operand(1, k.Inputs[0]).MatMul(operand(2, k.Inputs[1])))
	case k.Kind == ir.KernelReduce && k.Blocks <= 1 && k.Keep.Len() > 1:
		x := bl.Input(k.Shape, irtest.Values(3, k.Shape.Len(), 1))
		var axes []int
		for d := range k.Shape {
			if k.Keep[d] == 1 && k.Shape[d] > 1 {
				axes = append(axes, d)
			}
		}
		bl.Output("y", x.SumAxes(true, axes...))
	default:
		return nil
	}
	g, err := bl.Build(Limits())
	if err != nil {
		panic("bench: " + err.Error())
	}
	return g
}

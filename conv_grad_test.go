package gpucc_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestConvSteps runs one SGD step (grad.Step) through the attributed ops'
// gradient rules on every backend, bit for bit against cpuref: permute's
// inverse permutation (a view of the upstream gradient), and the
// backward graphs of convolution and pooling.
func TestConvSteps(t *testing.T) {
	steps := map[string]func(b *ir.Builder) ir.Tensor{
		"permute": func(b *ir.Builder) ir.Tensor {
			x := b.Param("x", ir.Shape{12, 40}, irtest.Values(80, 480, 3))
			w := b.Input(ir.Shape{8, 12, 5}, irtest.Values(81, 480, 2))
			return x.Reshape(ir.Shape{12, 5, 8}).Permute(2, 0, 1).Tanh().Mul(w).Sum()
		},
	}
	names := slices.Sorted(maps.Keys(steps))
	graphs := map[string]*ir.Graph{}
	for _, name := range names {
		b := ir.NewBuilder()
		b.Output("loss", steps[name](b))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sg, err := grad.Step(g, "loss", 0.25)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		graphs[name] = sg
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for _, name := range names {
				t.Run(name, func(t *testing.T) { checkRun(t, rt, graphs[name]) })
			}
		})
	}
}

package gpucc_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestCompositeSteps runs one SGD step (grad.Step) through each composite
// on every backend, bit for bit against cpuref: the backward graphs of
// GELU, Softmax, LogSoftmax via CrossEntropy, and LayerNorm, with their
// axis sums, maxima and broadcasts, compile and run like the forward ones.
func TestCompositeSteps(t *testing.T) {
	r, c := 12, 40
	steps := map[string]func(b *ir.Builder, x, w ir.Tensor) ir.Tensor{
		"gelu":       func(b *ir.Builder, x, w ir.Tensor) ir.Tensor { return x.GELU().Mul(w).Sum() },
		"softmax":    func(b *ir.Builder, x, w ir.Tensor) ir.Tensor { return x.Softmax(1).Mul(w).Sum() },
		"softmax-0":  func(b *ir.Builder, x, w ir.Tensor) ir.Tensor { return x.Softmax(0).Mul(w).Sum() },
		"layer_norm": func(b *ir.Builder, x, w ir.Tensor) ir.Tensor { return x.LayerNorm(1, 1e-5).Mul(w).Sum() },
		"variance":   func(b *ir.Builder, x, w ir.Tensor) ir.Tensor { return x.Variance(false, 0).Sum() },
		"cross_entropy": func(b *ir.Builder, x, w ir.Tensor) ir.Tensor {
			oh := make([]float32, r*c)
			for i := 0; i < r; i++ {
				oh[i*c+(5*i)%c] = 1
			}
			return x.Mul(w).CrossEntropy(b.Input(ir.Shape{r, c}, oh))
		},
	}
	names := slices.Sorted(maps.Keys(steps))
	graphs := map[string]*ir.Graph{}
	for _, name := range names {
		f := steps[name]
		b := ir.NewBuilder()
		x := b.Param("x", ir.Shape{r, c}, irtest.Values(80, r*c, 3))
		w := b.Input(ir.Shape{r, c}, irtest.Values(81, r*c, 2))
		b.Output("loss", f(b, x, w))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
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

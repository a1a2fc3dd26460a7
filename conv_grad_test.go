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
// backward graphs of convolution (conv_transpose2d for x, a conv2d of
// permuted operands for w, the bias's sum) and pooling (maxpool2d_grad,
// and the average poolings' compositions).
func TestConvSteps(t *testing.T) {
	steps := map[string]func(b *ir.Builder) ir.Tensor{
		"permute": func(b *ir.Builder) ir.Tensor {
			x := b.Param("x", ir.Shape{12, 40}, irtest.Values(80, 480, 3))
			w := b.Input(ir.Shape{8, 12, 5}, irtest.Values(81, 480, 2))
			return x.Reshape(ir.Shape{12, 5, 8}).Permute(2, 0, 1).Tanh().Mul(w).Sum()
		},
	}
	// Each ConvEdges case and the stride remainders grad's tests name,
	// with both x and w parameters and a bias, relu and a weighted sum.
	convs := append(irtest.ConvEdges(),
		irtest.ConvCase{Name: "stride-rest-in-pad", N: 1, C: 2, H: 8, W: 7, M: 2, KH: 3, KW: 3, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}},
		irtest.ConvCase{Name: "stride-rest-cropped", N: 2, C: 1, H: 5, W: 6, M: 3, KH: 2, KW: 2, Strides: []int{2, 3}},
		irtest.ConvCase{Name: "stride-rest-dilated", N: 1, C: 2, H: 9, W: 8, M: 2, KH: 2, KW: 3, Strides: []int{3, 2}, Dilations: []int{2, 1}, Pads: []int{0, 1, 0, 0}, Group: 2})
	for k, c := range convs {
		steps["conv/"+c.Name] = func(b *ir.Builder) ir.Tensor {
			gr := max(c.Group, 1)
			xs, ws := ir.Shape{c.N, c.C, c.H, c.W}, ir.Shape{c.M, c.C / gr, c.KH, c.KW}
			x := b.Param("x", xs, irtest.Values(uint64(500+3*k), xs.Len(), 2))
			w := b.Param("w", ws, irtest.Values(uint64(501+3*k), ws.Len(), 1))
			bias := b.Param("bias", ir.Shape{c.M, 1, 1}, irtest.Values(uint64(502+3*k), c.M, 1))
			y := x.Conv2D(w, c.Attrs()).Add(bias).Relu()
			return y.Mul(b.Input(y.Shape(), irtest.Values(uint64(503+3*k), y.Shape().Len(), 1))).Sum()
		}
	}
	for k, c := range irtest.PoolEdges() {
		steps["pool/"+c.Name] = func(b *ir.Builder) ir.Tensor {
			xs := ir.Shape{c.N, c.C, c.H, c.W}
			x := b.Param("x", xs, irtest.Values(uint64(600+k), xs.Len(), 2))
			weighted := func(y ir.Tensor, seed uint64) ir.Tensor {
				return y.Mul(b.Input(y.Shape(), irtest.Values(seed, y.Shape().Len(), 1))).Sum()
			}
			loss := weighted(x.MaxPool2D(c.Attrs()), uint64(610+k)).Add(weighted(x.GlobalAvgPool(), uint64(620+k)))
			if c.Dilations == nil {
				loss = loss.Add(weighted(x.AvgPool2D([]int{c.KH, c.KW}, c.Strides, c.Pads, c.CountIncludePad), uint64(630+k)))
			}
			return loss
		}
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

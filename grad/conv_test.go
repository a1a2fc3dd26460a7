package grad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/eval64"
	"github.com/gpucc/gpucc/ir/irtest"
)

// sampledGradients is gradients with the finite differences taken at
// most at n elements of each parameter (spread at random; the analytic
// gradient is compared there only), so that convolutions of a few
// thousand elements stay quick.
func sampledGradients(t *testing.T, g *ir.Graph, loss ir.NodeID, n int, seed uint64) (analytic, numeric map[string][]float64) {
	t.Helper()
	bw, grads, err := backward(g, loss)
	if err != nil {
		t.Fatal(err)
	}
	vals := eval64.Eval(bw.g, nil)
	r := rand.New(rand.NewPCG(seed, 5))
	analytic, numeric = map[string][]float64{}, map[string][]float64{}
	for _, p := range g.Params() {
		size := g.Nodes[p.ID].Shape.Len()
		all := make([]float64, size)
		if id, ok := grads[p.ID]; ok {
			all = vals[id]
		}
		x := eval64.Widen(g.Nodes[p.ID].Data)
		at := func(j int, d float64) float64 {
			xd := append([]float64(nil), x...)
			xd[j] += d
			return eval64.Eval(g, map[ir.NodeID][]float64{p.ID: xd})[loss][0]
		}
		idx := r.Perm(size)[:min(n, size)]
		for _, j := range idx {
			analytic[p.Name] = append(analytic[p.Name], all[j])
			numeric[p.Name] = append(numeric[p.Name], (at(j, h)-at(j, -h))/(2*h))
		}
	}
	return analytic, numeric
}

// convGraph is x ⊛ w (both parameters of apart values) for case c, with
// per-element upstream gradients (weightedLoss).
func convGraph(c irtest.ConvCase, seed uint64) (*ir.Graph, ir.NodeID) {
	gr := max(c.Group, 1)
	xs, ws := ir.Shape{c.N, c.C, c.H, c.W}, ir.Shape{c.M, c.C / gr, c.KH, c.KW}
	data := apart(seed, []ir.Shape{xs, ws})
	b := ir.NewBuilder()
	y := b.Param("x", xs, data[0]).Conv2D(b.Param("w", ws, data[1]), c.Attrs())
	b.Output("y", y)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g, weightedLoss(g, g.Outputs[0].ID)
}

// TestConvGradients: conv2d's rule (x's gradient a conv_transpose2d, w's
// a conv2d over permuted operands) matches central finite differences of
// the float64 forward on ConvEdges and 40 random convolutions — strides,
// pads beyond the kernel, dilations, groups, depthwise — and on the cases
// where strides leave rows of x past the last window, with and without
// padding to absorb them (the weight gradient's pads shrink, or its
// result is cropped).
func TestConvGradients(t *testing.T) {
	cases := irtest.ConvEdges()
	cases = append(cases,
		irtest.ConvCase{Name: "stride-rest-in-pad", N: 1, C: 2, H: 8, W: 7, M: 2, KH: 3, KW: 3, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}},
		irtest.ConvCase{Name: "stride-rest-cropped", N: 2, C: 1, H: 5, W: 6, M: 3, KH: 2, KW: 2, Strides: []int{2, 3}},
		irtest.ConvCase{Name: "stride-rest-dilated", N: 1, C: 2, H: 9, W: 8, M: 2, KH: 2, KW: 3, Strides: []int{3, 2}, Dilations: []int{2, 1}, Pads: []int{0, 1, 0, 0}, Group: 2},
	)
	for seed := range 40 {
		c := irtest.RandomConv(uint64(seed))
		c.Name = fmt.Sprintf("random-%d", seed)
		cases = append(cases, c)
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			g, loss := convGraph(c, uint64(300+i))
			analytic, numeric := sampledGradients(t, g, loss, 24, uint64(i))
			if diff := cmp.Diff(numeric, analytic, close); diff != "" {
				t.Errorf("%+v: ∂loss/∂param (-finite differences +backward):\n%s", c, diff)
			}
		})
	}
}

// TestPoolGradients: maxpool2d's rule, and the gradients through the
// pooling compositions (AvgPool2D with and without count_include_pad, a
// conv2d of ones and a division; GlobalAvgPool, a mean), match finite
// differences on PoolEdges and 30 random poolings. apart's values have no
// ties within a difference step, so max pooling is differentiable there.
func TestPoolGradients(t *testing.T) {
	cases := irtest.PoolEdges()
	for seed := range 30 {
		c := irtest.RandomPool(uint64(seed))
		c.Name = fmt.Sprintf("random-%d", seed)
		cases = append(cases, c)
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			xs := ir.Shape{c.N, c.C, c.H, c.W}
			b := ir.NewBuilder()
			x := b.Param("x", xs, apart(uint64(400+i), []ir.Shape{xs})[0])
			weighted := func(y ir.Tensor) ir.Tensor {
				return y.Mul(b.Input(y.Shape(), away(uint64(i), y.Shape().Len()))).Sum()
			}
			loss := weighted(x.MaxPool2D(c.Attrs()))
			if c.Dilations == nil || c.Dilations[0] == 1 && c.Dilations[1] == 1 {
				loss = loss.Add(weighted(x.AvgPool2D([]int{c.KH, c.KW}, c.Strides, c.Pads, c.CountIncludePad)))
			}
			loss = loss.Add(weighted(x.GlobalAvgPool()))
			b.Output("loss", loss)
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if l := eval64.Eval(g, nil)[g.Outputs[0].ID][0]; math.IsInf(l, 0) || math.IsNaN(l) {
				t.Skipf("loss %v: dilation steps over every tap of a window, whose maximum is -Inf", l)
			}
			analytic, numeric := sampledGradients(t, g, g.Outputs[0].ID, 40, uint64(i))
			if diff := cmp.Diff(numeric, analytic, close); diff != "" {
				t.Errorf("%+v: ∂loss/∂x (-finite differences +backward):\n%s", c, diff)
			}
		})
	}
}

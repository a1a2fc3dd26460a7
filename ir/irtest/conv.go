package irtest

import (
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// ConvCase is one convolution's geometry: x [N,C,H,W], w [M,C/Group,KH,KW]
// and conv2d's attributes.
type ConvCase struct {
	Name                     string
	N, C, H, W, M, KH, KW    int
	Strides, Pads, Dilations []int
	Group                    int
}

// Attrs returns the case's attributes by name, for ir.Tensor.Conv2D.
func (c ConvCase) Attrs() map[string][]int {
	a := map[string][]int{"group": {max(c.Group, 1)}}
	if c.Strides != nil {
		a["strides"] = c.Strides
	}
	if c.Pads != nil {
		a["pads"] = c.Pads
	}
	if c.Dilations != nil {
		a["dilations"] = c.Dilations
	}
	return a
}

// ConvEdges are the convolutions every backend must reproduce: 1×1
// kernels, a kernel as large as the input, strides larger than the
// kernel, odd sizes, asymmetric padding wider than the kernel (outputs
// made only of padded taps), dilation, groups and depthwise.
func ConvEdges() []ConvCase {
	return []ConvCase{
		{Name: "1x1", N: 1, C: 3, H: 4, W: 5, M: 2, KH: 1, KW: 1},
		{Name: "3x3-pad1", N: 2, C: 3, H: 7, W: 6, M: 4, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}},
		{Name: "odd-strides-dilations", N: 1, C: 2, H: 9, W: 11, M: 3, KH: 3, KW: 2, Strides: []int{2, 3}, Dilations: []int{2, 1}, Pads: []int{1, 0, 2, 1}},
		{Name: "depthwise", N: 1, C: 4, H: 6, W: 6, M: 4, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}, Group: 4},
		{Name: "groups", N: 2, C: 6, H: 5, W: 5, M: 4, KH: 2, KW: 2, Group: 2},
		{Name: "kernel-as-input", N: 1, C: 2, H: 5, W: 4, M: 3, KH: 5, KW: 4},
		{Name: "stride-over-kernel", N: 1, C: 1, H: 10, W: 10, M: 2, KH: 2, KW: 2, Strides: []int{3, 4}},
		{Name: "padding-only", N: 1, C: 1, H: 2, W: 2, M: 2, KH: 1, KW: 1, Pads: []int{2, 1, 2, 3}},
	}
}

// RandomConv returns a random convolution of at most a few thousand
// outputs: sizes, strides, pads (up to beyond the kernel), dilations and
// groups drawn so that the kernel fits the padded input.
func RandomConv(seed uint64) ConvCase {
	r := rand.New(rand.NewPCG(seed, 23))
	for {
		g := []int{1, 1, 1, 2, 3}[r.IntN(5)]
		c := ConvCase{Name: "random", N: 1 + r.IntN(2), C: g * (1 + r.IntN(3)), H: 1 + r.IntN(9), W: 1 + r.IntN(9),
			M: g * (1 + r.IntN(3)), KH: 1 + r.IntN(4), KW: 1 + r.IntN(4), Group: g,
			Strides:   []int{1 + r.IntN(3), 1 + r.IntN(3)},
			Dilations: []int{1 + r.IntN(2), 1 + r.IntN(2)},
			Pads:      []int{r.IntN(3), r.IntN(3), r.IntN(3), r.IntN(3)}}
		if r.IntN(4) == 0 { // depthwise
			c.Group, c.M = c.C, c.C
		}
		if (c.KH-1)*c.Dilations[0]+1 <= c.H+c.Pads[0]+c.Pads[2] && (c.KW-1)*c.Dilations[1]+1 <= c.W+c.Pads[1]+c.Pads[3] {
			return c
		}
	}
}

// Graph returns the case's graph: x and w as inputs of Values, the
// convolution "y", and its epilogues as matmul's are fused: "bias_relu"
// (y + a per-channel bias [M,1,1], relu) and "residual" (that plus a
// tensor of y's shape).
func (c ConvCase) Graph(seed uint64) *ir.Graph {
	b := ir.NewBuilder()
	g := max(c.Group, 1)
	x := b.Input(ir.Shape{c.N, c.C, c.H, c.W}, Values(seed, c.N*c.C*c.H*c.W, 2))
	w := b.Input(ir.Shape{c.M, c.C / g, c.KH, c.KW}, Values(seed+1, c.M*c.C/g*c.KH*c.KW, 1))
	y := x.Conv2D(w, c.Attrs())
	b.Output("y", y)
	if s := y.Shape(); s != nil {
		bias := b.Input(ir.Shape{c.M, 1, 1}, Values(seed+2, c.M, 1))
		act := y.Add(bias).Relu()
		b.Output("bias_relu", act)
		b.Output("residual", act.Add(b.Input(s, Values(seed+3, s.Len(), 1))))
	}
	return must(b)
}

// Convs returns the suite's convolutions: each of ConvEdges with its
// fused epilogues, a convolution reading views (x broadcast over the
// batch, w a reshape of a matrix), one of a constant weight, and one
// whose weights are extremes (subnormal, ±0, large), kept finite.
func Convs() []Case {
	var cs []Case
	for k, c := range ConvEdges() {
		cs = append(cs, Case{"conv/" + c.Name, c.Graph(uint64(100 + 4*k))})
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1, 3, 5, 5}, Values(140, 75, 2)).Broadcast(ir.Shape{2, 3, 5, 5})
	w := b.Input(ir.Shape{4, 27}, Values(141, 108, 1)).Reshape(ir.Shape{4, 3, 3, 3})
	b.Output("y", x.Conv2D(w, map[string][]int{"pads": {1, 2, 0, 1}}))
	b.Output("const-w", x.Conv2D(b.Full(ir.Shape{2, 3, 2, 2}, 0.375), map[string][]int{"strides": {2, 2}, "pads": {1, 1, 1, 1}}))
	cs = append(cs, Case{"conv/views-and-fulls", must(b)})
	b = ir.NewBuilder()
	u := Extremes(142, 2*3*4*4)
	for i, v := range u {
		if v > 1 || v < -1 {
			u[i] = 1 / v
		}
	}
	xe := b.Input(ir.Shape{2, 3, 4, 4}, u)
	we := b.Input(ir.Shape{3, 1, 2, 2}, []float32{1e-40, -1e-40, 0, float32(negZero()), 1, -1, 0.5, 3, 1e-38, -2, 0.25, 4})
	b.Output("y", xe.Conv2D(we, map[string][]int{"group": {3}, "pads": {1, 1, 1, 1}}))
	cs = append(cs, Case{"conv/extremes", must(b)})
	return append(append(append(append(cs, ConvTransposes()...), Resizes()...), Pads()...), Attentions()...)
}

func negZero() float64 { return math.Copysign(0, -1) }

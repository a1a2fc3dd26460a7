package irtest

import (
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// ConvTransposeCase is one transposed convolution's geometry: x
// [N,C,H,W], w [C,M/Group,KH,KW] and conv_transpose2d's attributes.
type ConvTransposeCase struct {
	Name                                    string
	N, C, H, W, M, KH, KW                   int
	Strides, Pads, Dilations, OutputPadding []int
	Group                                   int
}

// Attrs returns the case's attributes by name, for
// ir.Tensor.ConvTranspose2D.
func (c ConvTransposeCase) Attrs() map[string][]int {
	a := map[string][]int{"group": {max(c.Group, 1)}}
	for name, v := range map[string][]int{"strides": c.Strides, "pads": c.Pads, "dilations": c.Dilations, "output_padding": c.OutputPadding} {
		if v != nil {
			a[name] = v
		}
	}
	return a
}

// ConvTransposeEdges are the transposed convolutions every backend must
// reproduce: 1×1 kernels, strides larger than the kernel (outputs no tap
// reaches), pads that crop into the kernel's reach, output_padding, odd
// sizes, dilation, groups and depthwise, a kernel larger than the input,
// and conv2d's input gradient geometry (stride 2, pad 1, 3×3).
func ConvTransposeEdges() []ConvTransposeCase {
	return []ConvTransposeCase{
		{Name: "1x1", N: 1, C: 3, H: 4, W: 5, M: 2, KH: 1, KW: 1},
		{Name: "3x3", N: 2, C: 2, H: 3, W: 4, M: 3, KH: 3, KW: 3},
		{Name: "stride-over-kernel", N: 1, C: 2, H: 3, W: 3, M: 2, KH: 2, KW: 1, Strides: []int{3, 4}},
		{Name: "pads-output-padding", N: 1, C: 1, H: 3, W: 3, M: 2, KH: 3, KW: 3, Strides: []int{3, 2}, Pads: []int{1, 2, 1, 2}, OutputPadding: []int{1, 1}},
		{Name: "odd-strides-dilations", N: 1, C: 2, H: 5, W: 4, M: 3, KH: 3, KW: 2, Strides: []int{2, 3}, Dilations: []int{2, 3}, Pads: []int{1, 0, 2, 1}},
		{Name: "depthwise", N: 1, C: 4, H: 4, W: 4, M: 4, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}, Group: 4},
		{Name: "groups", N: 2, C: 6, H: 3, W: 3, M: 4, KH: 2, KW: 2, Strides: []int{2, 2}, Group: 2},
		{Name: "kernel-over-input", N: 1, C: 2, H: 2, W: 1, M: 1, KH: 5, KW: 4},
		{Name: "conv2d-dx", N: 1, C: 4, H: 4, W: 4, M: 3, KH: 3, KW: 3, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}, OutputPadding: []int{1, 1}},
	}
}

// RandomConvTranspose returns a random transposed convolution of at most
// a few thousand outputs: sizes, strides, pads (up to cropping most of
// the output), dilations, output padding and groups.
func RandomConvTranspose(seed uint64) ConvTransposeCase {
	r := rand.New(rand.NewPCG(seed, 29))
	for {
		g := []int{1, 1, 1, 2, 3}[r.IntN(5)]
		c := ConvTransposeCase{Name: "random", N: 1 + r.IntN(2), C: g * (1 + r.IntN(3)), H: 1 + r.IntN(6), W: 1 + r.IntN(6),
			M: g * (1 + r.IntN(3)), KH: 1 + r.IntN(4), KW: 1 + r.IntN(4), Group: g,
			Strides:       []int{1 + r.IntN(3), 1 + r.IntN(3)},
			Dilations:     []int{1 + r.IntN(2), 1 + r.IntN(2)},
			Pads:          []int{r.IntN(3), r.IntN(3), r.IntN(3), r.IntN(3)},
			OutputPadding: []int{r.IntN(2), r.IntN(2)}}
		if r.IntN(4) == 0 { // depthwise
			c.Group, c.M = c.C, c.C
		}
		a, err := ir.PackAttrs(ir.OpConvTranspose2D, c.Attrs())
		if err != nil {
			panic("irtest: " + err.Error())
		}
		if out, err := ir.InferShape(0, ir.OpConvTranspose2D, []ir.Shape{{c.N, c.C, c.H, c.W}, {c.C, c.M / c.Group, c.KH, c.KW}}, a); err == nil && out.Len() <= 4096 {
			return c
		}
	}
}

// Graph returns the case's graph: x and w as inputs of Values, the
// transposed convolution "y", and its fused epilogues as for conv2d:
// "bias_relu" (y + a per-channel bias [M,1,1], relu) and "residual" (that
// plus a tensor of y's shape).
func (c ConvTransposeCase) Graph(seed uint64) *ir.Graph {
	b := ir.NewBuilder()
	g := max(c.Group, 1)
	x := b.Input(ir.Shape{c.N, c.C, c.H, c.W}, Values(seed, c.N*c.C*c.H*c.W, 2))
	w := b.Input(ir.Shape{c.C, c.M / g, c.KH, c.KW}, Values(seed+1, c.C*c.M/g*c.KH*c.KW, 1))
	y := x.ConvTranspose2D(w, c.Attrs())
	b.Output("y", y)
	if s := y.Shape(); s != nil {
		bias := b.Input(ir.Shape{c.M, 1, 1}, Values(seed+2, c.M, 1))
		act := y.Add(bias).Relu()
		b.Output("bias_relu", act)
		b.Output("residual", act.Add(b.Input(s, Values(seed+3, s.Len(), 1))))
	}
	return must(b)
}

// ConvTransposes returns the suite's transposed convolutions: each of
// ConvTransposeEdges with its fused epilogues, one reading views (x
// broadcast over the batch, w a reshape of a matrix) and one whose
// weights are extremes (subnormal, ±0, large), kept finite.
func ConvTransposes() []Case {
	var cs []Case
	for k, c := range ConvTransposeEdges() {
		cs = append(cs, Case{"conv_transpose/" + c.Name, c.Graph(uint64(300 + 4*k))})
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1, 3, 3, 4}, Values(340, 36, 2)).Broadcast(ir.Shape{2, 3, 3, 4})
	w := b.Input(ir.Shape{3, 8}, Values(341, 24, 1)).Reshape(ir.Shape{3, 2, 2, 2})
	b.Output("y", x.ConvTranspose2D(w, map[string][]int{"strides": {2, 1}, "pads": {1, 0, 0, 1}}))
	b.Output("const-w", x.ConvTranspose2D(b.Full(ir.Shape{3, 1, 2, 2}, 0.375), map[string][]int{"strides": {2, 2}, "group": {3}}))
	cs = append(cs, Case{"conv_transpose/views-and-fulls", must(b)})
	b = ir.NewBuilder()
	u := Extremes(342, 2*3*3*3)
	for i, v := range u {
		if v > 1 || v < -1 {
			u[i] = 1 / v
		}
	}
	xe := b.Input(ir.Shape{2, 3, 3, 3}, u)
	we := b.Input(ir.Shape{3, 1, 2, 2}, []float32{1e-40, -1e-40, 0, float32(negZero()), 1, -1, 0.5, 3, 1e-38, -2, 0.25, 4})
	b.Output("y", xe.ConvTranspose2D(we, map[string][]int{"group": {3}, "strides": {2, 2}, "pads": {1, 1, 0, 0}}))
	cs = append(cs, Case{"conv_transpose/extremes", must(b)})
	return cs
}

func init() {
	attributed[ir.OpConvTranspose2D] = func(r *rand.Rand, x ir.Tensor, like func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		switch {
		case len(s) == 0:
			x = x.Reshape(ir.Shape{1, 1, 1, 1})
		case len(s) != 4: // x as one image of one channel
			x = x.Reshape(ir.Shape{1, 1, s.Len() / s[len(s)-1], s[len(s)-1]})
		}
		s = x.Shape()
		g := 1
		if s[1] > 1 && r.IntN(2) == 0 {
			g = s[1]
		}
		ws := ir.Shape{s[1], 1 + r.IntN(2), 1 + r.IntN(3), 1 + r.IntN(3)}
		attrs := map[string][]int{"strides": {1 + r.IntN(2), 1 + r.IntN(2)}, "pads": {r.IntN(2), r.IntN(2), r.IntN(2), r.IntN(2)}, "group": {g}}
		a, err := ir.PackAttrs(ir.OpConvTranspose2D, attrs)
		if err != nil {
			panic("irtest: " + err.Error())
		}
		// Checked before any node is added: a refused node would fail the
		// builder.
		if out, err := ir.InferShape(0, ir.OpConvTranspose2D, []ir.Shape{s, ws}, a); err != nil || out.Len() > maxRandomElements {
			return ir.Tensor{}, false
		}
		return x.ConvTranspose2D(like(ws), attrs), true
	}
	attributedCases[ir.OpConvTranspose2D] = func() []OpCase {
		var cs []OpCase
		for _, c := range ConvTransposeEdges()[1:5] {
			attrs, err := ir.PackAttrs(ir.OpConvTranspose2D, c.Attrs())
			if err != nil {
				panic("irtest: " + err.Error())
			}
			cs = append(cs, OpCase{Op: ir.OpConvTranspose2D, Args: []ir.Shape{{c.N, c.C, c.H, c.W}, {c.C, c.M / max(c.Group, 1), c.KH, c.KW}}, Attrs: attrs})
		}
		return cs
	}
}

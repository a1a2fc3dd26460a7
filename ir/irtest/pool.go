package irtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// PoolCase is one pooling's geometry: x [N,C,H,W], a KH×KW window and its
// strides, pads and (max pooling only) dilations.
type PoolCase struct {
	Name                     string
	N, C, H, W, KH, KW       int
	Strides, Pads, Dilations []int
	CountIncludePad          bool // average pooling
}

// Attrs returns the case's maxpool2d attributes by name.
func (c PoolCase) Attrs() map[string][]int {
	a := map[string][]int{"kernel_shape": {c.KH, c.KW}}
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

// PoolEdges are the poolings every backend must reproduce: 1×1 windows,
// a window as large as the input, strides larger than the window, odd
// sizes, asymmetric padding up to one below the window, and dilation.
func PoolEdges() []PoolCase {
	return []PoolCase{
		{Name: "1x1", N: 1, C: 2, H: 3, W: 4, KH: 1, KW: 1},
		{Name: "2x2-stride2", N: 2, C: 3, H: 6, W: 7, KH: 2, KW: 2, Strides: []int{2, 2}},
		{Name: "3x3-pad1", N: 1, C: 2, H: 5, W: 5, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}, CountIncludePad: true},
		{Name: "odd-asymmetric", N: 1, C: 1, H: 7, W: 9, KH: 3, KW: 2, Strides: []int{2, 3}, Pads: []int{2, 0, 1, 1}},
		{Name: "window-as-input", N: 1, C: 3, H: 4, W: 5, KH: 4, KW: 5},
		{Name: "stride-over-window", N: 1, C: 1, H: 9, W: 9, KH: 2, KW: 1, Strides: []int{4, 3}},
		{Name: "dilated", N: 1, C: 2, H: 7, W: 6, KH: 2, KW: 3, Dilations: []int{3, 2}, Pads: []int{1, 2, 0, 1}},
	}
}

// RandomPool returns a random pooling of at most a few thousand outputs,
// its pads below the window.
func RandomPool(seed uint64) PoolCase {
	r := rand.New(rand.NewPCG(seed, 29))
	for {
		c := PoolCase{Name: "random", N: 1 + r.IntN(2), C: 1 + r.IntN(3), H: 1 + r.IntN(9), W: 1 + r.IntN(9),
			KH: 1 + r.IntN(4), KW: 1 + r.IntN(4), Strides: []int{1 + r.IntN(3), 1 + r.IntN(3)},
			Dilations: []int{1, 1}, CountIncludePad: r.IntN(2) == 0}
		if r.IntN(4) == 0 {
			c.Dilations = []int{1 + r.IntN(2), 1 + r.IntN(2)}
		}
		eh, ew := (c.KH-1)*c.Dilations[0]+1, (c.KW-1)*c.Dilations[1]+1
		c.Pads = []int{r.IntN(eh), r.IntN(ew), r.IntN(eh), r.IntN(ew)}
		if eh <= c.H+c.Pads[0]+c.Pads[2] && ew <= c.W+c.Pads[1]+c.Pads[3] {
			return c
		}
	}
}

// Graph returns the case's graph: x of Values, "max" (maxpool2d, with a
// fused relu-and-scale epilogue as "max_relu"), "grad" (maxpool2d_grad of
// x and an output gradient of Values, with an epilogue) and, undilated,
// "avg" (AvgPool2D, with the case's count_include_pad) and "global"
// (GlobalAvgPool).
func (c PoolCase) Graph(seed uint64) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{c.N, c.C, c.H, c.W}, Values(seed, c.N*c.C*c.H*c.W, 2))
	m := x.MaxPool2D(c.Attrs())
	b.Output("max", m)
	b.Output("max_relu", m.AddScalar(-0.5).Relu().MulScalar(3))
	if s := m.Shape(); s != nil {
		b.Output("grad", x.MaxPool2DGrad(b.Input(s, Values(seed+7, s.Len(), 1)), c.Attrs()).MulScalar(0.5))
	}
	if c.Dilations == nil || c.Dilations[0] == 1 && c.Dilations[1] == 1 {
		b.Output("avg", x.AvgPool2D([]int{c.KH, c.KW}, c.Strides, c.Pads, c.CountIncludePad))
	}
	b.Output("global", x.GlobalAvgPool())
	return must(b)
}

// Pools returns the suite's poolings: each of PoolEdges, and a max
// pooling of a view (x broadcast over the batch) and of extremes.
func Pools() []Case {
	var cs []Case
	for k, c := range PoolEdges() {
		cs = append(cs, Case{"pool/" + c.Name, c.Graph(uint64(200 + k))})
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1, 2, 4, 5}, Extremes(220, 40)).Broadcast(ir.Shape{3, 2, 4, 5})
	b.Output("y", x.MaxPool2D(map[string][]int{"kernel_shape": {2, 3}, "pads": {1, 1, 0, 2}}))
	cs = append(cs, Case{"pool/views-and-extremes", must(b)})
	// The gradient's selection where it matters: ties (the first tap
	// wins), -0 beside +0 (+0 wins), windows of the lowest float (the
	// first tap, after padding that a window skips), an
	// overlapping window (3×3, stride 1) so elements gather from several
	// windows, and a transposed view of the gradient.
	b = ir.NewBuilder()
	nz := float32(negZero())
	ninf := float32(-math.MaxFloat32)
	tied := []float32{1, 1, 0, nz, 2, 2, 2, 1, nz, 0, 0, nz, ninf, ninf, 3, 3, 1, 2, 1, 2, nz, nz, 0.5, 0.5, ninf,
		0, 0, 0, 0, 0, 1, nz, 1, nz, 2, 2}
	xt := b.Input(ir.Shape{1, 1, 6, 6}, tied)
	for _, a := range []map[string][]int{
		{"kernel_shape": {2, 2}, "strides": {2, 2}},
		{"kernel_shape": {3, 3}, "pads": {1, 1, 1, 1}},
		{"kernel_shape": {2, 3}, "strides": {1, 2}, "dilations": {2, 1}, "pads": {0, 1, 1, 0}},
	} {
		s := xt.MaxPool2D(a).Shape()
		g := b.Input(ir.Shape{s[3], s[2]}, Values(221, s.Len(), 1)).T().Reshape(s)
		b.Output(fmt.Sprintf("grad_%dx%d_s%d", a["kernel_shape"][0], a["kernel_shape"][1], s[2]), xt.MaxPool2DGrad(g, a))
	}
	cs = append(cs, Case{"pool/grad-ties", must(b)})
	return cs
}

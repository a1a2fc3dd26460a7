package irtest

import (
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// ResizeCase is one resize2d: x [N,C,H,W] to [N,C,OH,OW] and its modes
// (ir.Resize* values); Scale, when not 0, is the float32 scale of both
// axes (ONNX's scales input) instead of OH/H and OW/W.
type ResizeCase struct {
	Name                 string
	N, C, H, W, OH, OW   int
	Mode, Coord, Nearest int
	ScaleH, ScaleW       float32
}

// Attrs returns the case's attributes by name, for ir.Tensor.Resize2D.
func (c ResizeCase) Attrs() map[string][]int {
	bits := func(s float32) int {
		if s == 0 {
			return 0
		}
		return int(math.Float32bits(s))
	}
	return map[string][]int{"sizes": {c.OH, c.OW}, "mode": {c.Mode}, "coordinate_mode": {c.Coord},
		"nearest_mode": {c.Nearest}, "scale_bits": {bits(c.ScaleH), bits(c.ScaleW)}}
}

// ResizeEdges are the resizes every backend must reproduce: up and down,
// nearest in each nearest_mode, linear in each coordinate mode, an
// output of one element (align_corners and pytorch_half_pixel's special
// case), identity, and a float scale that is not OH/H.
func ResizeEdges() []ResizeCase {
	return []ResizeCase{
		{Name: "nearest-up", N: 1, C: 2, H: 2, W: 3, OH: 4, OW: 9},
		{Name: "nearest-down-ceil", N: 1, C: 1, H: 5, W: 7, OH: 3, OW: 2, Nearest: ir.ResizeCeil, Coord: ir.ResizeAsymmetric},
		{Name: "nearest-prefer-ceil", N: 2, C: 1, H: 4, W: 4, OH: 7, OW: 8, Nearest: ir.ResizeRoundPreferCeil},
		{Name: "nearest-floor-align", N: 1, C: 1, H: 4, W: 4, OH: 8, OW: 8, Nearest: ir.ResizeFloor, Coord: ir.ResizeAlignCorners},
		{Name: "linear-up", N: 1, C: 2, H: 3, W: 4, OH: 6, OW: 8, Mode: ir.ResizeLinear},
		{Name: "linear-down-scale", N: 1, C: 1, H: 4, W: 5, OH: 2, OW: 3, Mode: ir.ResizeLinear, ScaleH: 0.6, ScaleW: 0.6},
		{Name: "linear-align", N: 1, C: 1, H: 4, W: 4, OH: 7, OW: 5, Mode: ir.ResizeLinear, Coord: ir.ResizeAlignCorners},
		{Name: "linear-pytorch-one", N: 1, C: 3, H: 4, W: 4, OH: 1, OW: 3, Mode: ir.ResizeLinear, Coord: ir.ResizePytorchHalfPixel},
		{Name: "linear-asymmetric", N: 1, C: 1, H: 3, W: 3, OH: 5, OW: 7, Mode: ir.ResizeLinear, Coord: ir.ResizeAsymmetric},
		{Name: "identity", N: 1, C: 2, H: 3, W: 3, OH: 3, OW: 3, Mode: ir.ResizeLinear},
		// One input row and one column: linear along them is a copy (a
		// compiler that sees both taps read one element may factor the
		// products: lavapipe's NIR did, 1 ULP off).
		{Name: "linear-one-element", N: 2, C: 1, H: 1, W: 1, OH: 6, OW: 7, Mode: ir.ResizeLinear, Coord: ir.ResizeAsymmetric},
		{Name: "linear-one-row", N: 1, C: 2, H: 1, W: 4, OH: 9, OW: 3, Mode: ir.ResizeLinear},
	}
}

// RandomResize returns a random resize of at most a few thousand outputs.
func RandomResize(seed uint64) ResizeCase {
	r := rand.New(rand.NewPCG(seed, 31))
	c := ResizeCase{Name: "random", N: 1 + r.IntN(2), C: 1 + r.IntN(3), H: 1 + r.IntN(7), W: 1 + r.IntN(7),
		OH: 1 + r.IntN(12), OW: 1 + r.IntN(12), Mode: r.IntN(2), Coord: r.IntN(5), Nearest: r.IntN(4)}
	if r.IntN(3) == 0 {
		c.ScaleH, c.ScaleW = float32(c.OH)/float32(c.H)+0.1*r.Float32(), float32(c.OW)/float32(c.W)+0.1*r.Float32()
	}
	return c
}

// Graph returns the case's graph: x as an input of Values, the resize
// "y" and its fused epilogue "relu" (relu of y + 0.5).
func (c ResizeCase) Graph(seed uint64) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{c.N, c.C, c.H, c.W}, Values(seed, c.N*c.C*c.H*c.W, 2))
	y := x.Resize2D(c.Attrs())
	b.Output("y", y)
	b.Output("relu", y.AddScalar(0.5).Relu())
	return must(b)
}

// Resizes returns the suite's resizes: each of ResizeEdges, one reading
// a view (x broadcast over the batch) and one of extremes (subnormal, ±0,
// large), kept finite.
func Resizes() []Case {
	var cs []Case
	for k, c := range ResizeEdges() {
		cs = append(cs, Case{"resize/" + c.Name, c.Graph(uint64(400 + k))})
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1, 2, 3, 3}, Values(440, 18, 2)).Broadcast(ir.Shape{2, 2, 3, 3})
	b.Output("y", x.Resize2D(map[string][]int{"sizes": {5, 4}, "mode": {ir.ResizeLinear}}))
	cs = append(cs, Case{"resize/view", must(b)})
	b = ir.NewBuilder()
	u := Extremes(441, 2*2*4*4)
	for i, v := range u {
		if v > 1e30 || v < -1e30 {
			u[i] = 1 / v
		}
	}
	xe := b.Input(ir.Shape{2, 2, 4, 4}, u)
	b.Output("linear", xe.Resize2D(map[string][]int{"sizes": {7, 6}, "mode": {ir.ResizeLinear}}))
	b.Output("nearest", xe.Resize2D(map[string][]int{"sizes": {3, 9}}))
	cs = append(cs, Case{"resize/extremes", must(b)})
	return cs
}

func init() {
	attributed[ir.OpResize2D] = func(r *rand.Rand, x ir.Tensor, _ func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		switch {
		case len(s) == 0:
			x = x.Reshape(ir.Shape{1, 1, 1, 1})
		case len(s) != 4:
			x = x.Reshape(ir.Shape{1, 1, s.Len() / s[len(s)-1], s[len(s)-1]})
		}
		s = x.Shape()
		oh, ow := 1+r.IntN(2*s[2]+1), 1+r.IntN(2*s[3]+1)
		if s[0]*s[1]*oh*ow > maxRandomElements {
			return ir.Tensor{}, false
		}
		return x.Resize2D(map[string][]int{"sizes": {oh, ow}, "mode": {r.IntN(2)}, "coordinate_mode": {r.IntN(5)}, "nearest_mode": {r.IntN(4)}}), true
	}
	attributedCases[ir.OpResize2D] = func() []OpCase {
		var cs []OpCase
		for _, c := range ResizeEdges()[:6] {
			attrs, err := ir.PackAttrs(ir.OpResize2D, c.Attrs())
			if err != nil {
				panic("irtest: " + err.Error())
			}
			cs = append(cs, OpCase{Op: ir.OpResize2D, Args: []ir.Shape{{c.N, c.C, c.H, c.W}}, Attrs: attrs})
		}
		return cs
	}
}

package irtest

import (
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// PadCase is one pad: x of Shape widened by Pads (before each axis, then
// after each) in Mode (ir.Pad* values), the constant Value.
type PadCase struct {
	Name  string
	Shape ir.Shape
	Pads  []int
	Mode  int
	Value float32
}

// PadEdges are the pads every backend must reproduce: each mode on ranks
// 1 to 4, borders wider than x (reflect and wrap repeat), an axis of one
// element, no pad at all, and a negative-zero constant.
func PadEdges() []PadCase {
	return []PadCase{
		{Name: "constant-2d", Shape: ir.Shape{3, 4}, Pads: []int{1, 2, 2, 0}, Mode: ir.PadConstant, Value: 1.5},
		{Name: "constant-neg-zero", Shape: ir.Shape{1, 2, 2, 3}, Pads: []int{0, 0, 1, 1, 0, 0, 1, 1}, Mode: ir.PadConstant, Value: float32(negZero())},
		{Name: "reflect-4d", Shape: ir.Shape{1, 3, 4, 5}, Pads: []int{0, 0, 1, 2, 0, 0, 2, 1}, Mode: ir.PadReflect},
		{Name: "reflect-wide", Shape: ir.Shape{3}, Pads: []int{7, 9}, Mode: ir.PadReflect},
		{Name: "reflect-one", Shape: ir.Shape{2, 1}, Pads: []int{1, 3, 0, 2}, Mode: ir.PadReflect},
		{Name: "edge-3d", Shape: ir.Shape{2, 3, 2}, Pads: []int{1, 0, 3, 0, 2, 1}, Mode: ir.PadEdge},
		{Name: "wrap-2d", Shape: ir.Shape{2, 3}, Pads: []int{3, 4, 5, 1}, Mode: ir.PadWrap},
		{Name: "wrap-1d", Shape: ir.Shape{5}, Pads: []int{2, 12}, Mode: ir.PadWrap},
		{Name: "none", Shape: ir.Shape{2, 2, 3}, Pads: []int{0, 0, 0, 0, 0, 0}, Mode: ir.PadConstant, Value: 7},
		// Negative pads crop (a Slice or Split of step 1), alone or beside a border.
		{Name: "crop-2d", Shape: ir.Shape{4, 6}, Pads: []int{-1, 2, 0, -3}, Mode: ir.PadConstant, Value: 2},
		{Name: "crop-4d", Shape: ir.Shape{1, 2, 7, 5}, Pads: []int{0, -1, -3, -2, 0, 0, -3, 0}, Mode: ir.PadConstant, Value: float32(negZero())},
		{Name: "crop-edge", Shape: ir.Shape{5, 3}, Pads: []int{-2, 1, 1, -1}, Mode: ir.PadEdge},
		{Name: "crop-reflect", Shape: ir.Shape{6}, Pads: []int{-2, 7}, Mode: ir.PadReflect},
		{Name: "crop-wrap", Shape: ir.Shape{2, 6}, Pads: []int{0, 3, 0, -4}, Mode: ir.PadWrap},
	}
}

// RandomPad returns a random pad of rank 1 to 4 and at most a few
// thousand outputs, borders up to twice x's length, a third of the axes
// cropped instead.
func RandomPad(seed uint64) PadCase {
	r := rand.New(rand.NewPCG(seed, 41))
	rank := 1 + r.IntN(ir.MaxPadRank)
	c := PadCase{Name: "random", Shape: make(ir.Shape, rank), Pads: make([]int, 2*rank), Mode: r.IntN(4), Value: float32(r.IntN(9)) - 4}
	for d := range rank {
		c.Shape[d] = 1 + r.IntN(5)
		c.Pads[d], c.Pads[rank+d] = r.IntN(2*c.Shape[d]+1), r.IntN(2*c.Shape[d]+1)
		if n := c.Shape[d]; n > 1 && r.IntN(3) == 0 { // a crop of 1 to n-1 elements, split between the ends
			cut := 1 + r.IntN(n-1)
			b := r.IntN(cut + 1)
			c.Pads[d], c.Pads[rank+d] = -b, b-cut
		}
	}
	return c
}

// Graph returns the case's graph: x as an input of Values, the pad "y"
// and its fused epilogue "relu" (relu of y + 0.5).
func (c PadCase) Graph(seed uint64) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(c.Shape, Values(seed, c.Shape.Len(), 2))
	y := x.Pad(c.Pads, c.Mode, c.Value)
	b.Output("y", y)
	b.Output("relu", y.AddScalar(0.5).Relu())
	return must(b)
}

// Pads returns the suite's pads: each of PadEdges, one reading a view (x
// transposed) and one of extremes (subnormal, ±0, large).
func Pads() []Case {
	var cs []Case
	for k, c := range PadEdges() {
		cs = append(cs, Case{"pad/" + c.Name, c.Graph(uint64(500 + k))})
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{3, 4}, Values(540, 12, 2)).T()
	b.Output("y", x.Pad([]int{1, 2, 3, 1}, ir.PadReflect, 0))
	cs = append(cs, Case{"pad/view", must(b)})
	b = ir.NewBuilder()
	xe := b.Input(ir.Shape{2, 3, 4}, Extremes(541, 24))
	b.Output("edge", xe.Pad([]int{1, 1, 1, 1, 1, 1}, ir.PadEdge, 0))
	b.Output("wrap", xe.Pad([]int{0, 2, 1, 0, 3, 2}, ir.PadWrap, 0))
	b.Output("crop", xe.Pad([]int{-1, 0, 1, 0, -2, -1}, ir.PadConstant, float32(negZero())))
	cs = append(cs, Case{"pad/extremes", must(b)})
	return cs
}

func init() {
	attributed[ir.OpPad] = func(r *rand.Rand, x ir.Tensor, _ func(ir.Shape) ir.Tensor) (ir.Tensor, bool) {
		s := x.Shape()
		if len(s) == 0 || len(s) > ir.MaxPadRank {
			x = x.Reshape(ir.Shape{s.Len()})
		}
		s = x.Shape()
		pads := make([]int, 2*len(s))
		out := 1
		for d := range s {
			pads[d], pads[len(s)+d] = r.IntN(s[d]+2), r.IntN(s[d]+2)
			out *= s[d] + pads[d] + pads[len(s)+d]
		}
		if out > maxRandomElements {
			return ir.Tensor{}, false
		}
		return x.Pad(pads, r.IntN(4), float32(r.IntN(5))-2), true
	}
	attributedCases[ir.OpPad] = func() []OpCase {
		var cs []OpCase
		for _, c := range PadEdges() {
			attrs, err := ir.PackAttrs(ir.OpPad, ir.PadAttrs(c.Pads, c.Mode, c.Value))
			if err != nil {
				panic("irtest: " + err.Error())
			}
			cs = append(cs, OpCase{Op: ir.OpPad, Args: []ir.Shape{c.Shape}, Attrs: attrs})
		}
		return cs
	}
}

package cpuref_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// scatterOut evaluates g and returns its one output.
func scatterOut(t *testing.T, g *ir.Graph) cpuref.Value {
	t.Helper()
	vals, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	return vals[g.Outputs[0].ID]
}

// TestScatterSemantics: the scatter rows' meaning (ir/scatter.go), by
// hand: the later of two updates aimed at one element wins (none), a
// negative index counts from the end, add and mul wrap int64 and fold in
// order from data's value, max and min keep the first NaN, bool's add is
// or and its mul and, float16 rounds after each update (two halves of an
// ulp leave 1 alone), and scatter_elements' elements keep their other
// coordinates.
func TestScatterSemantics(t *testing.T) {
	build := func(f func(b *ir.Builder) ir.Tensor) *ir.Graph {
		b := ir.NewBuilder()
		b.Output("y", f(b))
		g, err := b.Build(ir.Limits{NonFinite: true})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	i64 := func(b *ir.Builder, s ir.Shape, v ...int64) ir.Tensor { return b.TypedInput("", ir.I64, s, nil, v) }
	big := int64(math.MaxInt64 - 1)
	wrapAdd, wrapMul := big, big // element 3: big, then 4, then 40
	wrapAdd += 4
	wrapAdd += 40
	wrapMul *= 4
	wrapMul *= 40
	for _, c := range []struct {
		red  ir.ScatterReduction
		want []int64
	}{
		{ir.ScatterNone, []int64{math.MaxInt64, 30, 2, 40}},
		{ir.ScatterAdd, []int64{math.MaxInt64, 1 + 10 + 30, 2, wrapAdd}},
		{ir.ScatterMul, []int64{math.MaxInt64, 300, 2, wrapMul}},
		{ir.ScatterMax, []int64{math.MaxInt64, 30, 2, big}},
		{ir.ScatterMin, []int64{math.MaxInt64, 1, 2, 4}},
	} {
		g := build(func(b *ir.Builder) ir.Tensor {
			x := i64(b, ir.Shape{4}, math.MaxInt64, 1, 2, big)
			return x.ScatterND(i64(b, ir.Shape{3, 1}, 1, -3, -1), i64(b, ir.Shape{3}, 10, 30, 4), c.red).
				ScatterElements(i64(b, ir.Shape{1}, 3), i64(b, ir.Shape{1}, 40), 0, c.red)
		})
		if got := scatterOut(t, g).I; !slices.Equal(got, c.want) {
			t.Errorf("int64 %v: %v, want %v", c.red, got, c.want)
		}
	}
	nan1, nan2 := math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002)
	for _, c := range []struct {
		red  ir.ScatterReduction
		want []uint32
	}{
		{ir.ScatterMax, []uint32{0x7fc00001, 0xffc00002, 0x40a00000}},
		{ir.ScatterMin, []uint32{0x7fc00001, 0xffc00002, 0xff800000}},
		{ir.ScatterNone, []uint32{0x3f800000, 0x40400000, 0xff800000}},
	} {
		g := build(func(b *ir.Builder) ir.Tensor {
			x := b.TypedInput("", ir.F32, ir.Shape{3}, []float32{nan1, 2, 5}, nil)
			u := b.TypedInput("", ir.F32, ir.Shape{5}, []float32{nan2, nan2, 3, float32(math.Inf(-1)), 1}, nil)
			return x.ScatterElements(i64(b, ir.Shape{5}, 0, 1, 1, 2, 0), u, 0, c.red)
		})
		got := scatterOut(t, g).F
		var bits []uint32
		for _, v := range got {
			bits = append(bits, math.Float32bits(v))
		}
		if !slices.Equal(bits, c.want) {
			t.Errorf("float32 %v: %#x, want %#x", c.red, bits, c.want)
		}
	}
	g := build(func(b *ir.Builder) ir.Tensor {
		x := b.TypedInput("", ir.F16, ir.Shape{2}, []float32{1, 1}, nil)
		u := b.TypedInput("", ir.F16, ir.Shape{2, 2}, []float32{0x1p-11, 0x1p-11, 0x1p-10, 0x1p-11}, nil)
		return x.ScatterND(i64(b, ir.Shape{2, 2, 1}, 0, 0, 1, 1), u, ir.ScatterAdd)
	})
	// 1 + 2^-11 rounds to even (1), twice; 1 + 2^-10 is exact, + 2^-11 ties to even (1 + 2^-9)
	if got := scatterOut(t, g).F; !slices.Equal(got, []float32{1, 1 + 0x1p-9}) {
		t.Errorf("float16 add: %v, want [1 1.001953125]", got)
	}
	for red, want := range map[ir.ScatterReduction][]int64{ir.ScatterAdd: {1, 1, 0}, ir.ScatterMul: {1, 0, 0}, ir.ScatterMax: {1, 1, 0}, ir.ScatterMin: {1, 0, 0}} {
		g := build(func(b *ir.Builder) ir.Tensor {
			x := b.TypedInput("", ir.Bool, ir.Shape{3}, nil, []int64{1, 0, 0})
			return x.ScatterElements(i64(b, ir.Shape{4}, 0, 1, 1, 2), b.TypedInput("", ir.Bool, ir.Shape{4}, nil, []int64{1, 1, 0, 0}), 0, red)
		})
		if got := scatterOut(t, g).I; !slices.Equal(got, want) {
			t.Errorf("bool %v: %v, want %v", red, got, want)
		}
	}
	g = build(func(b *ir.Builder) ir.Tensor { // [2,3] along axis 1, updates [2,2]: column 2 of row 1 untouched
		x := i64(b, ir.Shape{2, 3}, 1, 2, 3, 4, 5, 6)
		return x.ScatterElements(i64(b, ir.Shape{2, 2}, 2, -3, -2, 0), i64(b, ir.Shape{2, 2}, 7, 8, 9, 10), 1, ir.ScatterNone)
	})
	if got := scatterOut(t, g).I; !slices.Equal(got, []int64{8, 2, 7, 10, 9, 6}) {
		t.Errorf("scatter_elements: %v, want [8 2 7 10 9 6]", got)
	}
}

// TestScatterOutOfRange: an index outside [-d, d) fails the run with
// invalid_input naming the node, the index and its element, whichever
// element it is, and nothing else.
func TestScatterOutOfRange(t *testing.T) {
	for _, v := range []int64{4, -5, math.MaxInt64, math.MinInt64} {
		b := ir.NewBuilder()
		x := b.TypedInput("", ir.F32, ir.Shape{4, 2}, make([]float32, 8), nil)
		i := b.TypedInput("", ir.I64, ir.Shape{3, 1}, nil, []int64{0, -4, v})
		b.Output("y", x.ScatterND(i, b.TypedInput("", ir.F32, ir.Shape{3, 2}, make([]float32, 6), nil), ir.ScatterNone))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cpuref.EvalTyped(g)
		e, ok := err.(*ir.Error)
		if !ok || e.Code != ir.CodeInvalidInput || e.Node != 3 || !strings.Contains(e.Error(), "element 2") {
			t.Errorf("index %d: %v, want invalid_input at node 3 naming element 2", v, err)
		}
	}
}

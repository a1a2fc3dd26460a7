package web

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// testCase is one graph of the browser op suite.
type testCase struct {
	name string
	g    *ir.Graph
}

// values returns n deterministic values in [-scale, scale] with zeros,
// negative zeros and small integers mixed in.
func values(seed uint32, n int, scale float32) []float32 {
	out := make([]float32, n)
	x := seed*2654435761 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		switch x % 11 {
		case 0:
			out[i] = 0
		case 1:
			out[i] = float32(math.Copysign(0, -1))
		case 2:
			out[i] = float32(int(x>>8%7) - 3)
		default:
			out[i] = (float32(x>>8)/float32(1<<24)*2 - 1) * scale
		}
	}
	return out
}

// subnormals mixes subnormal and tiny normal values.
func subnormals(n int) []float32 {
	out := values(99, n, 1)
	for i := range out {
		out[i] *= float32(math.Ldexp(1, -120-i%10))
	}
	return out
}

// suite is the op suite: every op, the edge shapes, fusion, products that
// would differ under FMA, subnormals, and sums over many blocks.
func suite(t *testing.T) []testCase {
	t.Helper()
	type build func(b *ir.Builder)
	in := func(b *ir.Builder, seed uint32, s ir.Shape, scale float32) ir.Tensor {
		return b.Input(s, values(seed, s.Len(), scale))
	}
	grid := func(b *ir.Builder, seed uint32, h, w int) ir.Tensor {
		v := values(seed, h*w, 1)
		for i := range v {
			v[i] = float32(math.Max(0, float64(math.Float32frombits(math.Float32bits(v[i])&^(1<<31)))-0.6) * 10)
		}
		return b.Input(ir.Shape{h, w}, v)
	}
	cases := []struct {
		name string
		f    build
	}{
		{"seed", func(b *ir.Builder) {
			x := b.Input(ir.Shape{3}, []float32{-2, 3, 4})
			y := b.Input(ir.Shape{3}, []float32{10, 20, 30})
			b.Output("values", x.Mul(y).Relu())
		}},
		{"binary", func(b *ir.Builder) {
			x, y := in(b, 1, ir.Shape{7, 9}, 100), in(b, 2, ir.Shape{7, 9}, 3)
			b.Output("add", x.Add(y))
			b.Output("sub", x.Sub(y))
			b.Output("mul", x.Mul(y))
		}},
		{"scalar", func(b *ir.Builder) {
			x := in(b, 3, ir.Shape{33}, 10)
			b.Output("add", x.AddScalar(0.1))
			b.Output("sub", x.SubScalar(-1e-3))
			b.Output("mul", x.MulScalar(1.0/3))
			b.Output("relu", x.Relu())
			b.Output("positive", x.Positive())
		}},
		{"no fma", func(b *ir.Builder) {
			x, y, z := in(b, 4, ir.Shape{257}, 1), in(b, 5, ir.Shape{257}, 1), in(b, 6, ir.Shape{257}, 1)
			b.Output("muladd", x.Mul(y).Add(z))
			b.Output("mulsub", x.Mul(x).Sub(y.Mul(y)))
		}},
		{"subnormal", func(b *ir.Builder) {
			x := b.Input(ir.Shape{40}, subnormals(40))
			y := in(b, 7, ir.Shape{40}, 1)
			b.Output("add", x.Add(x))
			b.Output("mul", x.Mul(y))
			b.Output("relu", x.Relu())
		}},
		{"transpose", func(b *ir.Builder) {
			b.Output("t", in(b, 8, ir.Shape{5, 3}, 9).T())
		}},
		{"matmul", func(b *ir.Builder) {
			a, w := in(b, 9, ir.Shape{7, 13}, 2), in(b, 10, ir.Shape{13, 5}, 2)
			b.Output("c", a.MatMul(w))
		}},
		{"matmul transposed epilogue", func(b *ir.Builder) {
			a, w := in(b, 11, ir.Shape{6, 40}, 1), in(b, 12, ir.Shape{9, 40}, 1)
			bias := in(b, 13, ir.Shape{6, 9}, 1)
			b.Output("y", a.MatMul(w.T()).Add(bias).Relu())
		}},
		{"matmul 1x1", func(b *ir.Builder) {
			b.Output("c", in(b, 14, ir.Shape{1, 1}, 5).MatMul(in(b, 15, ir.Shape{1, 1}, 5)))
		}},
		{"sum 1", func(b *ir.Builder) { b.Output("s", in(b, 16, ir.Shape{1}, 5).Sum()) }},
		{"sum 3", func(b *ir.Builder) { b.Output("s", in(b, 17, ir.Shape{3}, 5).Sum()) }},
		{"sum 1000 prologue", func(b *ir.Builder) {
			x := in(b, 18, ir.Shape{10, 100}, 1000)
			b.Output("s", x.Mul(x).SubScalar(7).Sum())
		}},
		{"sum 70000", func(b *ir.Builder) { b.Output("s", in(b, 19, ir.Shape{70000}, 1e4).Sum()) }},
		{"sum of negative zeros", func(b *ir.Builder) {
			b.Output("s", b.Input(ir.Shape{5}, []float32{float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))}).Sum())
		}},
		{"life 1x1", func(b *ir.Builder) { b.Output("g", b.Input(ir.Shape{1, 1}, []float32{1}).Life()) }},
		{"life 5x7", func(b *ir.Builder) { b.Output("g", grid(b, 20, 5, 7).Life().Life()) }},
		{"life 64x96", func(b *ir.Builder) { b.Output("g", grid(b, 21, 64, 96).Life()) }},
		{"many outputs", func(b *ir.Builder) {
			x := in(b, 22, ir.Shape{2, 3}, 4)
			for i, name := range []string{"a", "b", "c", "d", "e", "f"} {
				b.Output(name, x.AddScalar(float32(i)).MulScalar(1.5))
			}
			b.Output("t", x.T())
			b.Output("z", b.Full(ir.Shape{2, 2}, -0.5))
		}},
	}
	var out []testCase
	for _, c := range cases {
		b := ir.NewBuilder()
		c.f(b)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out = append(out, testCase{c.name, g})
	}
	for _, c := range append(irtest.Ops(), irtest.Reductions()...) { // div, maximum, …; sum and max over axes
		if c.Name == "reduce/long-rows" {
			continue // 2M values through the page cost a minute; long-columns splits rows here too
		}
		out = append(out, testCase{c.Name, c.Graph})
	}
	for _, c := range append(irtest.Views(), irtest.Slices()...) { // broadcasts (numpy's), reshapes, strided reads, slices read in place
		out = append(out, testCase{c.Name, c.Graph})
	}
	for _, c := range irtest.Composites() { // GELU, softmax, layernorm, cross-entropy, …
		out = append(out, testCase{c.Name, c.Graph})
	}
	for _, c := range append(irtest.Convs(), irtest.Pools()...) { // conv2d, maxpool2d, average pooling
		out = append(out, testCase{c.Name, c.Graph})
	}
	return out
}

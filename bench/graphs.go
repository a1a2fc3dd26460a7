package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gpucc/gpucc/ir"
)

// Values returns n deterministic values in [-1, 1), fast enough for 64M
// elements (a linear congruential generator, not irtest's PCG).
func Values(seed uint64, n int) []float32 {
	out := make([]float32, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		x = x*6364136223846793005 + 1442695040888963407
		out[i] = float32(int32(x>>32)) / (1 << 31)
	}
	return out
}

func build(b *ir.Builder) *ir.Graph {
	g, err := b.Build(Limits())
	if err != nil {
		panic("bench: " + err.Error())
	}
	return g
}

// ReluMulAdd is relu(a*b + c) over n elements: PyTorch's side-by-side
// elementwise workload.
func ReluMulAdd(n int) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n}, Values(1, n))
	y := b.Input(ir.Shape{n}, Values(2, n))
	z := b.Input(ir.Shape{n}, Values(3, n))
	b.Output("out", x.Mul(y).Add(z).Relu())
	return build(b)
}

// Chain is a chain of ops op nodes over two n-element inputs, cycling
// through every elementwise op with values kept in range: one fused kernel
// whose body grows with ops (the compile-time scaling workload).
func Chain(n, ops int) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n}, Values(4, n))
	y := b.Input(ir.Shape{n}, Values(5, n))
	v := x
	for i := range ops {
		switch i % 6 {
		case 0:
			v = v.Relu()
		case 1:
			v = v.Mul(y)
		case 2:
			v = v.AddScalar(0.25)
		case 3:
			v = v.Sub(y)
		case 4:
			v = v.MulScalar(0.5)
		case 5:
			v = v.Add(x)
		}
	}
	b.Output("out", v)
	return build(b)
}

// Matmul is an n×n by n×n matrix product.
func Matmul(n int) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n, n}, Values(6, n*n))
	y := b.Input(ir.Shape{n, n}, Values(7, n*n))
	b.Output("out", x.MatMul(y))
	return build(b)
}

// Sum is the sum of n elements.
func Sum(n int) *ir.Graph {
	b := ir.NewBuilder()
	b.Output("out", b.Input(ir.Shape{n}, Values(8, n)).Sum())
	return build(b)
}

// Life is one Life step of a square grid of about n cells.
func Life(n int) *ir.Graph {
	side := int(math.Sqrt(float64(n)))
	grid := Values(9, side*side)
	for i, v := range grid {
		grid[i] = 0
		if v > 0.3 {
			grid[i] = 1
		}
	}
	b := ir.NewBuilder()
	b.Output("out", b.Input(ir.Shape{side, side}, grid).Life())
	return build(b)
}

// MLP is the model of the device visits' gen_mlp.py: batch bsz, layers
// d→h→h→o, relu, squared-error loss averaged over the batch; x and the
// target uniform in [0,1), weights in [0,0.02), biases zero.
func MLP(bsz, d, h, o int) *ir.Graph {
	rng := rand.New(rand.NewPCG(0, 1))
	uniform := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32() * scale
		}
		return v
	}
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{bsz, d}, uniform(bsz*d, 1))
	t := b.NamedInput("target", ir.Shape{bsz, o}, uniform(bsz*o, 1))
	layer := func(in ir.Tensor, i, k, n int, relu bool) ir.Tensor {
		w := b.Param(fmt.Sprintf("w%d", i), ir.Shape{k, n}, uniform(k*n, 0.02))
		bias := b.Param(fmt.Sprintf("b%d", i), ir.Shape{n}, make([]float32, n))
		y := in.MatMul(w).Add(bias.Broadcast(ir.Shape{bsz, n}))
		if relu {
			y = y.Relu()
		}
		return y
	}
	y := layer(layer(layer(x, 1, d, h, true), 2, h, h, true), 3, h, o, false)
	diff := y.Sub(t)
	b.Output("loss", diff.Mul(diff).Sum().MulScalar(1/float32(bsz)))
	g, err := b.Build(Limits())
	if err != nil {
		panic(err)
	}
	return g
}

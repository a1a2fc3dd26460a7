package grad

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// build returns the graph f builds, failing the test on an error.
func build(t *testing.T, f func(b *ir.Builder)) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	f(b)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestStepText pins the step graph of small graphs as IR text: the
// backward nodes each rule adds, and the update p - lr·grad.
func TestStepText(t *testing.T) {
	tests := []struct {
		name  string
		graph func(b *ir.Builder)
		want  string
	}{
		{"square", func(b *ir.Builder) {
			x := b.Param("x", ir.Shape{2}, []float32{1, 2})
			b.Output("loss", x.Mul(x).Sum())
		}, `
%0 = input "x" param (2 values) : [2]
%1 = mul %0, %0 : [2]
%2 = sum %1 : []
%3 = full 1 : []
%4 = broadcast %3 : [2]
%5 = mul %4, %0 : [2]
%6 = mul %4, %0 : [2]
%7 = add %5, %6 : [2]
%8 = mul_scalar %7, 0.5 : [2]
%9 = sub %0, %8 : [2]
out "loss" = %2
out "x" = %9
`},
		{"bias-and-matmul", func(b *ir.Builder) {
			x := b.NamedInput("x", ir.Shape{3, 2}, make([]float32, 6))
			w := b.Param("w", ir.Shape{2, 2}, make([]float32, 4))
			c := b.Param("c", ir.Shape{2}, make([]float32, 2))
			y := x.MatMul(w).Add(c.Broadcast(ir.Shape{3, 2})).Relu()
			b.Output("y", y)
			b.Output("loss", y.Sum().MulScalar(0.25))
		}, `
%0 = input "x" (6 values) : [3,2]
%1 = input "w" param (4 values) : [2,2]
%2 = input "c" param (2 values) : [2]
%3 = matmul %0, %1 : [3,2]
%4 = broadcast %2 : [3,2]
%5 = add %3, %4 : [3,2]
%6 = relu %5 : [3,2]
%7 = sum %6 : []
%8 = mul_scalar %7, 0.25 : []
%9 = full 1 : []
%10 = mul_scalar %9, 0.25 : []
%11 = broadcast %10 : [3,2]
%12 = positive %5 : [3,2]
%13 = mul %11, %12 : [3,2]
%14 = full 1 : [1,3]
%15 = matmul %14, %13 : [1,2]
%16 = reshape %15 : [2]
%17 = transpose %0 : [2,3]
%18 = matmul %17, %13 : [2,2]
%19 = mul_scalar %18, 0.5 : [2,2]
%20 = sub %1, %19 : [2,2]
%21 = mul_scalar %16, 0.5 : [2]
%22 = sub %2, %21 : [2]
out "loss" = %8
out "y" = %6
out "w" = %20
out "c" = %22
`},
		{"unused-param-and-sub", func(b *ir.Builder) {
			x := b.Param("x", ir.Shape{2}, []float32{1, 2})
			b.Param("unused", ir.Shape{1}, []float32{3})
			y := b.NamedInput("y", ir.Shape{2}, []float32{1, 2})
			b.Output("loss", y.Sub(x.Reshape(ir.Shape{1, 2}).T().Reshape(ir.Shape{2})).Sum())
		}, `
%0 = input "x" param (2 values) : [2]
%1 = input "unused" param (1 values) : [1]
%2 = input "y" (2 values) : [2]
%3 = reshape %0 : [1,2]
%4 = transpose %3 : [2,1]
%5 = reshape %4 : [2]
%6 = sub %2, %5 : [2]
%7 = sum %6 : []
%8 = full 1 : []
%9 = broadcast %8 : [2]
%10 = mul_scalar %9, -1 : [2]
%11 = reshape %10 : [2,1]
%12 = transpose %11 : [1,2]
%13 = reshape %12 : [2]
%14 = mul_scalar %13, 0.5 : [2]
%15 = sub %0, %14 : [2]
out "loss" = %7
out "x" = %15
out "unused" = %1
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, tt.graph)
			s, err := Step(g, "loss", 0.5)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimPrefix(tt.want, "\n"), s.String()); diff != "" {
				t.Errorf("step graph (-want +got):\n%s", diff)
			}
		})
	}
}

// away returns n values of magnitude in [0.2, 1.5] with random signs: far
// from relu's kink at 0, so central differences see one linear piece.
func away(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	for i := range out {
		out[i] = 0.2 + 1.3*r.Float32()
		if r.IntN(2) == 0 {
			out[i] = -out[i]
		}
	}
	return out
}

// TestNumericGradients checks each rule against central finite
// differences of the loss, evaluated by cpuref. Every loss is a weighted
// sum of the op's result (weights w), so each output element gets its own
// upstream gradient; the functions are polynomials of degree ≤ 2 (or
// piecewise linear away from kinks), for which central differences are
// exact up to float32 rounding.
func TestNumericGradients(t *testing.T) {
	weighted := func(b *ir.Builder, y ir.Tensor) ir.Tensor {
		w := b.Input(y.Shape(), away(99, y.Shape().Len()))
		return y.Mul(w).Sum()
	}
	tests := []struct {
		name string
		loss func(b *ir.Builder, p, q ir.Tensor) ir.Tensor // p: [3,4], q: [3,4]
	}{
		{"add", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Add(q)) }},
		{"sub", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Sub(q)) }},
		{"mul", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(q)) }},
		{"mul-self", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(p)) }},
		{"scalars", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.AddScalar(0.5).SubScalar(2).MulScalar(-1.5))
		}},
		{"relu", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Relu().Mul(q)) }},
		{"positive", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Positive().Add(q)) }},
		{"transpose", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.T().Mul(q.T())) }},
		{"matmul", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.MatMul(q.T())) }},
		{"matmul-b", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, q.T().MatMul(p)) }},
		{"sum", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			s := p.Mul(q).Sum()
			return s.Mul(s)
		}},
		{"broadcast-row", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			row := p.Reshape(ir.Shape{12}) // a [12] parameter, read as a row of 5 copies
			return weighted(b, row.Broadcast(ir.Shape{5, 12}).Mul(row.Broadcast(ir.Shape{5, 12})))
		}},
		{"broadcast-scalar", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Sum().Broadcast(ir.Shape{3, 4}).Mul(q))
		}},
		{"reshape", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Reshape(ir.Shape{4, 3}).MatMul(q))
		}},
		{"div", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Div(q.Mul(q).AddScalar(1))) }},
		{"div-scalar", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.DivScalar(-0.75)) }},
		{"maximum", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Maximum(p.MulScalar(0.5)).Mul(q)) }},
		{"minimum", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Minimum(p.MulScalar(0.5)).Mul(q)) }},
		{"maximum-scalar", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.MaximumScalar(0.1).Add(q.MinimumScalar(-0.1)))
		}},
		{"neg", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Neg().Mul(q)) }},
		{"exp", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Exp()) }},
		{"log", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Maximum(p.Neg()).Log()) }},
		{"tanh", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Tanh()) }},
		{"sqrt", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(p).Sqrt().Mul(q)) }},
		{"rsqrt", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(p).AddScalar(0.5).Rsqrt()) }},
		{"fan-out", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			h := p.Mul(q).Relu()
			return weighted(b, h.Add(h.MulScalar(3)).Sub(p))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mk := func(pd, qd []float32) *ir.Graph {
				return build(t, func(b *ir.Builder) {
					p := b.Param("p", ir.Shape{3, 4}, pd)
					q := b.Param("q", ir.Shape{3, 4}, qd)
					b.Output("loss", tt.loss(b, p, q))
				})
			}
			pd, qd := away(1, 12), away(2, 12)
			g := mk(pd, qd)
			bw, grads, err := backward(g, g.Outputs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			vals := cpuref.Eval(bw.g)
			for pi, data := range [][]float32{pd, qd} {
				var analytic []float32
				if id, ok := grads[ir.NodeID(pi)]; ok {
					analytic = vals[id]
				} else {
					analytic = make([]float32, 12) // the loss does not depend on it
				}
				for j := range data {
					const h = 1.0 / 64 // exact in float32, so x±h is the intended point
					at := func(d float32) float64 {
						pp, qq := append([]float32(nil), pd...), append([]float32(nil), qd...)
						[][]float32{pp, qq}[pi][j] += d
						g := mk(pp, qq)
						return float64(cpuref.Eval(g)[g.Outputs[0].ID][0])
					}
					numeric := (at(h) - at(-h)) / (2 * h)
					if d := math.Abs(numeric - float64(analytic[j])); d > 2e-3*(1+math.Abs(numeric)) {
						t.Errorf("∂loss/∂%s[%d]: backward %v, finite differences %v", "pq"[pi:pi+1], j, analytic[j], numeric)
					}
				}
			}
		})
	}
}

// TestStepMaximumMovesTheParameter: loss = sum(maximum(w, 0)) used to be
// the case that an op without a rule silently got a zero gradient and w
// never changed; now every op has a rule (or refuses), and w moves where
// it is positive.
func TestStepMaximumMovesTheParameter(t *testing.T) {
	g := build(t, func(b *ir.Builder) {
		b.Output("loss", b.Param("w", ir.Shape{3}, []float32{-1, 2, 0.5}).MaximumScalar(0).Sum())
	})
	s, err := Step(g, "loss", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	vals := cpuref.Eval(s)
	got := vals[s.Outputs[len(s.Outputs)-1].ID]
	if want := []float32{-1, 1.75, 0.25}; !slices.Equal(got, want) {
		t.Errorf("updated w = %v, want %v", got, want)
	}
}

// TestStepErrors: the refusals a caller can act on.
func TestStepErrors(t *testing.T) {
	tests := []struct {
		name  string
		loss  string
		graph func(b *ir.Builder)
		node  int
		field string
	}{
		{"no such output", "nope", func(b *ir.Builder) {
			b.Output("loss", b.Param("x", ir.Shape{2}, []float32{1, 2}).Sum())
		}, -1, "loss"},
		{"loss not scalar", "loss", func(b *ir.Builder) {
			b.Output("loss", b.Param("x", ir.Shape{2}, []float32{1, 2}).Relu())
		}, 1, "loss"},
		{"life on the path", "loss", func(b *ir.Builder) {
			b.Output("loss", b.Param("x", ir.Shape{2, 2}, []float32{1, 0, 1, 1}).Life().Sum())
		}, 1, "op"},
		{"param named like an output", "loss", func(b *ir.Builder) {
			x := b.Param("y", ir.Shape{2}, []float32{1, 2})
			b.Output("loss", x.Sum())
			b.Output("y", x.Relu())
		}, 0, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Step(build(t, tt.graph), tt.loss, 0.1)
			e, ok := err.(*ir.Error)
			if !ok {
				t.Fatalf("got %v, want an *ir.Error", err)
			}
			got := []any{e.Code, e.Node, e.Field}
			if diff := cmp.Diff([]any{ir.CodeInvalidGraph, tt.node, tt.field}, got); diff != "" {
				t.Errorf("%v (-want +got):\n%s", err, diff)
			}
		})
	}
}

// TestLifeOffThePath: life that no parameter feeds is fine.
func TestLifeOffThePath(t *testing.T) {
	g := build(t, func(b *ir.Builder) {
		grid := b.Input(ir.Shape{2, 2}, []float32{1, 0, 1, 1}).Life()
		x := b.Param("x", ir.Shape{2, 2}, []float32{1, 2, 3, 4})
		b.Output("loss", x.Mul(grid).Sum())
	})
	if _, err := Step(g, "loss", 0.1); err != nil {
		t.Fatal(err)
	}
}

// TestStepMatchesManualUpdate: the update output is p - lr*grad, rounded
// as two float32 operations.
func TestStepMatchesManualUpdate(t *testing.T) {
	g := build(t, func(b *ir.Builder) {
		x := b.Param("x", ir.Shape{3}, []float32{0.3, -1.7, 2.9})
		b.Output("loss", x.Mul(x).Sum().MulScalar(0.1))
	})
	s, err := Step(g, "loss", 0.01)
	if err != nil {
		t.Fatal(err)
	}
	vals := cpuref.Eval(s)
	var got []float32
	for _, o := range s.Outputs {
		if o.Name == "x" {
			got = vals[o.ID]
		}
	}
	var want []float32
	for _, x := range g.Nodes[0].Data {
		gx := float32(float32(0.1)*x) + float32(float32(0.1)*x) // d(0.1·x²)/dx as the graph rounds it
		want = append(want, x-float32(float32(0.01)*gx))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("updated x (-want +got):\n%s", diff)
	}
}

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
	"github.com/gpucc/gpucc/ir/eval64"
	"github.com/gpucc/gpucc/ir/irtest"
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
%14 = sum %13 : [1,2]
%15 = reshape %14 : [2]
%16 = transpose %0 : [2,3]
%17 = matmul %16, %13 : [2,2]
%18 = mul_scalar %17, 0.5 : [2,2]
%19 = sub %1, %18 : [2,2]
%20 = mul_scalar %15, 0.5 : [2]
%21 = sub %2, %20 : [2]
out "loss" = %8
out "y" = %6
out "w" = %19
out "c" = %21
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
		{"permute", func(b *ir.Builder) {
			x := b.Param("x", ir.Shape{1, 2, 3}, []float32{1, 2, 3, 4, 5, 6})
			b.Output("loss", x.Permute(2, 0, 1).Exp().Sum())
		}, `
%0 = input "x" param (6 values) : [1,2,3]
%1 = permute %0 perm=[2,0,1] : [3,1,2]
%2 = exp %1 : [3,1,2]
%3 = sum %2 : []
%4 = full 1 : []
%5 = broadcast %4 : [3,1,2]
%6 = mul %5, %2 : [3,1,2]
%7 = permute %6 perm=[1,2,0] : [1,2,3]
%8 = mul_scalar %7, 0.5 : [1,2,3]
%9 = sub %0, %8 : [1,2,3]
out "loss" = %3
out "x" = %9
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
// from relu's kink at 0.
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

// apart returns one slice of values per shape, drawn without repetition
// from the magnitudes 0.3, 0.4, …, each jittered by at most 0.01 and given
// a random sign: every value is at least 0.17 from the kinks at 0 (relu,
// positive) and at 0.125 (maximum_scalar's scalar), at least 0.04 from the
// scalar ±1.75, and any two differ by at least 0.08, so maximum, minimum
// and max reductions have no ties within a finite difference.
func apart(seed uint64, shapes []ir.Shape) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	n := 0
	for _, s := range shapes {
		n += s.Len()
	}
	slots := r.Perm(n)
	out := make([][]float32, len(shapes))
	k := 0
	for i, s := range shapes {
		out[i] = make([]float32, s.Len())
		for j := range out[i] {
			v := 0.3 + 0.1*float32(slots[k]) + 0.02*(r.Float32()-0.5)
			if r.IntN(2) == 0 {
				v = -v
			}
			out[i][j] = v
			k++
		}
	}
	return out
}

// The float64 gradient check: h is the central difference step (a power
// of two, so x±h is exact), tol the bound on |backward - numeric| relative
// to 1 + |numeric|. With h = 2⁻¹⁷ the truncation error h²·|f‴|/6 stays
// below 1e-8 for the cases here (|f‴| up to about 10³, as for 1/q with
// |q| ≥ 0.29) and the rounding error ε·|loss|/h below 1e-9, so tol = 1e-6
// leaves two orders of margin, while a wrong rule is off by the size of
// the gradient itself. (The float32 check that this replaces needed 2e-3.)
const (
	h   = 1.0 / (1 << 17)
	tol = 1e-6
)

// weightedLoss appends loss = sum(y · w) to g, w an input of y's shape
// holding away values, so each element of y gets its own upstream
// gradient. It returns the loss node.
func weightedLoss(g *ir.Graph, y ir.NodeID) ir.NodeID {
	s := g.Nodes[y].Shape
	w := ir.NodeID(len(g.Nodes))
	g.Nodes = append(g.Nodes,
		ir.Node{Op: ir.OpInput, Shape: s, Data: away(99, s.Len())},
		ir.Node{Op: ir.OpMul, Args: []ir.NodeID{y, w}, Shape: s},
		ir.Node{Op: ir.OpSum, Args: []ir.NodeID{w + 1}, Shape: ir.Shape{}})
	return w + 2
}

// gradients returns, for every parameter of g, ∂loss/∂p twice, both in
// float64 (eval64): backward's gradient graph evaluated, and central
// finite differences of the forward graph.
func gradients(t *testing.T, g *ir.Graph, loss ir.NodeID) (analytic, numeric map[string][]float64) {
	t.Helper()
	bw, grads, err := backward(g, loss)
	if err != nil {
		t.Fatal(err)
	}
	vals := eval64.Eval(bw.g, nil)
	analytic, numeric = map[string][]float64{}, map[string][]float64{}
	for _, p := range g.Params() {
		n := g.Nodes[p.ID].Shape.Len()
		if id, ok := grads[p.ID]; ok {
			analytic[p.Name] = vals[id]
		} else {
			analytic[p.Name] = make([]float64, n) // the loss does not depend on it
		}
		x := eval64.Widen(g.Nodes[p.ID].Data)
		at := func(j int, d float64) float64 {
			xd := append([]float64(nil), x...)
			xd[j] += d
			return eval64.Eval(g, map[ir.NodeID][]float64{p.ID: xd})[loss][0]
		}
		numeric[p.Name] = make([]float64, n)
		for j := range n {
			numeric[p.Name][j] = (at(j, h) - at(j, -h)) / (2 * h)
		}
	}
	return analytic, numeric
}

// close compares gradients within tol·(1 + |numeric|).
var close = cmp.Comparer(func(a, b float64) bool {
	return math.Abs(a-b) <= tol*(1+math.Min(math.Abs(a), math.Abs(b)))
})

// mirror puts each parameter in the domain of the op that reads it: where
// the op's float64 meaning is not finite (log, sqrt, rsqrt of a negative
// value), the arguments take their magnitudes. It asks the row, so a new
// op with a restricted domain needs no entry here.
func mirror(c irtest.OpCase, args [][]float32) {
	info := c.Op.Info()
	if !info.Elementwise {
		return
	}
	for i := range args[0] {
		b := float64(c.Scalar)
		if len(args) == 2 {
			b = float64(args[1][i])
		}
		if v := info.F64(float64(args[0][i]), b); math.IsNaN(v) || math.IsInf(v, 0) {
			for _, a := range args {
				a[i] = float32(math.Abs(float64(a[i])))
			}
		}
	}
}

// TestGradientsEveryOp walks the op table: for every op with a gradient
// rule, on each of its cases (irtest.OpCases: the argument and target
// shapes its shape rule accepts, scalar forms with two scalars), the
// gradient that backward builds, evaluated in float64, matches central
// finite differences of the float64 forward evaluation within tol. A new
// row is checked without an edit here.
func TestGradientsEveryOp(t *testing.T) {
	for _, op := range ir.Ops() {
		if op.Info().Grad == nil || op.Info().Typed {
			continue // leaves, ops that refuse (TestStepErrors), typed rows (TestGradientsIndexed)
		}
		cases := irtest.OpCases(op)
		if len(cases) == 0 {
			t.Errorf("%v: has a gradient rule but no case", op)
		}
		for i, c := range cases {
			t.Run(c.String(), func(t *testing.T) {
				args := apart(uint64(100*int(op)+i), c.Args)
				mirror(c, args)
				g := c.Graph(args...)
				analytic, numeric := gradients(t, g, weightedLoss(g, g.Outputs[0].ID))
				if diff := cmp.Diff(numeric, analytic, close); diff != "" {
					t.Errorf("∂loss/∂param (-finite differences +backward):\n%s\ngraph:\n%s", diff, g)
				}
			})
		}
	}
}

// TestGradientsComposed checks, in the same way, graphs where gradients
// accumulate (fan-out, a parameter used twice), chain through several
// rules, through broadcasts of parameters and through the Builder's
// composites.
func TestGradientsComposed(t *testing.T) {
	weighted := func(b *ir.Builder, y ir.Tensor) ir.Tensor {
		w := b.Input(y.Shape(), away(99, y.Shape().Len()))
		return y.Mul(w).Sum()
	}
	tests := []struct {
		name string
		loss func(b *ir.Builder, p, q ir.Tensor) ir.Tensor // p: [3,4], q: [3,4]
	}{
		{"mul-self", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(p)) }},
		{"chain", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.AddScalar(0.5).SubScalar(2).MulScalar(-1.5).Tanh().Exp())
		}},
		{"relu-mul", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Relu().Mul(q)) }},
		{"transposes", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.T().Mul(q.T())) }},
		{"matmul", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.MatMul(q.T())) }},
		{"matmul-transposed", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, q.T().MatMul(p)) }},
		// Batched: b broadcast over a's batch (its gradient sums over it),
		// and both operands batched, one through a batched transpose.
		{"matmul-batched-broadcast", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Reshape(ir.Shape{3, 4, 1}).MatMul(q.Reshape(ir.Shape{1, 1, 12})))
		}},
		{"matmul-batched-transposed", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Reshape(ir.Shape{2, 1, 3, 2}).T().MatMul(q.Reshape(ir.Shape{1, 2, 3, 2})))
		}},
		{"sum-squared", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
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
		// numpy broadcasts: a column ([3,1], Q = 1), a middle run
		// ([3,1,4] to [3,2,4], P and Q > 1), and both sides of a binary op.
		{"broadcast-column", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			col := p.Reshape(ir.Shape{12, 1})
			return weighted(b, col.Broadcast(ir.Shape{12, 5}).Mul(col))
		}},
		{"broadcast-middle", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			x := p.Reshape(ir.Shape{3, 1, 4})
			return weighted(b, x.Broadcast(ir.Shape{2, 3, 2, 4}).Mul(q.Reshape(ir.Shape{3, 1, 4})))
		}},
		{"broadcast-both", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Reshape(ir.Shape{12, 1}).Mul(q.Reshape(ir.Shape{1, 12})).Add(p.Reshape(ir.Shape{12})))
		}},
		{"bias-row", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, q.Add(p.Reshape(ir.Shape{12}).Sum().Broadcast(ir.Shape{4})))
		}},
		{"reshape-matmul", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Reshape(ir.Shape{4, 3}).MatMul(q))
		}},
		{"div-of-square", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Div(q.Mul(q).AddScalar(1))) }},
		{"maximum-of-self", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Maximum(p.MulScalar(0.5)).Mul(q)) }},
		{"minimum-of-self", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Minimum(p.MulScalar(0.5)).Mul(q)) }},
		{"log-abs", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Maximum(p.Neg()).Log()) }},
		{"sqrt-square", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(p).Sqrt().Mul(q)) }},
		{"rsqrt-norm", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.Mul(p.Mul(p).Sum().AddScalar(0.5).Rsqrt().Broadcast(ir.Shape{3, 4})))
		}},
		{"outer-product", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { // numpy: [12,1] * [1,12]
			return weighted(b, p.Reshape(ir.Shape{12, 1}).Mul(q.Reshape(ir.Shape{1, 12})))
		}},
		{"numpy-both-operands", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { // [3,1,4] - [1,3,4]
			return weighted(b, p.Reshape(ir.Shape{3, 1, 4}).Sub(q.Reshape(ir.Shape{1, 3, 4})).Tanh())
		}},
		{"gelu", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.GELU().Mul(q)) }},
		// Reductions over leading, trailing and all axes.
		{"sum-axes", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(q).SumAxes(false, 0)) }},
		{"sum-axes-keepdims", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			return weighted(b, p.SumAxes(true, 0).Mul(p.SumAxes(false))).Mul(p.SumAxes(true).Reshape(nil))
		}},
		{"max", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return p.Mul(q).MaxAxes(false).MulScalar(3) }},
		{"max-axes", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(q).MaxAxes(true, 0)) }},
		{"sum-trailing-axis", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(q).SumAxes(true, 1)) }},
		{"max-trailing-axis", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor { return weighted(b, p.Mul(q).MaxAxes(false, -1)) }},
		{"permutes", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			x := p.Reshape(ir.Shape{2, 3, 2}).Permute(2, 0, 1) // [2,2,3]
			return weighted(b, x.Mul(q.Reshape(ir.Shape{2, 2, 3})).Permute(1, 2, 0).Exp())
		}},
		{"fan-out", func(b *ir.Builder, p, q ir.Tensor) ir.Tensor {
			h := p.Mul(q).Relu()
			return weighted(b, h.Add(h.MulScalar(3)).Sub(p))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := apart(7, []ir.Shape{{3, 4}, {3, 4}})
			g := build(t, func(b *ir.Builder) {
				p := b.Param("p", ir.Shape{3, 4}, data[0])
				q := b.Param("q", ir.Shape{3, 4}, data[1])
				b.Output("loss", tt.loss(b, p, q))
			})
			analytic, numeric := gradients(t, g, g.Outputs[0].ID)
			if diff := cmp.Diff(numeric, analytic, close); diff != "" {
				t.Errorf("∂loss/∂param (-finite differences +backward):\n%s", diff)
			}
		})
	}
}

// TestGradientCheckFails: the check sees a relative error of 2⁻¹², which
// the float32 check it replaced (2e-3) let through.
func TestGradientCheckFails(t *testing.T) {
	c := irtest.OpCases(ir.OpExp)[0]
	g := c.Graph(apart(1, c.Args)...)
	analytic, numeric := gradients(t, g, weightedLoss(g, g.Outputs[0].ID))
	for _, v := range analytic {
		for j := range v {
			v[j] *= 1 + 1.0/(1<<12)
		}
	}
	if cmp.Equal(numeric, analytic, close) {
		t.Errorf("a gradient off by 2⁻¹² passed: %v against %v", analytic, numeric)
	}
}

// TestMaxGradientSplitsTies: the gradient of max goes to the elements
// equal to it, split evenly among ties (PyTorch's amax), -0 and +0 tying.
func TestMaxGradientSplitsTies(t *testing.T) {
	nz := float32(math.Copysign(0, -1))
	g := build(t, func(b *ir.Builder) {
		p := b.Param("p", ir.Shape{2, 3}, []float32{1, 3, 3, 3, -2, 3})
		z := b.Param("z", ir.Shape{2}, []float32{nz, 0})
		b.Output("loss", p.MaxAxes(true, 0).Sum().Add(p.MaxAxes(false).MulScalar(4)).Add(z.MaxAxes(false)))
	})
	bw, grads, err := backward(g, g.Outputs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	vals := cpuref.Eval(bw.g)
	// column maxes 3, 3, 3 (ties in columns 0 and 2), whole max 3 over four ties.
	if diff := cmp.Diff([]float32{0, 1 + 1, 0.5 + 1, 1 + 1, 0, 0.5 + 1}, vals[grads[0]]); diff != "" {
		t.Errorf("∂loss/∂p (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float32{0.5, 0.5}, vals[grads[1]]); diff != "" {
		t.Errorf("∂loss/∂z (-want +got):\n%s", diff)
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

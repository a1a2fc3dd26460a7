package passes

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// kinds counts a program's kernels by kind.
func kinds(p *ir.Program) map[string]int {
	n := map[string]int{}
	for _, k := range p.Kernels {
		n[k.Kind.String()]++
	}
	return n
}

// TestRowsKernelCounts checks the rows rule on the composites: each is
// one rows kernel over rows of 2..RowLeaves leaves, and unfused (today's
// kernels) beyond; cross-entropy is a rows kernel and the whole sum.
func TestRowsKernelCounts(t *testing.T) {
	type want map[string]int
	tests := []struct {
		name  string
		shape ir.Shape
		build func(x ir.Tensor) ir.Tensor
		want  want
	}{
		{"softmax", ir.Shape{8, 1024}, func(x ir.Tensor) ir.Tensor { return x.Softmax(1) }, want{"rows": 1}},
		{"log_softmax", ir.Shape{8, 1024}, func(x ir.Tensor) ir.Tensor { return x.LogSoftmax(1) }, want{"rows": 1}},
		{"layer_norm", ir.Shape{8, 1024}, func(x ir.Tensor) ir.Tensor { return x.LayerNorm(1, 1e-5) }, want{"rows": 1}},
		{"mean", ir.Shape{8, 1024}, func(x ir.Tensor) ir.Tensor { return x.Mean(false, 1) }, want{"sum": 1}},
		{"variance", ir.Shape{8, 1024}, func(x ir.Tensor) ir.Tensor { return x.Variance(true, 1) }, want{"rows": 1}},
		{"softmax rank 3", ir.Shape{2, 3, 300}, func(x ir.Tensor) ir.Tensor { return x.Softmax(-1) }, want{"rows": 1}},
		{"softmax one row", ir.Shape{1, 7}, func(x ir.Tensor) ir.Tensor { return x.Softmax(-1) }, want{"rows": 1}},
		{"softmax longest row", ir.Shape{2, RowLeaves}, func(x ir.Tensor) ir.Tensor { return x.Softmax(-1) }, want{"rows": 1}},
		{"softmax row too long", ir.Shape{2, RowLeaves + 1}, func(x ir.Tensor) ir.Tensor { return x.Softmax(-1) },
			want{"sum": 2, "elementwise": 2}},
		{"softmax rows of 1", ir.Shape{5, 1}, func(x ir.Tensor) ir.Tensor { return x.Softmax(-1) }, want{"sum": 2}},
		{"softmax over the first axis", ir.Shape{6, 5}, func(x ir.Tensor) ir.Tensor { return x.Softmax(0) },
			want{"sum": 2, "elementwise": 2}},
		{"user exp/sum/div", ir.Shape{4, 33}, func(x ir.Tensor) ir.Tensor { e := x.Exp(); return e.Div(e.SumAxes(true, 1)) }, want{"rows": 1}},
		{"cross_entropy", ir.Shape{16, 10}, func(x ir.Tensor) ir.Tensor { return x.CrossEntropy(x.MulScalar(0)) }, want{"rows": 1, "sum": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, func(b *ir.Builder) {
				x := b.Input(tc.shape, irtest.Values(7, tc.shape.Len(), 10))
				b.Output("y", tc.build(x))
			}, Options{})
			if diff := cmp.Diff(map[string]int(tc.want), kinds(p)); diff != "" {
				t.Errorf("kernels (-want +got):\n%s\n%s", diff, p)
			}
			checkUnfused(t, p)
		})
	}
}

// checkUnfused checks that p's unfused form (what GLSL runs) is a valid
// program with p's results, bit for bit.
func checkUnfused(t *testing.T, p *ir.Program) {
	t.Helper()
	u := p.Unfused()
	if err := ir.ValidateProgram(u); err != nil {
		t.Fatalf("unfused program: %v\n%s", err, u)
	}
	if diff := cmp.Diff(bitsOf(cpuref.RunProgram(p)), bitsOf(cpuref.RunProgram(u))); diff != "" {
		t.Errorf("unfused program differs (-fused +unfused):\n%s", diff)
	}
}

func bitsOf(m map[string][]float32) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		for _, f := range v {
			out[k] = append(out[k], fmt.Sprintf("%08x", math.Float32bits(f)))
		}
	}
	return out
}

// TestRowsSuite compiles the rows cases and checks fused, unfused and
// reference bits.
func TestRowsSuite(t *testing.T) {
	for _, c := range irtest.Rows() {
		t.Run(c.Name, func(t *testing.T) {
			p, _, err := Compile(c.Graph, Options{})
			if err != nil {
				t.Fatal(err)
			}
			vals := cpuref.Eval(c.Graph)
			want := map[string][]float32{}
			for _, o := range c.Graph.Outputs {
				want[o.Name] = vals[o.ID]
			}
			if diff := cmp.Diff(bitsOf(want), bitsOf(cpuref.RunProgram(p.Program()))); diff != "" {
				t.Errorf("program differs from cpuref.Eval (-want +got):\n%s\n%s", diff, p)
			}
			checkUnfused(t, p.Program())
		})
	}
}

// TestRowsRandom runs the rows rule over random compositions of exp,
// sum, max, div and broadcasts back over rows: every reduction over the
// rows whose operands and consumers are elementwise over the same rows
// ends in one rows kernel with them, and the bits are cpuref's.
func TestRowsRandom(t *testing.T) {
	for seed := range 40 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g, chain := randomRows(uint64(seed))
			p, _, err := Compile(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			vals := cpuref.Eval(g)
			want := map[string][]float32{}
			for _, o := range g.Outputs {
				want[o.Name] = vals[o.ID]
			}
			if diff := cmp.Diff(bitsOf(want), bitsOf(cpuref.RunProgram(p.Program()))); diff != "" {
				t.Errorf("program differs from cpuref.Eval (-want +got):\n%s\n%s", diff, p)
			}
			checkUnfused(t, p.Program())
			// The rule: one connected chain of row work over rows of 2..RowLeaves
			// leaves with one output is one kernel.
			if got := len(p.Program().Kernels); got != 1 {
				t.Errorf("%s: %d kernels, want 1:\n%s", chain, got, p)
			}
		})
	}
}

// randomRows builds a random chain over x [r,c]: each step applies exp,
// a scalar op, a product with x, or a reduction over the rows (sum or
// max, keepdims or reshaped back) broadcast back into a sub, add or div.
func randomRows(seed uint64) (*ir.Graph, string) {
	r := irtest.Values(seed, 64, 1)
	pick := func(i, n int) int { return int(math.Float32bits(r[i%len(r)])>>3) % n }
	rows, cols := 1+pick(0, 6), 2+pick(1, 300)
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{rows, cols}, irtest.Values(seed+1, rows*cols, 3))
	v := x
	var steps []string
	for i := 0; i < 2+pick(2, 5); i++ {
		switch pick(3+i, 6) {
		case 0:
			v, steps = v.MulScalar(0.5).Exp(), append(steps, "exp")
		case 1:
			v, steps = v.Mul(x), append(steps, "mul x")
		case 2:
			v, steps = v.Sub(v.MaxAxes(true, 1)), append(steps, "sub max")
		case 3:
			v, steps = v.Div(v.Mul(v).SumAxes(true, 1).AddScalar(1)), append(steps, "div sum sq")
		case 4:
			s := v.SumAxes(false, 1).Reshape(ir.Shape{rows, 1}).Broadcast(ir.Shape{rows, cols})
			v, steps = v.Add(s), append(steps, "add sum reshaped")
		default:
			v, steps = v.Sub(v.MaxAxes(true, 1).Add(x.SumAxes(true, 1))), append(steps, "sub max+sum(x)")
		}
	}
	if !strings.Contains(strings.Join(steps, ""), "max") && !strings.Contains(strings.Join(steps, ""), "sum") { // no reduction: add one
		v, steps = v.Div(v.SumAxes(true, 1)), append(steps, "div sum")
	}
	b.Output("y", v)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g, fmt.Sprintf("[%d,%d] %s", rows, cols, strings.Join(steps, ", "))
}

// TestRowsSiblings checks scope 3's multi-output rule: reductions over the
// same rows that read the same input become one pass, their outputs
// several stores of one rows kernel; over other rows they stay apart.
func TestRowsSiblings(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *ir.Builder, x ir.Tensor)
		want  map[string]int
	}{
		{"sum and sum of squares", func(b *ir.Builder, x ir.Tensor) {
			b.Output("sum", x.SumAxes(true, 1))
			b.Output("sumsq", x.Mul(x).SumAxes(false, 1))
		}, map[string]int{"rows": 1}},
		{"softmax and layernorm", func(b *ir.Builder, x ir.Tensor) {
			b.Output("softmax", x.Softmax(1))
			b.Output("layer_norm", x.LayerNorm(1, 1e-5))
		}, map[string]int{"rows": 1}},
		{"over other rows", func(b *ir.Builder, x ir.Tensor) {
			b.Output("rows", x.SumAxes(true, 1))
			b.Output("columns", x.SumAxes(true, 0))
		}, map[string]int{"sum": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, func(b *ir.Builder) {
				tc.build(b, b.Input(ir.Shape{6, 300}, irtest.Values(3, 1800, 10)))
			}, Options{})
			if diff := cmp.Diff(tc.want, kinds(p)); diff != "" {
				t.Errorf("kernels (-want +got):\n%s\n%s", diff, p)
			}
			checkUnfused(t, p)
		})
	}
}

// TestAttentionKernels checks softmax(q·kᵀ·s)·v at issue 21's shapes:
// three kernels, the scale in the first matmul's epilogue, the softmax one
// rows kernel between the matmuls (the layernorm after it, as in the
// benchmark's block, is a fourth: a matmul's epilogue does not reduce).
func TestAttentionKernels(t *testing.T) {
	for _, tc := range []struct {
		seq   int
		norm  bool
		kinds []string
	}{
		{256, false, []string{"matmul", "rows", "matmul"}},
		{2048, false, []string{"matmul", "rows", "matmul"}},
		{256, true, []string{"matmul", "rows", "matmul", "rows"}},
	} {
		t.Run(fmt.Sprintf("seq %d, layernorm %v", tc.seq, tc.norm), func(t *testing.T) {
			const d = 64
			lim := ir.Limits{MaxElements: 1 << 24, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40}
			b := ir.NewBuilder()
			in := func() ir.Tensor { return b.Input(ir.Shape{tc.seq, d}, make([]float32, tc.seq*d)) }
			q, k, v := in(), in(), in()
			y := q.MatMul(k.T()).MulScalar(0.125).Softmax(1).MatMul(v)
			if tc.norm {
				y = y.LayerNorm(1, 1e-5)
			}
			b.Output("y", y)
			g, err := b.Build(lim)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := Compile(g, Options{Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range p.Program().Kernels {
				got = append(got, k.Kind.String())
			}
			if diff := cmp.Diff(tc.kinds, got); diff != "" {
				t.Errorf("kernels (-want +got):\n%s\n%s", diff, p)
			}
			if s := p.Program().Kernels[0].Body; len(s) < 2 || s[len(s)-1].Op != ir.OpMulScalar {
				t.Errorf("the scale is not the first matmul's epilogue:\n%s", p)
			}
		})
	}
}

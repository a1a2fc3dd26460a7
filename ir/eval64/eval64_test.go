package eval64_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/eval64"
	"github.com/gpucc/gpucc/ir/irtest"
)

// ints returns n small integers in [-4, 4]: float32 add, sub, mul, sums
// and matmuls of them are exact, so cpuref's values are the float64 ones.
func ints(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 17))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.IntN(9) - 4)
	}
	return out
}

// TestEveryOpMatchesCpuref walks the op table: every op but the leaves has
// cases (irtest.OpCases), and on small integers eval64 gives cpuref's
// value for each, exactly where float32 is exact and within 2 ULP for the
// elementwise ops that round (exp, log, tanh, rsqrt, div by a non-power of
// two; TestOpMeaning in package ir measures those over all of float32) and
// for resize2d, whose linear weights (1/3, …) are float32 roundings in
// cpuref and exact in eval64, and within 16 ULP for attention, whose
// softmax rounds its exps, sums and divisions.
func TestEveryOpMatchesCpuref(t *testing.T) {
	for _, op := range ir.Ops() {
		cases := irtest.OpCases(op)
		if op.Info().Args > 0 && len(cases) == 0 && !op.Info().Typed { // typed rows: cpuref's typed tests
			t.Errorf("%v: no case: its shape rule accepts none of irtest's candidate shapes", op)
		}
		for i, c := range cases {
			t.Run(c.String(), func(t *testing.T) {
				var args [][]float32
				for k, s := range c.Args {
					args = append(args, ints(uint64(100*int(op)+10*i+k), s.Len()))
				}
				g := c.Graph(args...)
				y := g.Outputs[0].ID
				want, got := cpuref.Eval(g)[y], eval64.Eval(g, nil)[y]
				for k := range want {
					w, v := want[k], got[k]
					if (op.Info().Elementwise || op == ir.OpResize2D || op == ir.OpAttention) && float32(v) != w && !(w != w && v != v) {
						// rounded ops: within 2 ULP of the float64 value
						// (attention: 16, its exps and divisions rounded
						// and summed over a few keys)
						n := 2.0
						switch op {
						case ir.OpAttention:
							n = 16
						case ir.OpPow: // repeated squaring: within 2 + |b| ULP, |b| ≤ 64 (cpuref's doc)
							n = 66
						}
						if ulp := float64(math.Nextafter32(w, float32(math.Inf(1))) - w); math.Abs(float64(w)-v) > n*ulp {
							t.Errorf("y[%d] = %v, cpuref %v", k, v, w)
						}
						continue
					}
					if float32(v) != w && !(w != w && v != v) {
						t.Errorf("y[%d] = %v, cpuref %v", k, v, w)
					}
				}
			})
		}
	}
}

// TestSuite: every graph of irtest.Suite (which uses every op) evaluates.
func TestSuite(t *testing.T) {
	for _, c := range irtest.Suite() {
		vals := eval64.Eval(c.Graph, nil)
		for i, n := range c.Graph.Nodes {
			if len(vals[i]) != n.Shape.Len() {
				t.Errorf("%s: node %d (%v) has %d values, want %d", c.Name, i, n.Op, len(vals[i]), n.Shape.Len())
			}
		}
	}
}

// TestStructure pins the structural ops on hand-checked values, and
// inputs given to Eval in float64.
func TestStructure(t *testing.T) {
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	row := b.NamedInput("row", ir.Shape{3}, []float32{10, 20, 30})
	b.Output("t", x.T())
	b.Output("mm", x.MatMul(x.T()))
	b.Output("bias", x.Add(row))
	b.Output("sum", x.Sum())
	b.Output("flat", x.T().Reshape(ir.Shape{6}))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	third := 1.0 / 3
	vals := eval64.Eval(g, map[ir.NodeID][]float64{row.ID(): {third, 0, 0}})
	got := map[string][]float64{}
	for _, o := range g.Outputs {
		got[o.Name] = vals[o.ID]
	}
	want := map[string][]float64{
		"t":    {1, 4, 2, 5, 3, 6},
		"mm":   {14, 32, 32, 77},
		"bias": {1 + third, 2, 3, 4 + third, 5, 6},
		"sum":  {21},
		"flat": {1, 4, 2, 5, 3, 6},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

package grad

import (
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestGradientsIndexed: gather's and gather_elements' rules (ir/scatter.go)
// give each element of the data the sum, from +0 in the outputs'
// row-major order, of the upstream gradients of the outputs that read it
// (an embedding's gradient: repeated ids add up, a negative id counts from
// the end, rows no id reads get 0), the indices none. The step's update
// p - 1·∂loss/∂p is compared, bit for bit, with that sum computed here in
// float32 over the reference's element map (ir.GatherSources,
// ir.AlongAxisSources), for the embedding rows, a gather along the last
// axis and gather_elements.
func TestGradientsIndexed(t *testing.T) {
	for _, c := range []struct {
		name  string
		data  ir.Shape
		idx   ir.Shape
		ids   []int64
		axis  int
		along bool // gather_elements
	}{
		{"embedding", ir.Shape{5, 3}, ir.Shape{2, 3}, []int64{1, -1, 1, 0, 4, 1}, 0, false},
		{"columns", ir.Shape{2, 4}, ir.Shape{3}, []int64{3, -1, 0}, -1, false},
		{"elements", ir.Shape{2, 3}, ir.Shape{2, 2}, []int64{0, 0, 2, -1}, 1, true},
	} {
		b := ir.NewBuilder()
		vals := make([]float32, c.data.Len())
		for k := range vals {
			vals[k] = float32(k%7) - 2.5
		}
		x := b.Param("x", c.data, vals)
		i := b.TypedInput("i", ir.I64, c.idx, nil, c.ids)
		var y ir.Tensor
		if c.along {
			y = x.GatherElements(i, c.axis)
		} else {
			y = x.Gather(i, c.axis)
		}
		w := make([]float32, y.Shape().Len())
		for k := range w {
			w[k] = float32(math.Ldexp(float64(k%5)-1.75, -k%3)) // exact sums of a few
		}
		b.Output("loss", y.Mul(b.Input(y.Shape(), w)).Sum())
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		step, err := Step(g, "loss", 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out, err := cpuref.EvalTyped(step)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := len(c.data)
		ax := c.axis
		if ax < 0 {
			ax += r
		}
		wrapped := make([]int64, len(c.ids))
		for k, v := range c.ids {
			if v < 0 {
				v += int64(c.data[ax])
			}
			wrapped[k] = v
		}
		var src []int
		if c.along {
			src = ir.AlongAxisSources(c.data, c.idx, ax, wrapped)
		} else {
			src = ir.GatherSources(c.data, y.Shape(), ax, wrapped)
		}
		grad := make([]float32, len(vals))
		for k, s := range src { // from +0, in the outputs' order
			grad[s] += w[k]
		}
		want := make([]float32, len(vals))
		for k := range want {
			want[k] = vals[k] - grad[k]
		}
		var got []float32
		for _, o := range step.Outputs {
			if o.Name == "x" {
				got = out[o.ID].F
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: x - ∂loss/∂x = %v, want %v (gradient %v)", c.name, got, want, grad)
		}
	}
}

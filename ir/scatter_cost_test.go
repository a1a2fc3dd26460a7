package ir_test

import (
	"errors"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestScatterCostIsTheGPUs: a scatter's estimated operations are what
// the GPU kernels do at most: under a reduction, an element aimed at twice
// is folded from every index row (or every index along the axis) that may
// aim at it, so the seed's operation limit refuses a scatter-add whose
// GPU work may pass it: 2048 rows into [4096, 64] are 2.7e8 with the
// copy and the updates, 256 rows 4.6e6.
func TestScatterCostIsTheGPUs(t *testing.T) {
	for _, c := range []struct {
		name string
		rows int
		ok   bool
	}{{"under", 256, true}, {"over", 2048, false}} {
		for _, op := range []string{"scatter_nd", "scatter_elements"} {
			t.Run(op+"/"+c.name, func(t *testing.T) {
				b := ir.NewBuilder()
				data := b.Full(ir.Shape{4096, 64}, 0)
				var y ir.Tensor
				if op == "scatter_nd" {
					idx := b.TypedInput("", ir.I64, ir.Shape{c.rows, 1}, nil, make([]int64, c.rows))
					y = data.ScatterND(idx, b.Full(ir.Shape{c.rows, 64}, 1), ir.ScatterAdd)
				} else {
					idx := b.TypedInput("", ir.I64, ir.Shape{c.rows, 64}, nil, make([]int64, c.rows*64))
					y = data.ScatterElements(idx, b.Full(ir.Shape{c.rows, 64}, 1), 0, ir.ScatterAdd)
				}
				b.Output("y", y)
				_, err := b.Build(ir.Limits{})
				if c.ok && err != nil {
					t.Fatalf("%d rows: %v", c.rows, err)
				}
				if !c.ok && !errors.Is(err, ir.ErrLimitExceeded) {
					t.Fatalf("%d rows: %v, want limit_exceeded (MaxOps)", c.rows, err)
				}
			})
		}
	}
}

// TestScatterCostLinear: a scatter of reduction none costs the output plus
// the updates, the linear passes every backend but WebGL2 runs (and
// WebGL2 refuses past ir.MaxGLSLScatterChecks): 2048 rows into [4096, 64]
// (5.4e8 checks for the output-side kernel) are 3.9e5, as the host's loop;
// under add they are 2.7e8, over the seed's limit.
func TestScatterCostLinear(t *testing.T) {
	for _, c := range []struct {
		red  ir.ScatterReduction
		want int64
	}{{ir.ScatterNone, 4096*64 + 2048*64}, {ir.ScatterAdd, 4096*64 + 2048*64 + 2048*64*2048}} {
		b := ir.NewBuilder()
		idx := b.TypedInput("", ir.I64, ir.Shape{2048, 1}, nil, make([]int64, 2048))
		b.Output("y", b.Full(ir.Shape{4096, 64}, 0).ScatterND(idx, b.Full(ir.Shape{2048, 64}, 1), c.red))
		g, err := b.Build(ir.Limits{MaxOps: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		n := &g.Nodes[len(g.Nodes)-1]
		if got := ir.EstimateOps(g, n); got != c.want {
			t.Errorf("%v: %d operations, want %d", c.red, got, c.want)
		}
		b = ir.NewBuilder()
		eidx := b.TypedInput("", ir.I64, ir.Shape{2048, 64}, nil, make([]int64, 2048*64))
		b.Output("y", b.Full(ir.Shape{4096, 64}, 0).ScatterElements(eidx, b.Full(ir.Shape{2048, 64}, 1), 0, c.red))
		if g, err = b.Build(ir.Limits{MaxOps: 1 << 40}); err != nil {
			t.Fatal(err)
		}
		if got := ir.EstimateOps(g, &g.Nodes[len(g.Nodes)-1]); got != c.want {
			t.Errorf("elements %v: %d operations, want %d", c.red, got, c.want)
		}
	}
}

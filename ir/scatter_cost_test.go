package ir_test

import (
	"errors"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestScatterCostIsTheGPUs: a scatter's estimated operations are what
// the GPU kernels do, each output element checking every index row (or
// every index along the axis), so the seed's operation limit refuses a
// scatter whose GPU work is past it: 2048 rows into [4096, 64] are 5.4e8
// checks, which the host's output-plus-updates count (3.9e5) let through.
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

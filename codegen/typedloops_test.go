package codegen

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestTypedReduceLoopCost: the cost formula is the loops of typedReduce's
// serial forms counted trip by trip (every entry into a loop of n trips
// n+1), for every leaf count to 4096 and at each dtype's bound; and each
// dtype's TypedSerialLeaves is the last leaf count within ir.LoopBudget.
func TestTypedReduceLoopCost(t *testing.T) {
	count := func(leaves int, float bool) int {
		c := 0
		if !float { // acc = leaf 0; for (r = 1; r < n; r++)
			for r := 1; ; r++ {
				c++
				if r >= leaves {
					break
				}
			}
			return c
		}
		for r := 0; ; r++ { // for (r = 0; r < n; r++) { for (c = r; (c & 1) == 1; c >>= 1) }
			c++
			if r >= leaves {
				break
			}
			for x := r; ; x >>= 1 {
				c++
				if x&1 != 1 {
					break
				}
			}
		}
		return c
	}
	types := []ir.DType{ir.F32, ir.F16, ir.BF16, ir.I32, ir.I64, ir.U8, ir.I8, ir.U32, ir.Bool}
	for _, dt := range types {
		s := TypedSerialLeaves(dt, dt)
		for _, n := range []int{1, 2, 3, 7, 8, 1000, 4095, 4096, s - 1, s, s + 1} {
			if got, want := TypedReduceLoopCost(n, dt, dt), typedPerWord(dt)*count(n, dt.IsFloat()); got != want {
				t.Errorf("%v over %d leaves: cost %d, the loops run %d", dt, n, got, want)
			}
		}
		if TypedReduceLoopCost(s, dt, dt) > ir.LoopBudget || TypedReduceLoopCost(s+1, dt, dt) <= ir.LoopBudget {
			t.Errorf("%v: TypedSerialLeaves %d is not the last leaf count within %d (%d, %d)", dt, s, ir.LoopBudget,
				TypedReduceLoopCost(s, dt, dt), TypedReduceLoopCost(s+1, dt, dt))
		}
	}
	for _, c := range []struct {
		dt ir.DType
		n  int
	}{{ir.F32, 21847}, {ir.F16, 10924}, {ir.BF16, 10924}, {ir.I32, 65535}, {ir.I64, 65535}, {ir.U8, 16383}} {
		if s := TypedSerialLeaves(c.dt, c.dt); s != c.n {
			t.Errorf("%v: TypedSerialLeaves %d, its doc says %d", c.dt, s, c.n)
		}
	}
}

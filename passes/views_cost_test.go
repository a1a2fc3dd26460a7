package passes

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestSinkCost shows the cost model's decisions (sinkPays): for each
// graph, whether the broadcast of op's result sinks through op, so that op
// runs over the broadcast shape, on a CPU target (no dispatch to save) and
// on a workgroup backend (a dispatch saved where op would be a kernel of
// its own).
func TestSinkCost(t *testing.T) {
	gpu := Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384}
	// standalone: y = x * broadcast(op(s)), s an input of shape small.
	standalone := func(op ir.Op, small, big ir.Shape) func(b *ir.Builder) {
		return func(b *ir.Builder) {
			s := b.Input(small, seq(small.Len(), 0.01))
			x := b.Input(big, seq(big.Len(), 0.02))
			b.Output("y", x.Mul(s.Apply(op).Broadcast(big)))
		}
	}
	// rowwise: y = x * broadcast(op(rowsum(x))): op is the sum's epilogue.
	rowwise := func(op ir.Op, big ir.Shape) func(b *ir.Builder) {
		return func(b *ir.Builder) {
			x := b.Input(big, seq(big.Len(), 0.02))
			b.Output("y", x.Mul(x.SumAxes(true, 1).Apply(op).Broadcast(big)))
		}
	}
	cases := []struct {
		name     string
		op       ir.Op
		graph    func(b *ir.Builder)
		cpu, gpu bool // sunk
	}{
		// 1·(t−s) against 16·(t+8s): a cheap op always sinks.
		{"relu [1024,1] to [1024,1024]", ir.OpRelu, standalone(ir.OpRelu, ir.Shape{1024, 1}, ir.Shape{1024, 1024}), true, true},
		// exp, 63 per element, into 8 times its elements: 1764 > 1024 on
		// a CPU; a dispatch saved pays for it on a GPU.
		{"exp [4,1] to [4,8]", ir.OpExp, standalone(ir.OpExp, ir.Shape{4, 1}, ir.Shape{4, 8}), false, true},
		// into twice its elements: 504 ≤ 1280.
		{"exp [8,1] to [8,2]", ir.OpExp, standalone(ir.OpExp, ir.Shape{8, 1}, ir.Shape{8, 2}), true, true},
		// exp of a row sum is the sum's epilogue: no dispatch to save, and
		// 63·(65536−64) > 16·(65536+512).
		{"exp of row sums [64,1] to [64,1024]", ir.OpExp, rowwise(ir.OpExp, ir.Shape{64, 1024}), false, false},
		// the same exp of an input saves a dispatch on a GPU: 4.1M ≤ 17.8M.
		{"exp of an input [64,1] to [64,1024]", ir.OpExp, standalone(ir.OpExp, ir.Shape{64, 1}, ir.Shape{64, 1024}), false, true},
		// sqrt, 341 per element, over a million: 357M > 33.7M even so.
		{"sqrt [1024,1] to [1024,1024]", ir.OpSqrt, standalone(ir.OpSqrt, ir.Shape{1024, 1}, ir.Shape{1024, 1024}), false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, o := range []struct {
				name string
				opts Options
				want bool
			}{{"cpu", Options{}, c.cpu}, {"gpu", gpu, c.gpu}} {
				b := ir.NewBuilder()
				c.graph(b)
				g, err := b.Build(ir.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				st := &State{Graph: g.Clone(), Options: o.opts, Origin: make([]ir.NodeID, len(g.Nodes))}
				for _, p := range Pipeline {
					if p.Lowers {
						break
					}
					if err := p.Run(st); err != nil {
						t.Fatal(err)
					}
				}
				sunk, found := false, false
				for _, n := range st.Graph.Nodes {
					if n.Op == c.op {
						found, sunk = true, n.Shape[len(n.Shape)-1] > 1 // [rows,1] before
					}
				}
				if !found {
					t.Fatalf("%s: no %s node after the views pass:\n%s", o.name, c.op.Info().Name, st.Graph)
				}
				if sunk != o.want {
					t.Errorf("%s: sunk %v, want %v:\n%s", o.name, sunk, o.want, st.Graph)
				}
			}
		})
	}
}

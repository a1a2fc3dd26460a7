package passes

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestRandomRows checks the rows rule on random compositions of exp, sum,
// max, div and broadcasts (irtest.RandomRows): each is one kernel, a rows
// kernel when it reduces and feeds the reduction back, whose results (the
// fused body's meaning, cpuref.RunProgram) are the graph's by cpuref, bit
// for bit, and whose unfused form (what GLSL runs) is too.
func TestRandomRows(t *testing.T) {
	shapes := []ir.Shape{{3, 13}, {1, 7}, {4, 2}, {2, 256}, {2, 509}, {2, 3, 37}, {3, 1, 5}, {1, RowLeaves}}
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for _, shape := range shapes {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%v/%d", shape, seed), func(t *testing.T) {
				g, reduces := irtest.RandomRows(uint64(seed), shape)
				p, _, err := Compile(g, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Program().Kernels) != 1 {
					t.Fatalf("%d kernels, want 1 (reduces: %v):\n%s", len(p.Program().Kernels), reduces, p)
				}
				if k := p.Program().Kernels[0].Kind; reduces != (k == ir.KernelRows || k == ir.KernelReduce) {
					t.Errorf("a %v kernel, for a graph that reduces: %v:\n%s", k, reduces, p)
				}
				want := map[string][]float32{}
				vals := cpuref.Eval(g)
				for _, o := range g.Outputs {
					want[o.Name] = vals[o.ID]
				}
				if diff := cmp.Diff(bitsOf(want), bitsOf(cpuref.RunProgram(p.Program()))); diff != "" {
					t.Errorf("program differs from cpuref (-want +got):\n%s\n%s", diff, p)
				}
				checkUnfused(t, p.Program())
			})
		}
	}
}

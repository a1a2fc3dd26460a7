package gpucc_test

import (
	"slices"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestPadRandom: random pads (every mode, ranks 1 to 4, borders up to
// twice x's length) with a fused epilogue give cpuref's bits on every
// backend.
func TestPadRandom(t *testing.T) {
	checkRandom(t, func(seed int) (any, *ir.Graph) {
		c := irtest.RandomPad(uint64(seed))
		return c, c.Graph(uint64(5000 + seed))
	})
}

// TestPadEpilogueFuses: a pad and its elementwise epilogue are one kernel.
// A pad that only crops is a view (ir.Node.Crop): its epilogue reads x in
// place, and no pad kernel runs.
func TestPadEpilogueFuses(t *testing.T) {
	for _, c := range irtest.PadEdges() {
		if !slices.ContainsFunc(c.Pads, func(p int) bool { return p > 0 }) {
			p, _, err := passes.Compile(c.Graph(1), passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range p.Program().Kernels {
				if k.Kind != ir.KernelElementwise {
					t.Errorf("%s: a crop runs a %v kernel:\n%s", c.Name, k.Kind, p)
				}
			}
			continue
		}
		checkOneKernel(t, c.Name, c.Graph(1), ir.KernelPad, 2)
	}
}

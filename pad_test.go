package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
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
func TestPadEpilogueFuses(t *testing.T) {
	for _, c := range irtest.PadEdges() {
		checkOneKernel(t, c.Name, c.Graph(1), ir.KernelPad, 2)
	}
}

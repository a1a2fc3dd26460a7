package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestResizeRandom: random resizes (nearest and linear, every coordinate
// and nearest mode, sizes and float scales, up and down) with a fused
// epilogue give cpuref's bits on every backend.
func TestResizeRandom(t *testing.T) {
	checkRandom(t, func(seed int) (any, *ir.Graph) {
		c := irtest.RandomResize(uint64(seed))
		return c, c.Graph(uint64(4000 + seed))
	})
}

// TestResizeEpilogueFuses: a resize and its elementwise epilogue are one
// kernel.
func TestResizeEpilogueFuses(t *testing.T) {
	for _, c := range irtest.ResizeEdges() {
		checkOneKernel(t, c.Name, c.Graph(1), ir.KernelResize, 2)
	}
}

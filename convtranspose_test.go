package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestConvTransposeRandom: random transposed convolutions (sizes,
// strides, pads, dilations, output padding, groups, depthwise) with their
// fused bias, relu and residual epilogues give cpuref's bits on every
// backend.
func TestConvTransposeRandom(t *testing.T) {
	checkRandom(t, func(seed int) (any, *ir.Graph) {
		c := irtest.RandomConvTranspose(uint64(seed))
		return c, c.Graph(uint64(3000 + seed))
	})
}

// TestConvTransposeEpilogueFuses: a transposed convolution, its
// per-channel bias, relu and a residual add are one kernel.
func TestConvTransposeEpilogueFuses(t *testing.T) {
	for _, c := range irtest.ConvTransposeEdges() {
		checkOneKernel(t, c.Name, c.Graph(1), ir.KernelConvTranspose, 3)
	}
}

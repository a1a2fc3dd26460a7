package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestConvTransposeRandom: random transposed convolutions (sizes,
// strides, pads, dilations, output padding, groups, depthwise) with their
// fused bias, relu and residual epilogues give cpuref's bits on every
// backend.
func TestConvTransposeRandom(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 8
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				c := irtest.RandomConvTranspose(uint64(seed))
				g := c.Graph(uint64(3000 + seed))
				t.Run(itoa(seed), func(t *testing.T) {
					t.Logf("%+v", c)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

// TestConvTransposeEpilogueFuses: a transposed convolution, its
// per-channel bias, relu and a residual add are one kernel.
func TestConvTransposeEpilogueFuses(t *testing.T) {
	for _, c := range irtest.ConvTransposeEdges() {
		p, _, err := passes.Compile(c.Graph(1), passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kernels) != 1 || p.Kernels[0].Kind != ir.KernelConvTranspose || len(p.Kernels[0].Outputs) != 3 {
			t.Errorf("%s: want one conv_transpose kernel writing 3 outputs, got:\n%s", c.Name, p)
		}
	}
}

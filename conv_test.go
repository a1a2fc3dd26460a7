package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestConvRandom: random convolutions (sizes, strides, pads up to beyond
// the kernel, dilations, groups, depthwise) with their fused bias, relu
// and residual epilogues give cpuref's bits on every backend.
func TestConvRandom(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 8
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				c := irtest.RandomConv(uint64(seed))
				g := c.Graph(uint64(1000 + seed))
				t.Run(itoa(seed), func(t *testing.T) {
					t.Logf("%+v", c)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

// TestConvEpilogueFuses: a convolution, its per-channel bias, relu and a
// residual add are one kernel, as matmul's epilogues are.
func TestConvEpilogueFuses(t *testing.T) {
	for _, c := range irtest.ConvEdges() {
		p, _, err := passes.Compile(c.Graph(1), passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kernels) != 1 || p.Kernels[0].Kind != ir.KernelConv || len(p.Kernels[0].Outputs) != 3 {
			t.Errorf("%s: want one conv kernel writing 3 outputs, got:\n%s", c.Name, p)
		}
	}
}

// TestPoolRandom: random max poolings (with a fused epilogue), average
// poolings (the conv2d composite, with and without count_include_pad) and
// global average poolings give cpuref's bits on every backend.
func TestPoolRandom(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 6
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				c := irtest.RandomPool(uint64(seed))
				g := c.Graph(uint64(2000 + seed))
				t.Run(itoa(seed), func(t *testing.T) {
					t.Logf("%+v", c)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestResizeRandom: random resizes (nearest and linear, every coordinate
// and nearest mode, sizes and float scales, up and down) with a fused
// epilogue give cpuref's bits on every backend.
func TestResizeRandom(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 8
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				c := irtest.RandomResize(uint64(seed))
				g := c.Graph(uint64(4000 + seed))
				t.Run(itoa(seed), func(t *testing.T) {
					t.Logf("%+v", c)
					checkRun(t, rt, g)
				})
			}
		})
	}
}

// TestResizeEpilogueFuses: a resize and its elementwise epilogue are one
// kernel.
func TestResizeEpilogueFuses(t *testing.T) {
	for _, c := range irtest.ResizeEdges() {
		p, _, err := passes.Compile(c.Graph(1), passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kernels) != 1 || p.Kernels[0].Kind != ir.KernelResize || len(p.Kernels[0].Outputs) != 2 {
			t.Errorf("%s: want one resize kernel writing 2 outputs, got:\n%s", c.Name, p)
		}
	}
}
